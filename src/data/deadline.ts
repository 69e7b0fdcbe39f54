/**
 * What `work` settles with, or a rejection with `timedOut()` once `ms` have passed without it
 * settling; the timer is cleared as soon as it settles. The work itself goes on: nothing here can
 * stop it (a query or a Redis command given up on may still run).
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timedOut: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timedOut()), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
