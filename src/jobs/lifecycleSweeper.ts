import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { sweepLeads, SweepResult } from '../data/lifecycleSweep';
import { deleteExpiredIdempotencyKeys } from '../data/idempotency';
import { deleteEndedRequestCounters } from '../data/requestCounters';
import { deleteEndedLoginRecords } from '../data/loginRecords';
import { JOB_NAMES } from '../data/scheduledJobs';
import { startPeriodicJob } from './periodicJob';

/**
 * Sweeps every SWEEP_INTERVAL_MS (0 = off), once per interval across all API nodes and never
 * two at a time (src/jobs/periodicJob.ts). Returns the function that stops it.
 */
export function startLifecycleSweeper(db: Knex, settings: Settings, logger: Logger): () => void {
  return startPeriodicJob<SweepResult & { idempotencyKeysDeleted: number; countersDeleted: number }>(db, logger, {
    name: JOB_NAMES.lifecycleSweep,
    intervalMs: settings.SWEEP_INTERVAL_MS,
    async work() {
      const result = await sweepLeads(db, new Date(), settings.PLATFORM_TIMEZONE);
      const idempotencyKeysDeleted = await deleteExpiredIdempotencyKeys(db);
      // Request counters and failed-login windows that have ended (Postgres counting).
      const countersDeleted = (await deleteEndedRequestCounters(db, Date.now())) + (await deleteEndedLoginRecords(db));
      return { ...result, idempotencyKeysDeleted, countersDeleted };
    },
    report(result, log) {
      if (result.abandoned > 0 || result.expired > 0 || result.idempotencyKeysDeleted > 0 || result.countersDeleted > 0) {
        log.info(result, 'lead lifecycle sweep');
      }
    },
  });
}
