import type { Registry } from 'prom-client';
import type { CliContext } from '../cli/context';
import type { Logger } from '../config/logger';
import { startLifecycleSweeper } from '../jobs/lifecycleSweeper';
import { startPartitionMaintenance } from '../jobs/partitionMaintenance';
import { startHookWorker } from '../jobs/hookWorker';
import { startHookQueuePruning } from '../jobs/hookQueuePruning';
import { startEventRetention } from '../jobs/eventRetention';
import { startEventSequencing } from '../jobs/eventSequencing';

/**
 * The background work of a deployment, as the settings switch it on: hook delivery workers
 * (HOOKS_WORKER), the pruning of finished hook queue jobs (HOOKS_PRUNE_INTERVAL_MS, also without
 * workers here: they may run as `lcm hooks work` elsewhere), the lead lifecycle sweep
 * (SWEEP_INTERVAL_MS), partition maintenance (MAINTENANCE_INTERVAL_MS), the removal of old live
 * events (EVENTS_PRUNE_INTERVAL_MS) and the numbering of committed live events. Each coordinates
 * through Postgres, so any number of processes on any number of nodes may run it (`lcm serve`'s
 * jobs process, `lcm jobs work`).
 */
export async function startBackgroundWork(
  ctx: Pick<CliContext, 'db' | 'settings'>,
  logger: Logger,
  registry?: Registry,
): Promise<{ stop(): Promise<void> }> {
  const stops: (() => unknown)[] = [];
  if (ctx.settings.HOOKS_WORKER) {
    const hooks = await startHookWorker({ db: ctx.db, settings: ctx.settings, logger, ...(registry ? { registry } : {}) });
    stops.push(() => hooks.stop());
  }
  stops.push(startHookQueuePruning(ctx.db, ctx.settings, logger));
  stops.push(startLifecycleSweeper(ctx.db, ctx.settings, logger));
  stops.push(startPartitionMaintenance(ctx.db, ctx.settings, logger));
  stops.push(startEventRetention(ctx.db, ctx.settings, logger));
  stops.push(startEventSequencing(ctx.db, logger));
  return {
    async stop() {
      for (const stop of stops.reverse()) await stop();
    },
  };
}
