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
      const ctx = await openCliContext({ migrate: false });
      takeOverShutdownSignals();
      const logger = createLogger(ctx.settings.LOG_LEVEL);
      await migrateLatest(ctx.db);
      let demoNote: string | undefined;
      if (ctx.embedded) {
        const hasAccounts = await ctx.db('accounts').first('id');
        if (!hasAccounts) await seedDemo(ctx.db, ctx.settings.PLATFORM_TIMEZONE);
        demoNote = DEMO_CREDENTIALS.map((c) =>
          `  ${c.username} / ${c.password}${c.note ? `  (${c.note})` : ''}`).join('\n');
      }
      const composed = await composeApp({ settings: ctx.settings, db: ctx.db, logger });
      const running = await listen(composed.app.express, ctx.settings);
      const stopSweeper = startLifecycleSweeper(ctx.db, ctx.settings, logger);
      const stopMaintenance = startPartitionMaintenance(ctx.db, ctx.settings, logger);
      const hookWorkers = ctx.settings.HOOKS_WORKER ? await startHookWorkers(ctx, composed.app.metrics.registry) : undefined;

      process.stdout.write(`lead-call-api listening on ${running.url}/api\n`);
      if (ctx.embedded) {
        process.stdout.write(`embedded Postgres in ${ctx.settings.EMBEDDED_DATA_DIR}; request counting in process${ctx.settings.REDIS_URL ? ' and Redis' : ''}\n`);
        process.stdout.write(`demo credentials (HTTP Basic):\n${demoNote}\n`);
        process.stdout.write(`try: curl -u demo:demo-password ${running.url}/api/myaccount\n`);
      }

      await new Promise<void>((resolve) => {
        const shutdown = (signal: string) => {
          logger.info({ signal }, 'shutting down: no new connections, in-flight responses may finish');
          resolve();
        };
        process.once('SIGTERM', () => shutdown('SIGTERM'));
        process.once('SIGINT', () => shutdown('SIGINT'));
      });
      stopSweeper();
      stopMaintenance();
      await running.close();
      await hookWorkers?.stop();
      await composed.close();
      await ctx.close();
    });
}
