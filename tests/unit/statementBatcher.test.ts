import { StatementBatcher } from '../../src/jobs/statementBatcher';

type Item = { key: number; value: string };

function recordingBatcher(fail?: (items: Item[]) => boolean) {
  const calls: Item[][] = [];
  let release: (() => void) | undefined;
  const batcher = new StatementBatcher<Item, string>(
    async (items) => {
      calls.push(items);
      // The first call is held open until the test releases it, like a slow statement.
      if (calls.length === 1) await new Promise<void>((r) => (release = r));
      if (fail?.(items)) throw new Error('statement failed');
      return items.map((i) => `${i.value}@${calls.length}`);
    },
    (i) => i.key,
  );
  return { batcher, calls, release: () => release?.() };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('statement batcher', () => {
  it('when requests arrive in the same turn, then they go out in one call and each gets its own answer', async () => {
    const { batcher, calls, release } = recordingBatcher();
    const answers = Promise.all([1, 2, 3].map((k) => batcher.add({ key: k, value: `v${k}` })));
    await tick();
    release();
    expect(await answers).toEqual(['v1@1', 'v2@1', 'v3@1']);
    expect(calls.map((c) => c.map((i) => i.key))).toEqual([[1, 2, 3]]);
  });

  it('when requests arrive while a call runs, then they wait for it and go out together in the next one', async () => {
    const { batcher, calls, release } = recordingBatcher();
    const first = batcher.add({ key: 1, value: 'a' });
    await tick();
    const later = [2, 3, 4].map((k) => batcher.add({ key: k, value: `v${k}` }));
    await tick();
    await tick();
    expect(calls).toHaveLength(1);
    release();
    expect(await first).toBe('a@1');
    expect(await Promise.all(later)).toEqual(['v2@2', 'v3@2', 'v4@2']);
    expect(calls.map((c) => c.map((i) => i.key))).toEqual([[1], [2, 3, 4]]);
  });

  it('when two requests share a key, then they never go out in the same call', async () => {
    const { batcher, calls, release } = recordingBatcher();
    const answers = Promise.all([
      batcher.add({ key: 7, value: 'x' }),
      batcher.add({ key: 7, value: 'y' }),
      batcher.add({ key: 8, value: 'z' }),
    ]);
    await tick();
    release();
    expect(await answers).toEqual(['x@1', 'y@2', 'z@1']);
    expect(calls.map((c) => c.map((i) => i.value))).toEqual([['x', 'z'], ['y']]);
  });

  it('when a call fails, then every request in it fails and the next call still runs', async () => {
    const { batcher, calls, release } = recordingBatcher((items) => items.some((i) => i.value === 'bad'));
    const a = batcher.add({ key: 1, value: 'bad' });
    const b = batcher.add({ key: 2, value: 'ok' });
    await tick();
    release();
    await expect(a).rejects.toThrow('statement failed');
    await expect(b).rejects.toThrow('statement failed');
    expect(await batcher.add({ key: 3, value: 'after' })).toBe('after@2');
    expect(calls).toHaveLength(2);
  });
});
