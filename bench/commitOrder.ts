/**
 * What ordering live events costs single-lead imports, run on demand:
 *   npm run bench:commit-order [-- --connections 8 --seconds 5 --rounds 5]
 *
 * Each transaction that writes events lists them for the sequencing rounds that number them
 * (docs/decisions.md, "Live events"; a statement trigger on hook_events). This measures
 * POST /api/leads (one lead per request, one transaction, one `lead.created` event) with
 * autocannon on `--connections` connections against `lcm serve` (requests counted in Redis, as in
 * production), alternately with that trigger on and off (`hook_events_written` disabled: events
 * are stored but never numbered), `--rounds` rounds of `--seconds` each after a warm-up, and
 * reports the medians of each and the load average. Then the same without HTTP:
 * `--connections` connections each committing one-event transactions in a loop.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer, BENCH_CAMPAIGN } from './benchWorld';
import { fmt, freePort, median, numberOption } from './support';

const CONNECTIONS = numberOption('connections', 8);
const SECONDS = numberOption('seconds', 5);
const ROUNDS = numberOption('rounds', 5);

async function main(): Promise<void> {
  const run = benchRun('commit-order');
  try {
    const { db, url } = await startBenchDatabase(run, CONNECTIONS);
    const redisPort = await freePort();
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    run.cleanups.push(() => redis.kill('SIGTERM'));
    const auth = await loadBenchWorld(db);
    const { base } = await startBenchServer(run, url, { REDIS_URL: `redis://127.0.0.1:${redisPort}` });
    let n = 0;
    const importOptions = (): autocannon.Options => ({
      url: `${base}/api/leads`,
      method: 'POST',
      connections: CONNECTIONS,
      duration: SECONDS,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      // A new external key per request: every request creates a lead.
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({
              CampaignCode: BENCH_CAMPAIGN,
              Data: { Name: 'Åse Ærø', Telefon: '+45 12 34 56 78', Email: 'aase@example.com', Customer: `K-${++n}` },
            }),
          }),
        },
      ],
    });
    const numbering = async (on: boolean) =>
      db.raw(`alter table hook_events ${on ? 'enable' : 'disable'} trigger hook_events_written`).then(() => undefined);
    await autocannon({ ...importOptions(), duration: 3 });
    const results: Record<'on' | 'off', { rate: number; p50: number; p99: number }[]> = { on: [], off: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, and the order swapped every round, so a change of the machine's load hits both.
      for (const mode of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        await numbering(mode === 'on');
        const r = await autocannon(importOptions());
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`round ${round} ${mode}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
        results[mode].push({ rate: r['2xx'] / SECONDS, p50: r.latency.p50, p99: r.latency.p99 });
        console.log(
          `round ${round + 1} numbering ${mode}: ${fmt(r['2xx'] / SECONDS)} leads/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms`,
        );
      }
    }
    // The same without HTTP: nothing but one-event transactions committing on every connection.
    const commits: Record<'on' | 'off', number[]> = { on: [], off: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        await numbering(mode === 'on');
        let committed = 0;
        const end = performance.now() + SECONDS * 1000;
        await Promise.all(
          Array.from({ length: CONNECTIONS }, async () => {
            while (performance.now() < end) {
              await db.transaction((trx) =>
                trx.raw(
                  `insert into hook_events (type, occurred_time, resource_id, snapshot) values ('lead.created', now(), 'bench', '{}')`,
                ),
              );
              committed += 1;
            }
          }),
        );
        commits[mode].push(committed / SECONDS);
        console.log(`round ${round + 1} numbering ${mode}: ${fmt(committed / SECONDS)} one-event commits/s`);
      }
    }
    await numbering(true);
    const m = (mode: 'on' | 'off', key: 'rate' | 'p50' | 'p99') => median(results[mode].map((r) => r[key]));
    const c = (mode: 'on' | 'off') => median(commits[mode]);
    const [load1, load5] = os.loadavg();
    console.log(
      [
        `POST /api/leads, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s each way (medians):`,
        `  numbering on:  ${fmt(m('on', 'rate'))} leads/s, p50 ${m('on', 'p50')} ms, p99 ${m('on', 'p99')} ms`,
        `  numbering off: ${fmt(m('off', 'rate'))} leads/s, p50 ${m('off', 'p50')} ms, p99 ${m('off', 'p99')} ms`,
        `  throughput with numbering: ${fmt((m('on', 'rate') / m('off', 'rate') - 1) * 100, 1)}%`,
        `one-event transactions straight to Postgres, ${CONNECTIONS} connections (medians):`,
        `  numbering on: ${fmt(c('on'))} commits/s, off: ${fmt(c('off'))} commits/s (${fmt((c('on') / c('off') - 1) * 100, 1)}%)`,
        `load average ${load1!.toFixed(2)} (1 min), ${load5!.toFixed(2)} (5 min); ${os.cpus().length} CPUs`,
      ].join('\n'),
    );
  } finally {
    await run.cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
