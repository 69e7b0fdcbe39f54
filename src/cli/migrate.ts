import type { Command } from 'commander';
import { openCliContext } from './context';
import { migrateLatest } from '../data/db';
import type { SetExit } from './main';

export function registerMigrate(program: Command, _setExit: SetExit): void {
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
