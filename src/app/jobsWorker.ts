import { Registry } from 'prom-client';
import { openCliContext } from './cliContext';
import { createLogger } from '../config/logger';
import type { Settings } from '../config/settings';
import { offerMetrics } from './clusterMetrics';
import { tellSupervisor } from './workerMessages';
import { whenAskedToStop } from './stopRequest';
import { reasonOf } from './reasons';
import { closeAll } from './httpWorker';
import { startBackgroundWork } from './backgroundWork';
import { logUnhandledRejections } from './unhandledRejections';

/**
 * Whether `lcm serve` runs a jobs process: some background work is switched on. Event retention
 * and hook queue pruning count: nothing else removes old events or finished queue jobs
 * (src/app/backgroundWork.ts).
 */
export function backgroundWorkEnabled(
  settings: Pick<
    Settings,
    'HOOKS_WORKER' | 'SWEEP_INTERVAL_MS' | 'MAINTENANCE_INTERVAL_MS' | 'EVENTS_PRUNE_INTERVAL_MS' | 'HOOKS_PRUNE_INTERVAL_MS'
  >,
): boolean {
  return (
    settings.HOOKS_WORKER ||
    settings.SWEEP_INTERVAL_MS > 0 ||
    settings.MAINTENANCE_INTERVAL_MS > 0 ||
    settings.EVENTS_PRUNE_INTERVAL_MS > 0 ||
    settings.HOOKS_PRUNE_INTERVAL_MS > 0
  );
}

/**
 * The jobs process of `lcm serve`: hook delivery, the lead lifecycle sweep and partition
 * maintenance, beside the HTTP workers so their work never holds up a request. Its figures
 * (hook deliveries) join the metrics scrape.
 */
export async function runJobsWorker(): Promise<void> {
  const stop = whenAskedToStop();
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const ctx = await openCliContext({ migrate: false, command: 'serve' });
    closers.push(() => ctx.close());
    const registry = new Registry();
    offerMetrics(registry);
    const logger = createLogger(ctx.settings.LOG_LEVEL);
    logUnhandledRejections(logger);
    const work = await startBackgroundWork(ctx, logger, registry);
    closers.push(() => work.stop());
    tellSupervisor({ type: 'ready' });
  } catch (err) {
    tellSupervisor({ type: 'failed', reason: reasonOf(err) });
    await closeAll(closers);
    process.exit(1);
  }
  await stop;
  await closeAll(closers);
  process.exit(0);
}
