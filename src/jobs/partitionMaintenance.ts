import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { maintainAsConfigured, MaintenanceReport } from '../data/partitions';
import { JOB_NAMES } from '../data/scheduledJobs';
import { startPeriodicJob } from './periodicJob';

/**
 * Partition maintenance in the server every MAINTENANCE_INTERVAL_MS (0 = off) and once at
 * start, once per interval across all API nodes (src/jobs/periodicJob.ts).
 */
export function startPartitionMaintenance(db: Knex, settings: Settings, logger: Logger): () => void {
  return startPeriodicJob<MaintenanceReport>(db, logger, {
    name: JOB_NAMES.partitionMaintenance,
    intervalMs: settings.MAINTENANCE_INTERVAL_MS,
    runAtStart: true,
    work: () => maintainAsConfigured(db, settings),
    report(report, log) {
      if (report.created.length || report.dropped.length || report.indexed.length || report.postponed.length)
        log.info(report, 'partition maintenance');
    },
  });
}
