import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { pruneDeliveryJobs } from '../data/jobQueue';
import { JOB_NAMES } from '../data/scheduledJobs';
import { startPeriodicJob } from './periodicJob';

/** Jobs removed per statement: a large backlog of finished jobs goes in steps, none holding locks for long. */
const BATCH = 5_000;

/**
 * Every HOOKS_PRUNE_INTERVAL_MS (0 = off), once across all nodes: the job queue keeps a job that
 * used up its attempts for ever, and a job whose delivery is gone or finished runs only to find
 * nothing to do. Both are removed (src/data/jobQueue.ts, pruneDeliveryJobs).
 */
export function startHookQueuePruning(db: Knex, settings: Settings, logger: Logger): () => void {
  return startPeriodicJob<{ removed: number }>(db, logger, {
    name: JOB_NAMES.hookQueuePruning,
    intervalMs: settings.HOOKS_PRUNE_INTERVAL_MS,
    async work() {
      let removed = 0;
      for (;;) {
        const n = await pruneDeliveryJobs(db, BATCH);
        removed += n;
        if (n < BATCH) return { removed };
      }
    },
    report(result, log) {
      if (result.removed > 0) log.info(result, 'hook queue pruning: finished jobs removed');
    },
  });
}
