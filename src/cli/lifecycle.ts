import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { sweepLeads } from '../data/lifecycleSweep';
import { deleteExpiredIdempotencyKeys } from '../data/idempotency';
import { deleteEndedRequestCounters } from '../data/requestCounters';
import { deleteEndedLoginRecords } from '../data/loginRecords';
import { parseDateTime } from '../domain/datetime';

/** `lcm lifecycle sweep [--now DATETIME]`: the server's periodic sweep, run once on demand. */
export function registerLifecycle(program: Command, openCliContext: OpenCliContext): void {
  const lifecycle = program.command('lifecycle').description('lead lifecycle maintenance');
  lifecycle
    .command('sweep')
    .description('move leads past their campaign time limits: Unresolved → Abandoned, open leads → Expired')
    .option('--now <datetime>', 'sweep as of this time (ISO 8601; without an offset platform local time)')
    .action(async (options: { now?: string }) => {
      const ctx = await openCliContext();
      try {
        const zone = ctx.settings.PLATFORM_TIMEZONE;
        let now = new Date();
        if (options.now !== undefined) {
          try {
            now = parseDateTime(options.now, zone);
          } catch (err) {
            throw new CliError(`--now: ${(err as Error).message}`);
          }
        }
        const result = await sweepLeads(ctx.db, now, zone);
        const keys = await deleteExpiredIdempotencyKeys(ctx.db);
        // Counters end by the real clock, whatever --now says about leads.
        const counters = (await deleteEndedRequestCounters(ctx.db, Date.now())) + (await deleteEndedLoginRecords(ctx.db));
        process.stdout.write(
          `swept: ${result.abandoned} abandoned, ${result.expired} expired` +
            (keys > 0 ? `; ${keys} expired idempotency keys deleted` : '') +
            (counters > 0 ? `; ${counters} ended request and login counters deleted` : '') +
            '\n',
        );
      } finally {
        await ctx.close();
      }
    });
}
