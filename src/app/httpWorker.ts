import v8 from 'node:v8';
import { openCliContext } from './cliContext';
import { createLogger } from '../config/logger';
import { composeApp } from './compose';
import { listen } from './server';
import { clusterMetricsSource } from './clusterMetrics';
import { tellSupervisor } from './workerMessages';
import { whenAskedToStop } from './stopRequest';
import { reasonOf } from './reasons';

/**
 * One HTTP worker of `lcm serve`: the app on listening sockets of its own on the shared port
 * (LISTEN_SOCKETS, SO_REUSEPORT), until asked to stop; then event streams end at once and
 * in-flight responses finish within SHUTDOWN_GRACE_MS.
 */
export async function runHttpWorker(): Promise<void> {
  const stop = whenAskedToStop();
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const ctx = await openCliContext({ migrate: false, command: 'serve' });
    closers.push(() => ctx.close());
    // V8 lets the heap grow up to about four times what was live before its next full
    // collection; a server streaming large bodies reaches that quickly, as memory that looks
    // like growth. A smaller factor keeps it near what is live (docs/decisions.md, Bulk import).
    if (ctx.settings.HEAP_GROWING_PERCENT > 0) v8.setFlagsFromString(`--heap-growing-percent=${ctx.settings.HEAP_GROWING_PERCENT}`);
    const logger = createLogger(ctx.settings.LOG_LEVEL);
    const composed = await composeApp({ settings: ctx.settings, db: ctx.db, logger });
    closers.push(() => composed.close());
    composed.app.metrics.gatherFrom(clusterMetricsSource(composed.app.metrics.registry));
    const running = await listen(composed.app.express, ctx.settings, { sockets: ctx.settings.LISTEN_SOCKETS });
    closers.push(() => running.close());
    // First on stopping: event streams never end by themselves, so they are ended at once (their
    // clients reconnect to another worker and resume) instead of holding the close for the grace period.
    closers.push(() => composed.events.close());
    tellSupervisor({ type: 'listening', port: running.port });
  } catch (err) {
    tellSupervisor({ type: 'failed', reason: reasonOf(err) });
    await closeAll(closers);
    process.exit(1);
  }
  await stop;
  await closeAll(closers);
  process.exit(0);
}

/** Closes in reverse order; one that fails does not keep the others open. */
export async function closeAll(closers: (() => Promise<unknown>)[]): Promise<void> {
  for (const close of closers.reverse()) await close().catch(() => undefined);
}
