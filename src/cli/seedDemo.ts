import type { Command } from 'commander';
import type { OpenCliContext } from './context';
import { DEMO_CREDENTIALS, seedDemo } from '../ingest/demoData';
import { notifyAccountChanged } from '../data/accountChanges';
import { redisTarget } from '../config/settings';

export function registerSeedDemo(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('seed-demo')
    .description('load the small demo data set (org units, users, campaigns, leads, calls, accounts)')
    .action(async () => {
      const ctx = await openCliContext();
      try {
        const summary = await seedDemo(ctx.db, ctx.settings.PLATFORM_TIMEZONE);
        const parts = Object.entries(summary.counts).map(([type, n]) => `${n} ${type}`);
        process.stdout.write(`loaded the demo data set: ${parts.join(', ')}\n`);
        for (const c of DEMO_CREDENTIALS) process.stdout.write(`  account ${c.username} / ${c.password}: ${c.note}\n`);
        const ids = await ctx
          .db('accounts')
          .whereIn(
            'username',
            DEMO_CREDENTIALS.map((c) => c.username),
          )
          .pluck<number[]>('id');
        try {
          await notifyAccountChanged(redisTarget(ctx.settings), ids);
        } catch (err) {
          process.stderr.write(`lcm: warning: could not announce the account changes on Redis: ${(err as Error).message}\n`);
        }
      } finally {
        await ctx.close();
      }
    });
}
