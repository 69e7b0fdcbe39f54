import type { Command } from 'commander';
import type { OpenCliContext } from './context';
import { DEMO_CREDENTIALS, seedDemo } from '../ingest/demoData';

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
      } finally {
        await ctx.close();
      }
    });
}
