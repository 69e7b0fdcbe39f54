import { Command, CommanderError, Help } from 'commander';
import type { OpenCliContext } from '../cli/context';
import { openCliContext } from './cliContext';
import { registerMigrate } from '../cli/migrate';
import { registerServe } from './serve';
import { registerLoad } from '../cli/load';
import { registerAccount } from '../cli/account';
import { registerLifecycle } from '../cli/lifecycle';
import { registerGenerate } from '../cli/generate';
import { registerSeedDemo } from '../cli/seedDemo';
import { registerMaintain } from '../cli/maintain';
import { registerDoNotCall } from '../cli/doNotCall';
import { registerRequests } from '../cli/requests';
import { registerHooks } from '../cli/hooks';
import { startBackgroundWork } from './backgroundWork';
import { logUnhandledRejections } from './unhandledRejections';
import { startHookWorker } from '../jobs/hookWorker';
import { createLogger } from '../config/logger';
import { registerJobs } from '../cli/jobs';
import { takeOverShutdownSignals } from './embeddedPostgres';
import { oneLine, reasonOf } from './reasons';
import { apiServiceNames } from '../http/routes';

/**
 * The `lcm` command line (docs/cli.md). Each command lives in its own module and registers
 * itself here; a command's action resolves when it is done and throws when it failed.
 */
export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  program
    .name('lcm')
    .description('lead-call-api command line (docs/cli.md)')
    .exitOverride()
    // Commander's own errors (unknown command, missing option) read like ours: one line after `lcm: `.
    .configureOutput({ outputError: (text, write) => write(`lcm: ${oneLine(text.replace(/^error: /, ''))}\n`) })
    .configureHelp(missingCommandInOneLine());
  // The running command's name goes into the record of who holds the embedded database.
  let command = 'lcm';
  program.hook('preAction', (_program, action) => {
    command = commandPath(action);
  });
  const open: OpenCliContext = (options) => openCliContext({ ...options, command });
  registerMigrate(program, open);
  registerServe(program);
  registerLoad(program, open);
  registerAccount(program, open);
  registerLifecycle(program, open);
  registerGenerate(program, open);
  registerSeedDemo(program, open);
  registerMaintain(program, open);
  registerDoNotCall(program, open);
  registerRequests(program, open, apiServiceNames);
  // Like a server, `lcm hooks work` and `lcm jobs work` stop on SIGTERM/SIGINT themselves: their
  // workers finish their deliveries before the context stops an embedded cluster it started.
  registerHooks(program, open, (ctx) => {
    takeOverShutdownSignals();
    const logger = createLogger(ctx.settings.LOG_LEVEL);
    logUnhandledRejections(logger);
    return startHookWorker({ db: ctx.db, settings: ctx.settings, logger });
  });
  registerJobs(program, open, (ctx) => {
    takeOverShutdownSignals();
    const logger = createLogger(ctx.settings.LOG_LEVEL);
    logUnhandledRejections(logger);
    return startBackgroundWork(ctx, logger);
  });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return 0;
}

/**
 * What bin/lcm.js runs: the command's outcome becomes the exit status, 0 or 1 with a one-line
 * reason on standard error. The process then ends when its work is done, so output reaches
 * pipes in full; nothing may overwrite the status afterwards (docs/decisions.md, Command line).
 */
export async function run(argv: string[]): Promise<void> {
  let outputFailure: Error | undefined;
  // A reader that leaves early (`lcm requests … | head`) closes the pipe: the output ends there
  // (src/cli/output.ts), instead of an unhandled EPIPE ending the process with a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') outputFailure ??= err;
  });
  let code: number;
  try {
    code = await main(argv);
  } catch (err) {
    process.stderr.write(`lcm: ${reasonOf(err)}\n`);
    code = 1;
  }
  if (code === 0 && outputFailure !== undefined) {
    process.stderr.write(`lcm: standard output: ${reasonOf(outputFailure)}\n`);
    code = 1;
  }
  process.exitCode = code;
}

/**
 * Help settings under which the help commander shows for a missing command (`lcm`, `lcm hooks`)
 * is one line like every other failure; `--help` still prints the whole help. Commander tells a
 * Help whether it is shown for an error in prepareContext; subcommands inherit these settings.
 */
function missingCommandInOneLine(): Partial<Help> {
  const forError = new WeakSet<Help>();
  return {
    prepareContext(this: Help, context: { error?: boolean; helpWidth?: number; outputHasColors?: boolean }) {
      Help.prototype.prepareContext.call(this, context);
      if (context.error === true) forError.add(this);
    },
    formatHelp(this: Help, command: Command, helper: Help): string {
      if (!forError.has(this)) return Help.prototype.formatHelp.call(this, command, helper);
      const path = commandPath(command);
      const names = command.commands.map((c) => c.name()).join(', ');
      return `lcm: missing command${path ? ` after ${path}` : ''}; one of: ${names} (lcm ${path ? `${path} ` : ''}--help describes them)\n`;
    },
  };
}

/** `account create` for the command run by `lcm account create ...`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}
