import { until, untilValue } from '../harness/until';

describe('until', () => {
  it('when the check turns true, then it resolves with the time it waited', async () => {
    let checks = 0;
    const waited = await until('the third check', () => ++checks >= 3, { timeoutMs: 5000, intervalMs: 10 });
    expect(checks).toBe(3);
    expect(waited).toBeGreaterThanOrEqual(0);
  });

  it('when the check stays false past the deadline, then it rejects naming what it waited for, with the detail', async () => {
    let checks = 0;
    const waiting = until(
      'the light to turn green',
      () => {
        checks += 1;
        return Promise.resolve(false);
      },
      { timeoutMs: 60, intervalMs: 10, detail: () => 'still red' },
    );
    await expect(waiting).rejects.toThrow(new Error('the light to turn green: not within 60 ms\nstill red'));
    expect(checks).toBeGreaterThan(1);
  });

  it('when the check rejects, then the wait ends with that error, unless errors are to be ignored', async () => {
    let checks = 0;
    const flaky = () => (++checks < 3 ? Promise.reject(new Error('connection refused')) : Promise.resolve(true));
    await expect(until('a flaky check', flaky, { timeoutMs: 5000, intervalMs: 10 })).rejects.toThrow('connection refused');
    expect(checks).toBe(1);

    checks = 0;
    await expect(until('a flaky check', flaky, { timeoutMs: 5000, intervalMs: 10, ignoreErrors: true })).resolves.toEqual(
      expect.any(Number),
    );
    expect(checks).toBe(3);
  });

  it('when ignored errors last past the deadline, then the error names the last one', async () => {
    const down = () => Promise.reject(new Error('connection refused'));
    await expect(until('the server', down, { timeoutMs: 30, intervalMs: 10, ignoreErrors: true })).rejects.toThrow(
      new Error('the server: not within 30 ms; last check failed: connection refused'),
    );
  });
});

describe('untilValue', () => {
  it('when a value satisfies the predicate, then it resolves with that value', async () => {
    let n = 0;
    await expect(
      untilValue(
        'n to reach 2',
        () => Promise.resolve(++n),
        (v) => v >= 2,
        { timeoutMs: 5000, intervalMs: 10 },
      ),
    ).resolves.toBe(2);
  });

  it('when no value satisfies it before the deadline, then it rejects with the last value', async () => {
    await expect(
      untilValue(
        'a delivery',
        () => ({ status: 'pending' }),
        (v) => v.status === 'delivered',
        { timeoutMs: 30, intervalMs: 10 },
      ),
    ).rejects.toThrow(new Error('a delivery: not within 30 ms; last value {"status":"pending"}'));
  });
});
