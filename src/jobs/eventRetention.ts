import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { pruneLiveEvents, PruneResult } from '../data/liveEvents';
import { JOB_NAMES } from '../data/scheduledJobs';
import { startPeriodicJob } from './periodicJob';

/**
 * Removes live events older than EVENTS_RETENTION every EVENTS_PRUNE_INTERVAL_MS (0 = off), once
 * per interval across all nodes (src/jobs/periodicJob.ts). Events whose hook deliveries are still
 * pending stay until those finish (src/data/liveEvents.ts).
 */
export function startEventRetention(db: Knex, settings: Settings, logger: Logger): () => void {
  return startPeriodicJob<PruneResult>(db, logger, {
    name: JOB_NAMES.eventRetention,
    intervalMs: settings.EVENTS_PRUNE_INTERVAL_MS,
    work: () => pruneLiveEvents(db, new Date(Date.now() - settings.EVENTS_RETENTION)),
    report(result, log) {
      if (result.events > 0 || result.positions > 0) log.info(result, 'old live events removed');
    },
  });
}
