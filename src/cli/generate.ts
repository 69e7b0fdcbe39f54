import { Command, InvalidArgumentError } from 'commander';
import type { OpenCliContext } from './context';
import { createProgress } from './progress';
import { generateSyntheticData } from '../ingest/syntheticData';

function nonNegativeInt(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a non-negative integer.`);
    return Number(value);
  };
}

/** `lcm generate --calls N --leads N [--seed S]` (docs/decisions.md, Command line). */
export function registerGenerate(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('generate')
    .description('append a realistic synthetic data set (org tree, campaigns, leads, calls, recordings, ready periods)')
    .requiredOption('--calls <n>', 'number of calls', nonNegativeInt('--calls'))
    .requiredOption('--leads <n>', 'number of leads', nonNegativeInt('--leads'))
    .option('--seed <s>', 'seed of the pseudo-random data; the same seed gives the same data', nonNegativeInt('--seed'), 1)
    .option('--days <d>', 'length of the call window in days (7..180)', nonNegativeInt('--days'), 90)
    .option('--end <date>', 'the window ends at the start of this platform-local date (yyyy-MM-dd); default today')
    .action(async (o: { calls: number; leads: number; seed: number; days: number; end?: string }) => {
      const ctx = await openCliContext();
      const started = Date.now();
      try {
        const report = progressReporter();
        const summary = await generateSyntheticData(ctx.db, {
          calls: o.calls,
          leads: o.leads,
          seed: o.seed,
          days: o.days,
          endDate: o.end,
          zone: ctx.settings.PLATFORM_TIMEZONE,
          onProgress: report.update,
        }).finally(report.stop);
        const counts = Object.entries(summary.counts).map(([k, v]) => `${v} ${k}`);
        const phases = Object.entries(summary.timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}s`);
        process.stdout.write(
          `generated run ${summary.prefix}: ${counts.join(', ')}\n` +
            `calls from ${summary.windowStart.toISOString()} to ${summary.windowEnd.toISOString()}\n` +
            `took ${((Date.now() - started) / 1000).toFixed(1)}s (${phases.join(', ')})\n`,
        );
      } finally {
        await ctx.close();
      }
    });
}

/** A bar on a terminal; otherwise a plain line every few seconds, so logs show it is alive. */
function progressReporter(): { update: (done: number, total: number, phase: string) => void; stop: () => void } {
  if (process.stderr.isTTY) {
    let bar: ReturnType<typeof createProgress> | undefined;
    return {
      update: (done, total) => {
        bar ??= createProgress('generate', Math.max(total, 1), 'rows');
        bar.update(done);
      },
      stop: () => bar?.stop(),
    };
  }
  let last = 0;
  return {
    update: (done, total, phase) => {
      const now = Date.now();
      if (now - last < 5000 && done < total) return;
      last = now;
      process.stderr.write(`generate: ${done}/${total} rows (${total ? Math.floor((done / total) * 100) : 100}%), ${phase}\n`);
    },
    stop: () => undefined,
  };
}
