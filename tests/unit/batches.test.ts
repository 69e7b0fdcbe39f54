import { batchesOf } from '../../src/streams/batches';

/** A source whose items the test hands over one at a time; it records how many were asked for. */
function controlledSource<T>() {
  const waiting: ((r: IteratorResult<T>) => void)[] = [];
  const ready: IteratorResult<T>[] = [];
  let asked = 0;
  let returned = false;
  const source: AsyncIterator<T> = {
    next() {
      asked++;
      const r = ready.shift();
      if (r) return Promise.resolve(r);
      return new Promise((resolve) => waiting.push(resolve));
    },
    return() {
      returned = true;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  const hand = (r: IteratorResult<T>) => {
    const w = waiting.shift();
    if (w) w(r);
    else ready.push(r);
  };
  return {
    source,
    send: (value: T) => hand({ done: false, value }),
    end: () => hand({ done: true, value: undefined }),
    asked: () => asked,
    returned: () => returned,
  };
}

describe('batchesOf', () => {
  it('when items keep coming, then they come in full batches and the rest at the end', async () => {
    const s = controlledSource<number>();
    for (let i = 1; i <= 7; i++) s.send(i);
    s.end();
    const batches: number[][] = [];
    for await (const batch of batchesOf(s.source, 3, 60_000)) batches.push(batch);
    expect(batches).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it('when the source goes quiet, then what it sent comes as a batch before the next item arrives, and that item starts the next batch', async () => {
    const s = controlledSource<string>();
    const batches = batchesOf(s.source, 100, 20);
    s.send('a');
    s.send('b');
    await expect(batches.next()).resolves.toEqual({ done: false, value: ['a', 'b'] });
    s.send('c');
    s.end();
    await expect(batches.next()).resolves.toEqual({ done: false, value: ['c'] });
    await expect(batches.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('when a batch is full, then nothing more is read until the next batch is asked for', async () => {
    const s = controlledSource<number>();
    for (let i = 1; i <= 5; i++) s.send(i);
    const batches = batchesOf(s.source, 2, 60_000);
    await batches.next();
    expect(s.asked()).toBe(2);
    await batches.next();
    expect(s.asked()).toBe(4);
  });

  it('when the consumer stops early, then the source is told to stop', async () => {
    const s = controlledSource<number>();
    s.send(1);
    s.send(2);
    const batches = batchesOf(s.source, 2, 60_000);
    await batches.next();
    await batches.return(undefined);
    expect(s.returned()).toBe(true);
  });

  it('when the source fails, then the consumer gets its error', async () => {
    const failing: AsyncIterator<number> = { next: () => Promise.reject(new Error('body broke')) };
    await expect(batchesOf(failing, 2, 10).next()).rejects.toThrow('body broke');
  });
});
