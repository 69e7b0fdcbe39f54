import { BoundedWork, BoundedWorkFull } from '../../src/streams/boundedWork';

describe('BoundedWork', () => {
  it('when more tasks come than may run, then they wait their turn, and past the queue they are refused at once', async () => {
    const work = new BoundedWork(2, 1);
    let running = 0;
    let most = 0;
    const gates: (() => void)[] = [];
    const task = () =>
      work.run(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return 'done';
      });
    const a = task();
    const b = task();
    const c = task(); // waits
    await expect(task()).rejects.toBeInstanceOf(BoundedWorkFull);
    await new Promise((r) => setImmediate(r));
    expect(gates).toHaveLength(2);
    gates.shift()!();
    await a;
    await new Promise((r) => setImmediate(r));
    expect(gates).toHaveLength(2); // c started in a's slot
    gates.splice(0).forEach((g) => g());
    await expect(Promise.all([b, c])).resolves.toEqual(['done', 'done']);
    expect(most).toBe(2);
  });

  it('when a task fails, then its slot is given back', async () => {
    const work = new BoundedWork(1, 0);
    await expect(work.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(work.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });

  it('when low-priority tasks flood in, then they hold at most all but one slot and normal tasks go before them', async () => {
    const work = new BoundedWork(2, 10);
    const order: string[] = [];
    const gates: (() => void)[] = [];
    const task = (name: string, priority: 'normal' | 'low') =>
      work.run(async () => {
        order.push(name);
        await new Promise<void>((r) => gates.push(r));
      }, priority);
    const lows = [task('low1', 'low'), task('low2', 'low'), task('low3', 'low')];
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['low1']); // one slot stays free for a normal task
    const normal = task('normal', 'normal');
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['low1', 'normal']);
    const normal2 = task('normal2', 'normal');
    gates.shift()!(); // low1 ends: the waiting normal task goes before low2
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['low1', 'normal', 'normal2']);
    while (order.length < 5 || gates.length > 0) {
      gates.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all([...lows, normal, normal2]);
    expect(order).toEqual(['low1', 'normal', 'normal2', 'low2', 'low3']);
  });
});

describe("BoundedWork without a bound on its queue (the hook workers' failed-attempt writes)", () => {
  it('when more tasks than the limit are given, then at most the limit run at once and all finish', async () => {
    const limiter = new BoundedWork(2, Number.POSITIVE_INFINITY);
    let running = 0;
    let most = 0;
    const task = async (i: number) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 5));
      running -= 1;
      return i;
    };
    expect(await Promise.all([1, 2, 3, 4, 5].map((i) => limiter.run(() => task(i))))).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });

  it('when a task fails, then its turn passes to the next one', async () => {
    const limiter = new BoundedWork(1, Number.POSITIVE_INFINITY);
    const failed = limiter.run(() => Promise.reject(new Error('no')));
    const next = limiter.run(() => Promise.resolve('yes'));
    await expect(failed).rejects.toThrow('no');
    expect(await next).toBe('yes');
  });
});

describe('BoundedWork priorities', () => {
  it('when high, normal and low tasks wait, then each freed slot goes to a high one first, then normal, then low', async () => {
    const work = new BoundedWork(1, 10);
    const order: string[] = [];
    const gates: (() => void)[] = [];
    const task = (name: string, priority: 'high' | 'normal' | 'low') =>
      work.run(async () => {
        order.push(name);
        await new Promise<void>((r) => gates.push(r));
      }, priority);
    const tasks = [task('first', 'normal'), task('low', 'low'), task('normal', 'normal'), task('high1', 'high'), task('high2', 'high')];
    while (order.length < 5 || gates.length > 0) {
      await new Promise((r) => setImmediate(r));
      gates.shift()?.();
    }
    await Promise.all(tasks);
    expect(order).toEqual(['first', 'high1', 'high2', 'normal', 'low']);
  });

  it('when a high task comes while the slots are free, then it starts at once even with low tasks holding their share', async () => {
    const work = new BoundedWork(2, 10);
    const started: string[] = [];
    const gates: (() => void)[] = [];
    const task = (name: string, priority: 'high' | 'low') =>
      work.run(async () => {
        started.push(name);
        await new Promise<void>((r) => gates.push(r));
      }, priority);
    const lows = [task('low1', 'low'), task('low2', 'low')];
    await new Promise((r) => setImmediate(r));
    const high = task('high', 'high');
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['low1', 'high']);
    while (gates.length > 0 || started.length < 3) {
      gates.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all([...lows, high]);
  });
});
