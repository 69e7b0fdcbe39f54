import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { describeMaintenance, maintainAsConfigured } from '../data/partitions';
import { JOB_NAMES, runScheduledJob } from '../data/scheduledJobs';
import { parseDateTime } from '../domain/datetime';

/**
 * `lcm maintain [--now DATETIME]`: the server's partition maintenance run once on demand:
 * month partitions up to PARTITION_MONTHS_AHEAD, rows waiting in default partitions moved
 * into months of their own, and RETENTION_MONTHS applied. It waits for a run on a server to
 * finish rather than running beside it.
 */
export function registerMaintain(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('maintain')
    .description('partition maintenance: create month partitions ahead, move rows out of default partitions, apply RETENTION_MONTHS')
    .option('--now <datetime>', 'maintain as of this time (ISO 8601; without an offset platform local time)')
    .action(async (options: { now?: string }) => {
      const ctx = await openCliContext();
      try {
        let now = new Date();
        if (options.now !== undefined) {
          try {
            now = parseDateTime(options.now, ctx.settings.PLATFORM_TIMEZONE);
          } catch (err) {
            throw new CliError(`--now: ${(err as Error).message}`);
          }
        }
        const outcome = await runScheduledJob(ctx.db, JOB_NAMES.partitionMaintenance, { intervalMs: 0, force: true, wait: true }, () =>
          maintainAsConfigured(ctx.db, ctx.settings, now),
        );
        if (outcome.ran) process.stdout.write(`partitions: ${describeMaintenance(outcome.result)}\n`);
      } finally {
        await ctx.close();
      }
    });
}
