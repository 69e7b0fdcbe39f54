import fs from 'node:fs';
import { pipeline, Transform } from 'node:stream';
import type { Command } from 'commander';
import { CliError, OpenCliContext } from './context';
import { loadNdjson } from '../ingest/loader/loadNdjson';
import { createProgress } from './progress';

/** The file to load, refused in one line when it is not one: missing, or a folder. */
function checkedFile(file: string): fs.Stats {
  let stats: fs.Stats;
  try {
    stats = fs.statSync(file);
  } catch {
    throw new CliError(`no such file: ${file}`);
  }
  if (stats.isDirectory()) throw new CliError(`${file} is a folder; lcm load reads one NDJSON file (or - for standard input)`);
  return stats;
}

/** Standard input redirected from a folder reads as empty in Node (no error): refused like a folder path. */
function checkedStdin(): void {
  let isFolder = false;
  try {
    isFolder = fs.fstatSync(0).isDirectory();
  } catch {
    // No standard input to look at: reading it says what is wrong.
  }
  if (isFolder) throw new CliError('standard input is a folder; lcm load reads one NDJSON file (or - for standard input)');
}

export function registerLoad(program: Command, openCliContext: OpenCliContext): void {
  program
    .command('load')
    .description('load platform data from an NDJSON file (- for stdin) in one transaction')
    .argument('<file>', 'NDJSON file in UTF-8, one record a line, or - for standard input')
    .action(async (file: string) => {
      const fromStdin = file === '-';
      if (fromStdin) checkedStdin();
      const total = fromStdin ? 0 : checkedFile(file).size;
      const ctx = await openCliContext();
      try {
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
        // A read error (the file vanished, no permission) ends the load with its reason; pipeline passes it on.
        const input = pipeline(fromStdin ? process.stdin : fs.createReadStream(file), counter, () => {});
        const summary = await loadNdjson(ctx.db, input, { zone: ctx.settings.PLATFORM_TIMEZONE }).finally(() => progress.stop());
        const parts = Object.entries(summary.counts).map(([t, n]) => `${n} ${t}`);
        const lines = `${summary.lines} ${summary.lines === 1 ? 'line' : 'lines'}`;
        process.stdout.write(`loaded ${lines}${parts.length ? `: ${parts.join(', ')}` : ''}\n`);
      } finally {
        await ctx.close();
      }
    });
}
