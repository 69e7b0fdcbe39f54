import type { Command } from 'commander';
import type { OpenCliContext } from './context';
import { migrateLatest } from '../data/db';

export function registerMigrate(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('migrate')
    .description('apply the database migrations')
    .action(async () => {
      const ctx = await openCliContext({ migrate: false });
      try {
        const applied = await migrateLatest(ctx.db);
        process.stdout.write(applied.length ? `applied ${applied.join(', ')}\n` : 'already up to date\n');
      } finally {
        await ctx.close();
      }
    });
}
