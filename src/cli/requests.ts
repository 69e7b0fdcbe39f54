import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { parseDateTime } from '../domain/datetime';
import { parseTimeSpan, windowEnd } from '../domain/timespan';
import { renderRequestLogRow, requestLogCsvHeader, requestLogCsvLine, RequestLogRow, unknownServiceName } from '../domain/requestLog';
import type { Settings } from '../config/settings';
import { findAccountByUsername } from '../data/accountRepository';
import { openRequestLogCursor } from '../data/requestLog';
import { writeOutput } from './output';

interface RequestsOptions {
  account: string;
  fromTime: string;
  timeSpan: string;
  status?: string;
  service?: string;
  format: string;
}

/**
 * `lcm requests --account NAME --from-time … --time-span … [--status …] [--service …]`: any
 * account's request log, with the options of GET /api/myaccount/requests, as JSON lines
 * (default) or CSV, DateTimes in platform time with their offset.
 */
export function registerRequests(
  program: Command,
  openCliContext: OpenCliContext,
  /** Every service name of the API (the composition root knows the endpoints). */
  serviceNames: (settings: Settings) => readonly string[],
): void {
  program
    .command('requests')
    .description("print an account's request log (what GET /api/myaccount/requests answers that account)")
    .requiredOption('--account <username>', 'the account')
    .requiredOption('--from-time <datetime>', 'start of the window, inclusive (ISO 8601; without an offset platform local time)')
    .requiredOption('--time-span <timespan>', 'length of the window (ISO 8601 duration, e.g. PT1H)')
    .option('--status <codes>', 'only these HTTP status codes (comma-separated)')
    .option('--service <names>', 'only these services (comma-separated, case-insensitive)')
    .option('--format <format>', 'json (one entry per line) or csv', 'json')
    .action(async (o: RequestsOptions) => {
      if (o.format !== 'json' && o.format !== 'csv') throw new CliError('--format: must be json or csv');
      const ctx = await openCliContext();
      try {
        const zone = ctx.settings.PLATFORM_TIMEZONE;
        const from = option('--from-time', () => parseDateTime(o.fromTime, zone));
        // The window as the API's TimeSpan makes it: not negative, not past the year 9999.
        const to = option('--time-span', () => windowEnd(from, parseTimeSpan(o.timeSpan), zone));
        // An empty list (`--status ''`) filters nothing, as an empty Status= of the API does.
        const statuses = nonEmpty(list(o.status ?? '').map((s) => statusCode(s)));
        const services = nonEmpty(list(o.service ?? ''));
        if (services) {
          // A name of no service would print an empty log, which reads as "no such requests".
          const known = serviceNames(ctx.settings);
          const unknown = unknownServiceName(services, known, `the services are ${known.join(', ')}`);
          if (unknown) throw new CliError(`--service: ${unknown}`);
        }
        const account = await findAccountByUsername(ctx.db, o.account);
        if (!account) throw new CliError(`no account "${o.account}"`);
        const cursor = await openRequestLogCursor(ctx.db, account.id, {
          from,
          to,
          ...(statuses ? { statuses } : {}),
          ...(services ? { services } : {}),
        });
        const csvLine = requestLogCsvLine(';', zone, 'Offset');
        if (o.format === 'csv' && !(await writeOutput(requestLogCsvHeader(';')))) return;
        for await (const row of cursor as AsyncIterable<RequestLogRow>) {
          const text = o.format === 'csv' ? csvLine(row) : JSON.stringify(renderRequestLogRow(row, zone, 'Offset')) + '\n';
          // Leaving the loop closes the cursor.
          if (!(await writeOutput(text))) break;
        }
      } finally {
        await ctx.close();
      }
    });
}

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

const nonEmpty = <T>(values: T[]): T[] | undefined => (values.length > 0 ? values : undefined);

function statusCode(value: string): number {
  if (!/^[1-5]\d\d$/.test(value)) throw new CliError(`--status: ${value} is not an HTTP status code`);
  return Number(value);
}

function option<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new CliError(`${name}: ${(err as Error).message}`);
  }
}
