#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { SingleBar } from 'cli-progress';
import { Duration } from 'luxon';
import { EXIT, pull, PullError, type PullKind, type PullOptions, type PullProgress } from '../pull/pull';

/**
 * lcm-pull: bulk export of calls or leads in time windows, resumable. Credentials and the API
 * address come from flags or the environment (LCM_BASE_URL, LCM_USERNAME, LCM_PASSWORD).
 *
 *   lcm-pull calls --org "TRYG Forsikring A/S" --from 2026-01-01 --to 2026-02-01 [--window PT2H] [--format ndjson|csv] --out calls.ndjson
 *   lcm-pull leads --projects '*' --modified-from 2026-01-01 [--modified-to 2026-02-01] [--window P1D] --out leads.ndjson
 */

function seconds(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const d = Duration.fromISO(text);
  if (!d.isValid) throw new PullError(`--max-wait must be seconds or an ISO 8601 duration, not ${text}`, EXIT.usage);
  return Math.ceil(d.as('seconds'));
}

function withCommonOptions(command: Command): Command {
  return command
    .addOption(new Option('--format <format>', 'output format').choices(['ndjson', 'csv']).default('ndjson'))
    .requiredOption('--out <file>', 'output file (written as FILE.part, renamed when complete)')
    .option('--window <duration>', 'window length, ISO 8601 duration')
    .option('--state <file>', 'state file for resuming (default: FILE.state.json)')
    .option('--max-wait <duration>', 'longest wait for request quota, seconds or ISO 8601 duration', 'PT15M')
    .option('--base-url <url>', 'API address (env LCM_BASE_URL)', process.env.LCM_BASE_URL ?? 'http://127.0.0.1:8080')
    .option('--username <name>', 'account username (env LCM_USERNAME)', process.env.LCM_USERNAME)
    .option('--password <password>', 'account password (env LCM_PASSWORD)', process.env.LCM_PASSWORD)
    .option('--time-zone <zone>', 'zone of dates without an offset (env LCM_TIME_ZONE)', process.env.LCM_TIME_ZONE ?? 'Europe/Copenhagen')
    .option('--no-progress', 'no progress bar (it shows only on a terminal anyway)');
}

type Flags = Record<string, string | boolean | undefined>;

function pullOptions(kind: PullKind, flags: Flags): PullOptions {
  const str = (name: string) => (typeof flags[name] === 'string' ? (flags[name] as string) : undefined);
  if (!str('username') || str('password') === undefined) {
    throw new PullError('credentials missing: set LCM_USERNAME and LCM_PASSWORD (or --username and --password)', EXIT.usage);
  }
  const limit = str('limit');
  return {
    kind,
    baseUrl: str('baseUrl')!,
    username: str('username')!,
    password: str('password')!,
    org: str('org'),
    projects: str('projects')
      ?.split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    from: (kind === 'calls' ? str('from') : str('modifiedFrom'))!,
    to: kind === 'calls' ? str('to') : str('modifiedTo'),
    window: str('window'),
    limit: limit === undefined ? undefined : Number(limit),
    format: str('format') as PullOptions['format'],
    out: str('out')!,
    stateFile: str('state'),
    maxWaitSeconds: seconds(str('maxWait')!),
    timeZone: str('timeZone'),
  };
}

/** A progress bar on a terminal; nothing otherwise. */
function progressBar(enabled: boolean): { update(p: PullProgress): void; stop(): void } {
  if (!enabled) return { update: () => undefined, stop: () => undefined };
  const bar = new SingleBar({
    format: '{bar} {value}/{total} windows | {rows} rows | {note}',
    stream: process.stderr,
    hideCursor: true,
  });
  let started = false;
  return {
    update(p) {
      const quota = p.quota?.map((q) => `${q.name} ${q.remaining} left`).join(', ') ?? '';
      const note = p.waitingSeconds !== undefined ? `waiting ${p.waitingSeconds} s` : quota;
      const payload = { rows: p.rows, note };
      if (!started) {
        bar.start(p.windowsTotal, p.windowsDone, payload);
        started = true;
      } else {
        bar.setTotal(p.windowsTotal);
        bar.update(p.windowsDone, payload);
      }
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

async function run(kind: PullKind, flags: Flags): Promise<void> {
  const options = pullOptions(kind, flags);
  const bar = progressBar(flags.progress !== false && process.stderr.isTTY === true);
  try {
    const summary = await pull(options, { onProgress: (p) => bar.update(p) });
    bar.stop();
    process.stderr.write(
      `lcm-pull: ${summary.rows} ${kind} in ${summary.windows} windows (${summary.splits} split, ${summary.requests} requests${summary.resumed ? ', resumed' : ''}) → ${summary.out}\n`,
    );
  } finally {
    bar.stop();
  }
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('lcm-pull')
    .description('Pull calls or leads from lead-call-api in time windows into one NDJSON or CSV file; a rerun resumes.')
    .exitOverride()
    .showHelpAfterError();
  withCommonOptions(
    program
      .command('calls')
      .description('calls whose StartTime lies in [--from, --to), window by window (StartTime/TimeSpan)')
      .requiredOption('--org <orgCode>', 'org code of a user or an org unit')
      .requiredOption('--from <date>', 'start, ISO 8601 (a date is midnight)')
      .option('--to <date>', 'end (exclusive); default now')
      .option('--limit <n>', 'Limit per request; a window that returns this many calls is split in halves', '5000'),
  ).action((flags: Flags) => run('calls', flags));
  withCommonOptions(
    program
      .command('leads')
      .description('leads last modified in [--modified-from, --modified-to), window by window (ModifiedFrom/ModifiedTo)')
      .option('--projects <patterns>', 'project patterns, comma-separated', '*')
      .requiredOption('--modified-from <date>', 'start, ISO 8601 (a date is midnight)')
      .option('--modified-to <date>', 'end (exclusive); default now'),
  ).action((flags: Flags) => run('leads', flags));
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help' ? 0 : EXIT.usage;
    }
    const code = err instanceof PullError ? err.exitCode : EXIT.failed;
    process.stderr.write(`lcm-pull: ${(err as Error).message.split('\n')[0]}\n`);
    return code;
  }
}

if (require.main === module) {
  void main(process.argv).then((code) => {
    process.exitCode = code;
  });
}
