import fs from 'node:fs';
import { Transform } from 'node:stream';
import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { loadNdjson } from '../ingest/loader/loadNdjson';
import { createProgress } from './progress';

export function registerLoad(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('load')
    .description('load platform data from an NDJSON file (- for stdin) in one transaction')
    .argument('<file>', 'NDJSON file, one record a line, or - for standard input')
    .action(async (file: string) => {
      const fromStdin = file === '-';
      if (!fromStdin && !fs.existsSync(file)) throw new CliError(`no such file: ${file}`);
      const ctx = await openCliContext();
      try {
        const total = fromStdin ? 0 : fs.statSync(file).size;
        const progress = createProgress('load', Math.max(total, 1), 'bytes');
        let bytes = 0;
        // Counts bytes as they are read, so the bar follows the file, not the line count.
        const counter = new Transform({
          transform(chunk: Buffer, _enc, done) {
            bytes += chunk.length;
            progress.update(bytes);
            done(null, chunk);
          },
        });
        const input = (fromStdin ? process.stdin : fs.createReadStream(file)).pipe(counter);
        const summary = await loadNdjson(ctx.db, input, { zone: ctx.settings.PLATFORM_TIMEZONE }).finally(() => progress.stop());
        const parts = Object.entries(summary.counts).map(([t, n]) => `${n} ${t}`);
        process.stdout.write(`loaded ${summary.lines} lines${parts.length ? `: ${parts.join(', ')}` : ''}\n`);
      } finally {
        await ctx.close();
      }
    });
}
