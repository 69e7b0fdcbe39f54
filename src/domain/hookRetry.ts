/**
 * When a failed hook delivery is tried again, when it is given up, and when a hook that keeps
 * failing is disabled (docs/decisions.md, "Hooks"). Pure: the caller passes the clock's time and
 * the random number, so tests can walk the whole schedule.
 */
export interface RetryPolicy {
  /** Delay before the first retry; each further retry doubles it. */
  baseMs: number;
  /** No single delay is longer. */
  maxDelayMs: number;
  /** A delivery is retried for this long after its first attempt, then it has failed. */
  windowMs: number;
  /** A hook whose every attempt failed for this long is disabled. */
  disableAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  baseMs: 30_000,
  maxDelayMs: 6 * 3600_000,
  windowMs: 3 * 86400_000,
  disableAfterMs: 5 * 86400_000,
};

/**
 * The delay after the `failures`-th failed attempt (1 = the first): exponential, capped, with
 * "equal jitter" (half of the step fixed, half random), so retries of many deliveries that failed
 * together (a receiver that was down) spread out instead of arriving at once.
 */
export function retryDelayMs(failures: number, policy: RetryPolicy, random: number): number {
  const step = Math.min(policy.maxDelayMs, policy.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.round(step / 2 + (step / 2) * Math.min(Math.max(random, 0), 1));
}

/**
 * The time of the next attempt after a failed one, or undefined when the retry window (counted
 * from the first attempt) would be passed: the delivery has then failed for good.
 */
export function nextAttemptTime(
  policy: RetryPolicy,
  attempt: { failures: number; firstAttemptTime: Date; now: Date },
  random: number,
): Date | undefined {
  const next = attempt.now.getTime() + retryDelayMs(attempt.failures, policy, random);
  if (next > attempt.firstAttemptTime.getTime() + policy.windowMs) return undefined;
  return new Date(next);
}

/** Whether a hook failing every attempt since `failingSince` is to be disabled at `now`. */
export function shouldDisableHook(policy: RetryPolicy, failingSince: Date, now: Date): boolean {
  return now.getTime() - failingSince.getTime() >= policy.disableAfterMs;
}
