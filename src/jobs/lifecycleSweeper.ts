import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { sweepLeads } from '../data/lifecycleSweep';
import { deleteExpiredIdempotencyKeys } from '../data/idempotency';

/**
 * Runs a sweep every SWEEP_INTERVAL_MS in the server (0 = off); a sweep never overlaps the
 * previous one. Returns the function that stops it.
 */
export function startLifecycleSweeper(db: Knex, settings: Settings, logger: Logger): () => void {
  const interval = settings.SWEEP_INTERVAL_MS;
  if (interval <= 0) return () => undefined;
  let running = false;
  let stopped = false;
  const tick = async (): Promise<void> => {
    if (running || stopped) return;
    running = true;
    try {
      const result = await sweepLeads(db, new Date(), settings.PLATFORM_TIMEZONE);
      const keys = await deleteExpiredIdempotencyKeys(db);
      if (result.abandoned > 0 || result.expired > 0 || keys > 0) {
        logger.info({ ...result, idempotencyKeysDeleted: keys }, 'lead lifecycle sweep');
      }
    } catch (err) {
      if (!stopped) logger.warn({ err }, 'lead lifecycle sweep failed; it runs again at the next interval');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), interval);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
