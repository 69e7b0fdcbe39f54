import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { parseDateTime } from '../domain/datetime';
import { formatDateTime } from '../domain/datetime';
import type { DoNotCallEntry } from '../domain/doNotCall';
import { openDoNotCallCursor, DoNotCallList } from '../data/doNotCallRepository';
import { projectScope } from '../data/projectScope';
import { type DoNotCallInputError, DoNotCallRefused, listNumbers, unlistNumber } from '../ingest/doNotCall';

/**
 * `lcm dnc add|remove|list [--global]` (docs/decisions.md, Do-not-call). `--global` keeps the
 * global list (leads move to GlobalDoNotCall), which the API cannot reach; without it the
 * customer's list, every project in reach.
 */
export function registerDoNotCall(program: Command, openCliContext: OpenCliContext): void {
  const dnc = program.command('dnc').description('keep the do-not-call lists');
  const listOf = (global: boolean | undefined): DoNotCallList =>
    global ? { global: true } : { global: false, scope: projectScope(['*']) };

  dnc
    .command('add')
    .description('list numbers; open leads with them move to DoNotCall (GlobalDoNotCall with --global) at once')
    .argument('<numbers...>', 'phone numbers in any usual notation (without a country code: DEFAULT_PHONE_REGION)')
    .option('--global', 'the global list')
    .option('--project <project>', "the customer list's entry for one project (name or unique id)")
    .option('--note <text>', 'why the numbers are listed')
    .option('--expires <datetime>', 'when the entries stop applying (ISO 8601; without an offset platform local time)')
    .action(async (numbers: string[], o: { global?: boolean; project?: string; note?: string; expires?: string }) => {
      const ctx = await openCliContext();
      try {
        const zone = ctx.settings.PLATFORM_TIMEZONE;
        const expiresTime = o.expires === undefined ? undefined : parseOption('--expires', () => parseDateTime(o.expires!, zone));
        const inputs = numbers.map((phoneNumber) => ({
          phoneNumber,
          ...(o.project === undefined ? {} : { project: o.project }),
          ...(o.note === undefined ? {} : { note: o.note }),
          ...(expiresTime === undefined ? {} : { expiresTime }),
        }));
        const listed = await listNumbers({ db: ctx.db, clock: () => new Date() }, listOf(o.global), inputs).catch(
          cliRefusal(numbers, o.project),
        );
        for (const e of listed.entries)
          process.stdout.write(`listed ${e.phoneNumber}${e.project ? ` for ${e.project}` : ''}: ${e.movedLeads} open leads moved\n`);
      } finally {
        await ctx.close();
      }
    });

  dnc
    .command('remove')
    .description('remove a number from a list (leads keep their status)')
    .argument('<number>', 'the phone number')
    .option('--global', 'the global list')
    .option('--project <project>', "only the customer list's entry for this project")
    .action(async (number: string, o: { global?: boolean; project?: string }) => {
      const ctx = await openCliContext();
      try {
        const removed = await unlistNumber({ db: ctx.db, clock: () => new Date() }, listOf(o.global), number, o.project).catch(
          cliRefusal([number], o.project),
        );
        if (removed === 0) throw new CliError(`${number} is not on the ${o.global ? 'global' : "customer's"} list`);
        process.stdout.write(`removed ${removed} ${removed === 1 ? 'entry' : 'entries'}\n`);
      } finally {
        await ctx.close();
      }
    });

  dnc
    .command('list')
    .description('print a list, one entry per line: number, project, expiry, note (tab-separated)')
    .option('--global', 'the global list')
    .action(async (o: { global?: boolean }) => {
      const ctx = await openCliContext();
      try {
        const zone = ctx.settings.PLATFORM_TIMEZONE;
        const cursor = await openDoNotCallCursor(ctx.db, listOf(o.global), { now: new Date() });
        for await (const e of cursor as AsyncIterable<DoNotCallEntry>) {
          const expires = e.expiresTime === null ? '' : formatDateTime(e.expiresTime, zone);
          process.stdout.write(`${e.phoneNumber}\t${e.project ?? '*'}\t${expires}\t${e.note ?? ''}\n`);
        }
      } finally {
        await ctx.close();
      }
    });
}

function parseOption<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new CliError(`${name}: ${(err as Error).message}`);
  }
}

/**
 * A refusal in the command's own terms: a number names itself, the other fields their option
 * (`--project "X"`, `--expires`), each reason once, however many numbers it applies to.
 */
function cliRefusal(numbers: string[], project: string | undefined): (err: unknown) => never {
  const subject = (field: DoNotCallInputError['field'], index: number): string => {
    if (field === 'phoneNumber') return numbers[index] ?? 'the number';
    if (field === 'project') return `--project ${JSON.stringify(project ?? '')}`;
    return '--expires';
  };
  return (err) => {
    if (!(err instanceof DoNotCallRefused)) throw err;
    const reasons = new Set(err.errors.map((e) => `${subject(e.field, e.index)}: ${e.message}`));
    throw new CliError([...reasons].join('; '));
  };
}
