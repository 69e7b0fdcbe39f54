/**
 * Bulk import benchmark, run on demand:
 *   npm run bench:bulk [-- --rows 100000 --formats csv,json,ndjson --batch 1000 --parallel 2 --server-node-args "--cpu-prof"]
 *                      [--parse-mb 4 --parse-rounds 5 --parse-only]
 *
 * First, in this process, what reading a body costs per byte in each format: ordinary rows
 * against one row of `--parse-mb` MB, read whole and over the row limit (bench/bulkParsing.ts).
 * Then (unless --parse-only), for each format, one POST /api/leads/bulk with `--rows` leads against the real server
 * (`lcm serve` as a child process, Basic auth, request counting in Postgres); the requests are
 * bench/bulkRequests.ts's. Reports rows/s, time to the first result, the server's RSS (start,
 * peak, growth) sampled every 50 ms, CPU time per row of the server, Postgres and the client,
 * and checks that the database holds one lead per successful row. `--parallel` sets
 * BULK_PARALLEL_BATCHES; `--server-node-args` passes options to the server's node.
 *
 * Everything runs on a throwaway embedded Postgres on a free loopback port, removed at the
 * end. The machine is shared: run it once, at full size only when it is quiet.
 */
import os from 'node:os';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer } from './benchWorld';
import { BULK_FORMATS, BulkFormat, bulkImportTable } from './bulkRequests';
import { bulkParsingTable } from './bulkParsing';
import { numberOption, textOption as option, fmt } from './support';

const settings = {
  rows: Number(option('rows', '100000')),
  formats: option('formats', 'csv,json,ndjson').split(',') as BulkFormat[],
  batchSize: option('batch', '1000'),
  /** BULK_PARALLEL_BATCHES of the server (its default when not given). */
  parallelBatches: option('parallel', ''),
  /** Node options for the server process, e.g. "--cpu-prof --cpu-prof-dir /tmp/prof" or "--trace-gc". */
  serverNodeArgs: option('server-node-args', '').split(' ').filter(Boolean),
  /** Size of the large row (and of the body of ordinary rows) whose reading is compared. */
  parseMb: numberOption('parse-mb', 4),
  parseRounds: Math.max(1, numberOption('parse-rounds', 5)),
  parseOnly: process.argv.includes('--parse-only'),
};
if (!Number.isInteger(settings.rows) || settings.rows < 1) throw new Error('--rows needs a positive whole number');
for (const f of settings.formats) if (!BULK_FORMATS.includes(f)) throw new Error(`unknown format ${f}`);

async function main(): Promise<void> {
  console.log(`# bulk import benchmark — ${os.cpus().length} CPUs, Node ${process.version}, ${new Date().toISOString()}`);
  console.log(
    `load average: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (settings.parseMb > 0) await bulkParsingTable(settings.formats, settings.parseMb, settings.parseRounds);
  if (settings.parseOnly) return;
  const run = benchRun('bulk');
  try {
    console.log(
      `rows per request ${fmt(settings.rows)}, BULK_BATCH_SIZE ${settings.batchSize}, BULK_PARALLEL_BATCHES ${settings.parallelBatches || 'default'}`,
    );
    const database = await startBenchDatabase(run, 2);
    const auth = await loadBenchWorld(database.db);
    const server = await startBenchServer(
      run,
      database.url,
      {
        HOOKS_WORKER: 'false',
        BULK_BATCH_SIZE: settings.batchSize,
        ...(settings.parallelBatches ? { BULK_PARALLEL_BATCHES: settings.parallelBatches } : {}),
      },
      settings.serverNodeArgs,
    );
    const target = { base: server.base, auth, serverPid: server.pid, postmasterPid: database.postmasterPid, db: database.db };
    if (!(await bulkImportTable(target, settings.formats, settings.rows))) process.exitCode = 1;
  } finally {
    await run.cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
