import type { Command } from 'commander';
import type { OpenCliContext, CliContext } from './context';

/** What `lcm hooks work` runs: hook delivery workers on the context's database, until stopped. */
export type StartHookWorkers = (ctx: CliContext) => Promise<{ stop(): Promise<void> }>;

/**
 * `lcm hooks work`: a process that only delivers hooks (the API nodes can then run with
 * HOOKS_WORKER=false). Any number of them, on any number of nodes, share the deliveries.
 */
export function registerHooks(program: Command, openCliContext: OpenCliContext, startWorkers: StartHookWorkers): void {
  const hooks = program.command('hooks').description('hook deliveries');
  hooks
    .command('work')
    .description('run hook delivery workers until SIGTERM/SIGINT (HOOKS_CONCURRENCY deliveries at a time)')
    .action(async () => {
      const ctx = await openCliContext();
      try {
        const workers = await startWorkers(ctx);
        process.stdout.write('hook delivery workers running; stop with SIGTERM or SIGINT\n');
        await new Promise<void>((resolve) => {
          process.once('SIGTERM', () => resolve());
          process.once('SIGINT', () => resolve());
        });
        await workers.stop();
      } finally {
        await ctx.close();
      }
    });
}
