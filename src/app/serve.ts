import path from 'node:path';
import v8 from 'node:v8';
import type { Command } from 'commander';
import { openCliContext } from './cliContext';
import { createLogger } from '../config/logger';
import { migrateLatest } from '../data/db';
import { takeOverShutdownSignals } from './embeddedPostgres';
import { composeApp } from './compose';
import { listen } from './server';
import { seedDemo, DEMO_CREDENTIALS } from '../ingest/demoData';
import { startLifecycleSweeper } from '../jobs/lifecycleSweeper';
import { startPartitionMaintenance } from '../jobs/partitionMaintenance';
import { startHookWorkers } from './hookWorkers';

/** `lcm serve` (what `npm start` runs): migrate, seed the embedded default once, listen. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the API (embedded Postgres with demo data when DATABASE_URL is unset)')
    .action(async () => {
      const ctx = await openCliContext({ migrate: false, command: 'serve', server: true });
      // V8 lets the heap grow up to about four times what was live before its next full
      // collection; a server streaming large bodies reaches that quickly, as memory that looks
      // like growth. A smaller factor keeps it near what is live, at a cost not measured
      // (docs/decisions.md, Bulk import).
      if (ctx.settings.HEAP_GROWING_PERCENT > 0) v8.setFlagsFromString(`--heap-growing-percent=${ctx.settings.HEAP_GROWING_PERCENT}`);
      takeOverShutdownSignals();
      // Listening from the start: a signal during start-up stops the server once it is up.
      const stopSignal = new Promise<string>((resolve) => {
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
      });
      // Whatever started is stopped again, in reverse order, also when start-up fails, so a
      // failed start ends the process with its reason instead of leaving it hanging.
      const stops: (() => unknown)[] = [() => ctx.close()];
      try {
        const logger = createLogger(ctx.settings.LOG_LEVEL);
        await migrateLatest(ctx.db);
        let demoNote: string | undefined;
        if (ctx.embedded) {
          const hasAccounts = await ctx.db('accounts').first<{ id: number } | undefined>('id');
          if (!hasAccounts) await seedDemo(ctx.db, ctx.settings.PLATFORM_TIMEZONE);
          demoNote = DEMO_CREDENTIALS.map((c) => `  ${c.username} / ${c.password}${c.note ? `  (${c.note})` : ''}`).join('\n');
        }
        const composed = await composeApp({ settings: ctx.settings, db: ctx.db, logger });
        stops.push(() => composed.close());
        if (ctx.settings.HOOKS_WORKER) {
          const hookWorkers = await startHookWorkers(ctx, composed.app.metrics.registry);
          stops.push(() => hookWorkers.stop());
        }
        const running = await listen(composed.app.express, ctx.settings);
        stops.push(() => running.close());
        if (running.accepting.reason)
          logger.warn(
            { handles: running.accepting.handles },
            `accepting through fewer handles than ACCEPT_HANDLES: ${running.accepting.reason}`,
          );
        stops.push(startLifecycleSweeper(ctx.db, ctx.settings, logger));
        stops.push(startPartitionMaintenance(ctx.db, ctx.settings, logger));

        process.stdout.write(`lead-call-api listening on ${running.url}/api\n`);
        process.stdout.write(`${describeCode()}\n`);
        if (ctx.embedded) {
          process.stdout.write(
            `embedded Postgres in ${ctx.settings.EMBEDDED_DATA_DIR}; request counting in process${ctx.settings.REDIS_URL ? ' and Redis' : ''}\n`,
          );
          process.stdout.write(`demo credentials (HTTP Basic):\n${demoNote}\n`);
          process.stdout.write(`try: curl -u demo:demo-password ${running.url}/api/myaccount\n`);
        }

        const signal = await stopSignal;
        logger.info({ signal }, 'shutting down: no new connections, in-flight responses may finish');
      } finally {
        for (const stop of stops.reverse()) await stop();
      }
    });
}

/** Which code runs: the compiled build (`npm start`, the image) or the sources through tsx (development). */
function describeCode(): string {
  return __filename.endsWith('.js')
    ? `running the compiled build in ${path.resolve(__dirname, '../..')}`
    : 'running the TypeScript sources through tsx';
}
