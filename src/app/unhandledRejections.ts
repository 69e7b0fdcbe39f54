import type { Logger } from '../config/logger';

/**
 * The last line of defence of a background process (the jobs process of `lcm serve`, `lcm hooks
 * work`, `lcm jobs work`): a promise a library rejects with nobody listening is logged instead
 * of ending the process (Node's default). The work it belonged to recovers on its own: the hook
 * delivery queue is started again when it stops (src/jobs/hookWorker.ts), periodic jobs run at
 * their next interval. Errors thrown synchronously still end the process, which is restarted.
 */
export function logUnhandledRejections(logger: Logger): void {
  if (process.listenerCount('unhandledRejection') > 0) return;
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'a promise was rejected with nobody listening; the process goes on');
  });
}
