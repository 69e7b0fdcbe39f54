/**
 * Leads benchmark (figures: docs/benchmarks.md), run on demand:
 *   npm run bench:leads [-- --leads 500000 --duration 20 --bulk-rows 1000000 --bulk-formats csv,json]
 *
 * 1. Import: autocannon with 32 concurrent clients, one lead per POST /api/leads, against the
 *    real server (`lcm serve` as a child process) with Basic auth and request counting in Redis
 *    on. Reports leads/s and latency percentiles; checks the database holds one lead per 200.
 *    Then rounds without and with `DuplicateCheck=Campaign` taking turns (every lead a new
 *    number, so the check finds nothing and every import is stored): medians of leads/s and of
 *    CPU per import, and the cost of the check.
 * 2. Bulk import: one POST /api/leads/bulk of `--bulk-rows` rows (default 1,000,000; 0 skips
 *    it) per format, the body generated while it is sent and the answer read as it arrives
 *    (bench/bulkRequests.ts, as `npm run bench:bulk`): rows/s, the server's RSS growth, CPU per row.
 * 3. Export: /api/simpleleads over the generated leads (`lcm generate`'s generator) against
 *    `psql` running `COPY (...) TO STDOUT` of the same rows (the physical limit) — both the
 *    export's own SELECT and the SELECT with every name joined in — each run several times
 *    alternately; medians and the ratio to the faster COPY. The server's RSS is sampled.
 *
 * Everything runs on a throwaway embedded Postgres and redis-server (free loopback ports),
 * removed at the end. The machine is shared: run it once.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { generateSyntheticData } from '../src/ingest/syntheticData';
import { loadLeadLookups } from '../src/data/leadRepository';
import { leadCopySql } from '../src/data/exportQueries';
import { leadVisibilityByCampaign } from '../src/domain/leadSerializer';
import { projectScope } from '../src/data/projectScope';
import { numberOption as option, textOption, freePort, rssMb, median, fmt, processCpuMs, processFamilyCpuMs } from './support';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer, BENCH_CAMPAIGN, BENCH_ZONE } from './benchWorld';
import { BULK_FORMATS, BulkFormat, bulkImportTable } from './bulkRequests';
import autocannon from 'autocannon';

const settings = {
  leads: option('leads', 500_000),
  duration: option('duration', 20),
  connections: option('connections', 32),
  exportRuns: option('runs', 3),
  /** Rows of each bulk import request (0: no bulk import). */
  bulkRows: option('bulk-rows', 1_000_000),
  bulkFormats: textOption('bulk-formats', 'csv,json').split(',') as BulkFormat[],
  /** Rounds of single imports without and with DuplicateCheck=Campaign. */
  checkRounds: option('check-rounds', 3),
};
for (const f of settings.bulkFormats) if (!BULK_FORMATS.includes(f)) throw new Error(`unknown bulk format ${f}`);

interface ExportRun {
  rows: number;
  bytes: number;
  seconds: number;
  ttfbMs: number;
  rss: { start: number; peak: number; end: number };
}

/** GET a streamed JSON export; counts rows (their `closureData` property) while sampling the server's RSS. */
function runExport(url: string, auth: string, serverPid: number): Promise<ExportRun> {
  return new Promise((resolve, reject) => {
    // The last property of every Lead object, once per row.
    const marker = Buffer.from('"closureData":');
    const started = process.hrtime.bigint();
    let ttfbMs = 0;
    let rows = 0;
    let bytes = 0;
    let carry: Buffer = Buffer.alloc(0);
    const rss = { start: rssMb(serverPid), peak: 0, end: 0 };
    rss.peak = rss.start;
    const sampler = setInterval(() => {
      rss.peak = Math.max(rss.peak, rssMb(serverPid));
    }, 50);
    const req = http.get(url, { headers: { Authorization: auth, Accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        clearInterval(sampler);
        reject(new Error(`export answered ${res.statusCode}`));
        res.resume();
        return;
      }
      res.on('data', (chunk: Buffer) => {
        if (bytes === 0) ttfbMs = Number(process.hrtime.bigint() - started) / 1e6;
        bytes += chunk.length;
        const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
        let i = buf.indexOf(marker);
        while (i >= 0) {
          rows++;
          i = buf.indexOf(marker, i + marker.length);
        }
        carry = buf.subarray(Math.max(0, buf.length - marker.length + 1));
      });
      res.once('end', () => {
        clearInterval(sampler);
        rss.end = rssMb(serverPid);
        resolve({ rows, bytes, seconds: Number(process.hrtime.bigint() - started) / 1e9, ttfbMs, rss });
      });
      res.once('error', reject);
    });
    req.once('error', (err) => {
      clearInterval(sampler);
      reject(err);
    });
  });
}

/** `psql -c "COPY (sql) TO STDOUT"` into /dev/null: the rate Postgres alone delivers the same rows at. */
function runCopy(dbUrl: string, sql: string): Promise<{ seconds: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn('psql', [dbUrl, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `COPY (${sql}) TO STDOUT`], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, PGTZ: BENCH_ZONE },
    });
    let bytes = 0;
    child.stdout.on('data', (c: Buffer) => (bytes += c.length));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`psql exited with ${code}`));
      else resolve({ seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes });
    });
  });
}

async function main(): Promise<void> {
  const run = benchRun('leads');
  try {
    console.log(`# leads benchmark — ${os.cpus().length} CPUs, Node ${process.version}, ${new Date().toISOString()}`);
    const database = await startBenchDatabase(run, 4);
    const { db } = database;
    const clusterUrl = database.url;
    const redisPort = await freePort();
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    run.cleanups.push(() => redis.kill('SIGTERM'));

    // ---- a small world and the server, as `npm start` runs it (bench/benchWorld.ts) --------
    const auth = await loadBenchWorld(db);
    const { base, pid } = await startBenchServer(run, clusterUrl, { REDIS_URL: `redis://127.0.0.1:${redisPort}` });

    // ---- 1. import -------------------------------------------------------------------------
    // Every import a number of its own: with a duplicate check each one is still a new lead.
    let sequence = 0;
    const body = () =>
      JSON.stringify({
        CampaignCode: BENCH_CAMPAIGN,
        Data: { Name: 'Åse Ærø', Telefon: `+45 ${20_000_000 + sequence++}`, Email: 'aase@example.com', Customer: 'K-1', Revenue: '1200' },
      });
    const importOptionsFor = (query: string): autocannon.Options => ({
      url: `${base}/api/leads${query}`,
      method: 'POST',
      connections: settings.connections,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    });
    const importOptions = importOptionsFor('');
    // Context: the same server without the import's work.
    for (const [what, url, headers] of [
      ['GET /api/healthz (no auth, not counted)', `${base}/api/healthz`, {}],
      ['GET /api/myaccount (auth + counting)', `${base}/api/myaccount`, { Authorization: auth }],
    ] as const) {
      const r = await autocannon({ url, connections: settings.connections, duration: 3, headers });
      console.log(`baseline ${what}: ${fmt(r.requests.average)} req/s, p99 ${r.latency.p99} ms`);
    }
    console.log(
      `\n## import: ${settings.connections} concurrent clients, one lead per request, ${settings.duration} s (after 3 s warm-up)`,
    );
    await autocannon({ ...importOptions, duration: 3 });
    const before = Number((await db('leads').count<{ count: string }[]>('* as count'))[0]!.count);
    const rssBeforeImport = rssMb(pid);
    // CPU per import: steadier than the rate on a machine shared with other work.
    const cpu0 = { server: processCpuMs(pid), postgres: processFamilyCpuMs(database.postmasterPid) };
    const imp = await autocannon({ ...importOptions, duration: settings.duration });
    const cpuPerImport = (used: number) => ((used / Math.max(1, imp['2xx'])) * 1000).toFixed(0);
    const cpu = {
      server: cpuPerImport(processCpuMs(pid) - cpu0.server),
      postgres: cpuPerImport(processFamilyCpuMs(database.postmasterPid) - cpu0.postgres),
    };
    const after = Number((await db('leads').count<{ count: string }[]>('* as count'))[0]!.count);
    const leadsPerSecond = imp['2xx'] / settings.duration;
    console.log(
      `leads/s ${fmt(leadsPerSecond)} (2xx ${fmt(imp['2xx'])}, non-2xx ${imp.non2xx}, errors ${imp.errors}, timeouts ${imp.timeouts}); ` +
        `latency p50 ${imp.latency.p50} ms, p90 ${imp.latency.p90} ms, p99 ${imp.latency.p99} ms, max ${imp.latency.max} ms; ` +
        `CPU per import: server ${cpu.server} µs, Postgres ${cpu.postgres} µs; ` +
        `new leads in the database ${fmt(after - before)}; server RSS ${fmt(rssBeforeImport)} → ${fmt(rssMb(pid))} MB`,
    );
    // Requests still in flight when the measurement ends add a few leads more than it counted.
    if (after - before < imp['2xx']) console.log(`WARNING: ${imp['2xx']} successful imports but only ${after - before} new leads`);

    // ---- 1b. the duplicate check -----------------------------------------------------------
    console.log(
      `\n## import without and with DuplicateCheck=Campaign: ${settings.checkRounds} rounds each of ${settings.duration} s, taking turns`,
    );
    await autocannon({ ...importOptionsFor('?DuplicateCheck=Campaign'), duration: 3 });
    const rounds: Record<'none' | 'campaign', { rate: number; p99: number; server: number; postgres: number }[]> = {
      none: [],
      campaign: [],
    };
    for (let round = 0; round < settings.checkRounds; round++) {
      for (const [variant, query] of [
        ['none', ''],
        ['campaign', '?DuplicateCheck=Campaign'],
      ] as const) {
        const c0 = { server: processCpuMs(pid), postgres: processFamilyCpuMs(database.postmasterPid) };
        const r = await autocannon({ ...importOptionsFor(query), duration: settings.duration });
        const per = (used: number) => (used / Math.max(1, r['2xx'])) * 1000;
        rounds[variant].push({
          rate: r['2xx'] / settings.duration,
          p99: r.latency.p99,
          server: per(processCpuMs(pid) - c0.server),
          postgres: per(processFamilyCpuMs(database.postmasterPid) - c0.postgres),
        });
        if (r.non2xx > 0) console.log(`WARNING: ${variant}: ${r.non2xx} answers were not 2xx`);
      }
    }
    const checkSummary = (['none', 'campaign'] as const).map((variant) => {
      const rs = rounds[variant];
      return {
        variant,
        rate: median(rs.map((r) => r.rate)),
        p99: median(rs.map((r) => r.p99)),
        cpu: median(rs.map((r) => r.server + r.postgres)),
        server: median(rs.map((r) => r.server)),
        postgres: median(rs.map((r) => r.postgres)),
      };
    });
    console.log('| DuplicateCheck | leads/s | p99 | CPU µs per import: server + Postgres |');
    console.log('|---|---:|---:|---|');
    for (const s of checkSummary) {
      console.log(`| ${s.variant} | ${fmt(s.rate)} | ${fmt(s.p99)} ms | ${fmt(s.server)} + ${fmt(s.postgres)} = ${fmt(s.cpu)} |`);
    }
    const [none, campaign] = checkSummary as [(typeof checkSummary)[0], (typeof checkSummary)[0]];
    console.log(
      `the check costs ${(((none.rate - campaign.rate) / none.rate) * 100).toFixed(1)}% of the rate, ` +
        `${(((campaign.cpu - none.cpu) / none.cpu) * 100).toFixed(1)}% more CPU per import (target: at most 15% slower); ` +
        `load average ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
    );

    // ---- 2. bulk import ---------------------------------------------------------------------
    let bulkOk = true;
    if (settings.bulkRows > 0) {
      console.log(`\n## bulk import: one POST /api/leads/bulk of ${fmt(settings.bulkRows)} rows per format (bench/bulkRequests.ts)`);
      const target = { base, auth, serverPid: pid, postmasterPid: database.postmasterPid, db };
      bulkOk = await bulkImportTable(target, settings.bulkFormats, settings.bulkRows);
      console.log(`\nthe same with DuplicateCheck=Campaign (every row a new number):`);
      bulkOk = (await bulkImportTable(target, settings.bulkFormats, settings.bulkRows, '&DuplicateCheck=Campaign')) && bulkOk;
    }

    // ---- 3. export -------------------------------------------------------------------------
    // Only the generated leads are exported: the imported ones go first.
    await db('leads')
      .whereIn('campaign_id', db('campaigns').select('id').where({ code: BENCH_CAMPAIGN }))
      .delete();
    console.log(`\n## export: generating ${fmt(settings.leads)} leads (lcm generate's generator) ...`);
    const genStarted = Date.now();
    await generateSyntheticData(db, { calls: 0, leads: settings.leads, seed: 5, zone: BENCH_ZONE, days: 30 });
    await db.raw('VACUUM ANALYZE leads');
    const total = Number((await db('leads').count<{ count: string }[]>('* as count'))[0]!.count);
    console.log(`generated in ${((Date.now() - genStarted) / 1000).toFixed(1)} s; ${fmt(total)} leads in the table`);

    // Two baselines for "the same rows": the export's own SELECT (ids; the server names them from
    // small lookups) and the SELECT a DBA would write with every name joined in. The ratio is
    // taken against the faster of the two.
    // The export's own SELECT is the one the transcoder COPYs (src/data/exportQueries.ts).
    const lookups = await loadLeadLookups(db, {}, projectScope(['*']));
    const copyOwnSql = leadCopySql(db, {}, leadVisibilityByCampaign(lookups, 'Full'));
    const copyJoinedSql = `select l.unique_id, l.status, l.closure, l.priority, l.phone_number, l.external_key, p.name as pool,
        c.unique_id as campaign_unique_id, c.code as campaign_code, l.data, l.upload_time, l.last_modified_time,
        l.first_processed_time, ou.org_code as owner, uu.org_code as uploaded_by, mu.org_code as modified_by,
        fu.org_code as processed_by, l.closure_data
      from leads l join campaigns c on c.id = l.campaign_id join lead_pools p on p.id = l.pool_id
      left join org_units ou on ou.id = l.owner_org_unit_id left join users uu on uu.id = l.uploaded_by_user_id
      left join users mu on mu.id = l.last_modified_by_user_id left join users fu on fu.id = l.first_processed_by_user_id
      order by l.last_modified_time, l.unique_id`;
    const exportUrl = `${base}/api/simpleleads`;
    // Warm the caches of every path once.
    await runCopy(clusterUrl, copyOwnSql);
    await runCopy(clusterUrl, copyJoinedSql);
    await runExport(exportUrl, auth, pid);
    const copiesOwn: { seconds: number; bytes: number }[] = [];
    const copiesJoined: { seconds: number; bytes: number }[] = [];
    const exports: ExportRun[] = [];
    for (let i = 0; i < settings.exportRuns; i++) {
      copiesOwn.push(await runCopy(clusterUrl, copyOwnSql));
      copiesJoined.push(await runCopy(clusterUrl, copyJoinedSql));
      exports.push(await runExport(exportUrl, auth, pid));
    }
    for (const e of exports) if (e.rows !== total) console.log(`WARNING: export returned ${e.rows} rows, expected ${total}`);
    const copyOwnRate = median(copiesOwn.map((c) => total / c.seconds));
    const copyJoinedRate = median(copiesJoined.map((c) => total / c.seconds));
    const copyRate = Math.max(copyOwnRate, copyJoinedRate);
    const exportRate = median(exports.map((e) => e.rows / e.seconds));
    console.log(
      `psql COPY of the export's SELECT: ${fmt(copyOwnRate)} rows/s (median of ${copiesOwn.length}; ${fmt(copiesOwn[0]!.bytes / 1e6, 1)} MB text)`,
    );
    console.log(
      `psql COPY with every name joined: ${fmt(copyJoinedRate)} rows/s (median of ${copiesJoined.length}; ${fmt(copiesJoined[0]!.bytes / 1e6, 1)} MB text)`,
    );
    console.log(
      `/api/simpleleads JSON:        ${fmt(exportRate)} rows/s (median of ${exports.length}; ${fmt(exports[0]!.bytes / 1e6, 1)} MB), ` +
        `TTFB median ${fmt(median(exports.map((e) => e.ttfbMs)), 1)} ms`,
    );
    console.log(`ratio export / faster COPY: ${(exportRate / copyRate).toFixed(2)}×`);
    console.log(
      'server RSS during exports (MB, start → peak → end): ' +
        exports.map((e) => `${fmt(e.rss.start)} → ${fmt(e.rss.peak)} → ${fmt(e.rss.end)}`).join('; '),
    );

    console.log('\n## summary');
    console.log('| measure | result | target |');
    console.log('|---|---|---|');
    console.log(`| import, ${settings.connections} clients, leads/s | ${fmt(leadsPerSecond)} | ≥ 2,000 |`);
    console.log(`| import p99 latency | ${imp.latency.p99} ms | < 50 ms |`);
    console.log(`| /api/simpleleads rows/s (${fmt(total)} leads) | ${fmt(exportRate)} | — |`);
    console.log(`| psql COPY rows/s (export's SELECT / names joined) | ${fmt(copyOwnRate)} / ${fmt(copyJoinedRate)} | — |`);
    console.log(`| export / faster COPY | ${(exportRate / copyRate).toFixed(2)}× | ≥ 0.8× of its own SELECT |`);
    console.log(`| server RSS peak − start during export | ${fmt(Math.max(...exports.map((e) => e.rss.peak - e.rss.start)))} MB | flat |`);
    if (!bulkOk) process.exitCode = 1;
  } finally {
    await run.cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench/leads failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
