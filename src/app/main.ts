import { Command, CommanderError } from 'commander';
import { openCliContext } from './cliContext';
import { registerMigrate } from '../cli/migrate';
import { registerServe } from './serve';
import { registerLoad } from '../cli/load';
import { registerAccount } from '../cli/account';
import { registerLifecycle } from '../cli/lifecycle';
import { registerGenerate } from '../cli/generate';
import { registerSeedDemo } from '../cli/seedDemo';
import { registerMaintain } from '../cli/maintain';
import { registerHooks } from '../cli/hooks';
import { startHookWorkers } from './hookWorkers';

/**
 * The `lcm` command line (DESIGN §9). Each command lives in its own module and registers
 * itself here; a command's action resolves to its exit status.
 */
export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  program.name('lcm').description('lead-call-api command line').exitOverride();
  registerMigrate(program, openCliContext);
  registerServe(program);
  registerLoad(program, openCliContext);
  registerAccount(program, openCliContext);
  registerLifecycle(program, openCliContext);
  registerGenerate(program, openCliContext);
  registerSeedDemo(program, openCliContext);
  registerMaintain(program, openCliContext);
  registerHooks(program, openCliContext, (ctx) => startHookWorkers(ctx));
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return 0;
}
