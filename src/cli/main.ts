import { Command, CommanderError } from 'commander';
import { registerMigrate } from './migrate';
import { registerServe } from './serve';
import { registerLoad } from './load';
import { registerAccount } from './account';
import { registerLifecycle } from './lifecycle';
import { registerGenerate } from './generate';
import { registerSeedDemo } from './seedDemo';

/**
 * The `lcm` command line (DESIGN §9). Each command lives in its own module and registers
 * itself here; a command's action resolves to its exit status.
 */
export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  program.name('lcm').description('lead-call-api command line').exitOverride();
  let exitCode = 0;
  const setExit = (code: number) => {
    exitCode = code;
  };
  registerMigrate(program, setExit);
  registerServe(program, setExit);
  registerLoad(program, setExit);
  registerAccount(program, setExit);
  registerLifecycle(program, setExit);
  registerGenerate(program, setExit);
  registerSeedDemo(program, setExit);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return exitCode;
}

export type SetExit = (code: number) => void;
