import type { Command } from 'commander';
import type { OpenCliContext } from './context';
import { migrateLatest } from '../data/db';
import { describeMaintenance, ensurePartitionsAhead } from '../data/partitions';

export function registerMigrate(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('migrate')
    .description('apply the database migrations and create the month partitions ahead')
    .action(async () => {
      const ctx = await openCliContext({ migrate: false });
      try {
        const applied = await migrateLatest(ctx.db);
        process.stdout.write(applied.length ? `applied ${applied.join(', ')}\n` : 'already up to date\n');
        // Month partitions ahead, so a server that never runs maintenance still has next month's.
        process.stdout.write(`partitions: ${describeMaintenance(await ensurePartitionsAhead(ctx.db, ctx.settings))}\n`);
      } finally {
        await ctx.close();
      }
    });
}
