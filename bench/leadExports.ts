/**
 * The lead exports' CPU (figures: docs/benchmarks.md, Leads), run on demand:
 *   npm run bench:lead-exports [-- --leads 200000 --runs 5 --base ../other-checkout --cursor 1]
 *
 * `lcm generate`'s leads on a throwaway embedded Postgres; `lcm serve` with one HTTP worker
 * serves /api/simpleleads (JSON), /api/leads/csv (the saved-search CSV) and /api/rawleads, each
 * fetched by curl into a hash (a native client: the two cores stay the server's and Postgres's).
 * Per request the server's CPU time (the serve process and its worker); medians over `--runs`
 * rounds. With `--cursor 1` also the cursor path (EXPORT_TRANSCODER=false). With `--base DIR`,
 * the same requests go to `lcm serve` of that checkout too (its build: run `npm run build`
 * there), taking turns request by request: a before/after comparison of a change on one
 * data set, under the same load. Every server's body of a path must be the same bytes.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { generateSyntheticData } from '../src/ingest/syntheticData';
import { loadNdjson } from '../src/ingest/loader/loadNdjson';
import { Readable } from 'node:stream';
import { numberOption as option, textOption, median, fmt, log, processFamilyCpuMs } from './support';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer, BENCH_ZONE, BenchServer } from './benchWorld';

const settings = {
  leads: option('leads', 200_000),
  runs: option('runs', 5),
  cursor: option('cursor', 0) > 0,
  base: textOption('base', ''),
};

const SEARCH = 'Bench every lead';
const PATHS: Record<string, string> = {
  'simpleleads JSON': '/api/simpleleads',
  'leads/csv': `/api/leads/csv?searchName=${encodeURIComponent(SEARCH)}&modifiedFrom=1900-01-01`,
  rawleads: '/api/rawleads',
};

interface Fetch {
  bytes: number;
  seconds: number;
  hash: string;
}

/** curl of one export into sha256sum: bytes, seconds and the body's hash. */
function fetchHashed(url: string, auth: string): Promise<Fetch> {
  return new Promise((resolve, reject) => {
    const script = `set -o pipefail; curl -sS --fail -H "Authorization: $AUTH" -w '%{size_download} %{time_total}\\n' -o >(sha256sum >&2) "$URL"`;
    const child = spawn('bash', ['-c', script], { env: { ...process.env, AUTH: auth, URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const [bytes, seconds] = out.trim().split(' ').map(Number);
      const hash = /^[0-9a-f]{64}/m.exec(err)?.[0];
      if (code !== 0 || hash === undefined) return reject(new Error(`${url}: curl exit ${code}: ${err.trim()}`));
      resolve({ bytes: bytes!, seconds: seconds!, hash });
    });
  });
}

interface Variant {
  name: string;
  server: BenchServer;
}

async function main(): Promise<void> {
  const run = benchRun('lead-exports');
  try {
    log(
      `# lead exports — ${os.cpus().length} CPUs, Node ${process.version}, ${new Date().toISOString()}, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const database = await startBenchDatabase(run, 4);
    const { db } = database;
    const auth = await loadBenchWorld(db);
    const records = [
      { type: 'savedSearch', user: 'bench-user', name: SEARCH, projects: ['*'] },
      { type: 'requestLimit', account: 'bench', service: 'leads.csv', dailyLimit: 2_000_000_000 },
      { type: 'requestLimit', account: 'bench', service: 'rawleads', dailyLimit: 2_000_000_000 },
    ];
    await loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: BENCH_ZONE });
    await generateSyntheticData(db, { calls: 0, leads: settings.leads, seed: 5, zone: BENCH_ZONE, days: 30 });
    await db.raw('VACUUM ANALYZE leads');
    const total = Number((await db('leads').count<{ count: string }[]>('* as count'))[0]!.count);
    log(`${fmt(total)} leads`);

    const roots: [string, string | undefined][] = [['this checkout', undefined]];
    if (settings.base) roots.unshift([`base ${path.basename(path.resolve(settings.base))}`, path.resolve(settings.base)]);
    const variants: Variant[] = [];
    for (const [label, root] of roots) {
      for (const transcoder of settings.cursor ? [true, false] : [true]) {
        const env = { WEB_CONCURRENCY: '1', ...(transcoder ? {} : { EXPORT_TRANSCODER: 'false' }) };
        const server = await startBenchServer(run, database.url, env, [], root);
        variants.push({ name: `${label}${transcoder ? '' : ', cursor path'}`, server });
      }
    }

    // CPU ms, seconds and hashes per path and variant.
    const cpu = new Map<string, number[]>();
    const wall = new Map<string, number[]>();
    const hashes = new Map<string, Set<string>>();
    const bytes = new Map<string, number>();
    for (let round = 0; round <= settings.runs; round++) {
      for (const [pathName, p] of Object.entries(PATHS)) {
        for (const v of variants) {
          const before = processFamilyCpuMs(v.server.pid);
          const f = await fetchHashed(v.server.base + p, auth);
          const used = processFamilyCpuMs(v.server.pid) - before;
          const key = `${pathName} | ${v.name}`;
          const h = hashes.get(pathName) ?? new Set<string>();
          h.add(f.hash);
          hashes.set(pathName, h);
          bytes.set(pathName, f.bytes);
          if (round === 0) continue; // warm-up
          cpu.set(key, [...(cpu.get(key) ?? []), used]);
          wall.set(key, [...(wall.get(key) ?? []), f.seconds]);
        }
      }
    }

    log();
    log(`| export (${fmt(total)} leads) | server | CPU s per 1M rows (median of ${settings.runs}) | runs | wall s (median) | MB |`);
    log('|---|---|---:|---|---:|---:|');
    for (const [key, xs] of cpu) {
      const [pathName, variant] = key.split(' | ');
      log(
        `| ${pathName} | ${variant} | ${fmt((median(xs) / total) * 1000, 2)} | ${xs.map((x) => fmt((x / total) * 1000, 2)).join(', ')} | ${fmt(median(wall.get(key)!), 2)} | ${fmt(bytes.get(pathName!)! / 1e6, 1)} |`,
      );
    }
    log();
    for (const [pathName, h] of hashes) {
      log(
        `${pathName}: ${h.size === 1 ? `the same bytes from every server (${[...h][0]!.slice(0, 12)})` : `DIFFERENT bodies: ${[...h].join(', ')}`}`,
      );
    }
    log(
      `load average at the end: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await run.cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
