/**
 * Waiting in tests for something that happens asynchronously (a notification, a delivery, a
 * restart): check, pause, check again, until it holds or a deadline passes. A wait that runs out
 * rejects, and that rejection fails the test: `${what}: not within ${timeoutMs} ms`.
 */
export interface UntilOptions {
  /** How long to keep checking: the check runs at least once, and again until this has passed. */
  timeoutMs: number;
  /** The pause after a check that did not hold, 50 ms unless given. */
  intervalMs?: number;
  /**
   * A check that rejects or throws counts as "not yet" (a server being restarted refuses
   * connections); the error of a wait that ran out names the last failure. Without it, the
   * check's error ends the wait at once: a check can throw to say that
   * waiting longer is pointless (the process it waits for has exited).
   */
  ignoreErrors?: boolean;
  /** Added on a line of its own to the error of a wait that ran out (a child process's output). */
  detail?: () => string;
}

/** Waits until `check` holds; resolves with the milliseconds it took. */
export async function until(what: string, check: () => boolean | PromiseLike<boolean>, options: UntilOptions): Promise<number> {
  const started = Date.now();
  await poll(what, check, (held) => held, options, false);
  return Date.now() - started;
}

/**
 * Waits until `ok` holds for what `get` answers, and resolves with that value. The error of a wait
 * that ran out shows the last value (as JSON).
 */
export function untilValue<T>(what: string, get: () => T | PromiseLike<T>, ok: (value: T) => boolean, options: UntilOptions): Promise<T> {
  return poll(what, get, ok, options, true);
}

async function poll<T>(
  what: string,
  get: () => T | PromiseLike<T>,
  ok: (value: T) => boolean,
  { timeoutMs, intervalMs = 50, ignoreErrors = false, detail }: UntilOptions,
  showValue: boolean,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  /** What the last check saw: described only for the error, once the wait has run out. */
  let last: { value: T } | { failure: unknown } | undefined;
  for (;;) {
    let got: { value: T } | undefined;
    try {
      got = { value: await get() };
    } catch (err) {
      if (!ignoreErrors) throw err;
      last = { failure: err };
    }
    if (got) {
      if (ok(got.value)) return got.value;
      last = got;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${lastSeen(last, showValue)}${detail ? `\n${detail()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function lastSeen<T>(last: { value: T } | { failure: unknown } | undefined, showValue: boolean): string {
  if (last === undefined) return '';
  if ('failure' in last) return `; last check failed: ${last.failure instanceof Error ? last.failure.message : String(last.failure)}`;
  return showValue ? `; last value ${JSON.stringify(last.value)}` : '';
}

/**
 * Waits until what `get` answers has stopped changing: the same value on `reads` checks in a
 * row, `intervalMs` apart (a server that stops work on its own, whose stored count settles).
 * Resolves with that value; a value still changing at the deadline fails the wait.
 */
export async function untilSettled<T>(what: string, get: () => T | PromiseLike<T>, options: UntilOptions & { reads: number }): Promise<T> {
  let last: { value: T } | undefined;
  let same = 0;
  const { value } = await untilValue(
    what,
    async () => {
      const value = await get();
      same = last !== undefined && last.value === value ? same + 1 : 1;
      last = { value };
      return { value, same };
    },
    (seen) => seen.same >= options.reads,
    options,
  );
  return value;
}
