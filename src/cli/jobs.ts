import type { Command } from 'commander';
import type { OpenCliContext, CliContext } from './context';

/** What `lcm jobs work` runs: the background work the settings switch on, until stopped. */
export type StartBackgroundWork = (ctx: CliContext) => Promise<{ stop(): Promise<void> }>;

/**
 * `lcm jobs work`: a process for the background work alone (hook delivery, the lead lifecycle
 * sweep, partition maintenance), for deployments that run it apart from the API nodes. Any
 * number of them, on any number of nodes, share the work through Postgres.
 */
export function registerJobs(program: Command, openCliContext: OpenCliContext, startWork: StartBackgroundWork): void {
  const jobs = program.command('jobs').description('background work');
  jobs
    .command('work')
    .description('run hook delivery, the lifecycle sweep and partition maintenance until SIGTERM/SIGINT')
    .action(async () => {
      const ctx = await openCliContext();
      try {
        const work = await startWork(ctx);
        process.stdout.write('background work running; stop with SIGTERM or SIGINT\n');
        await new Promise<void>((resolve) => {
          process.once('SIGTERM', () => resolve());
          process.once('SIGINT', () => resolve());
        });
        await work.stop();
      } finally {
        await ctx.close();
      }
    });
}
