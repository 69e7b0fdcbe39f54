import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { benchRun, loadBenchWorld, startBenchDatabase, startBenchServer, BENCH_CAMPAIGN } from '../benchWorld';
import { freePort } from '../support';
import { startRedisServer } from '../../tests/harness/redisServer';

async function main() {
  const run = benchRun('prof');
  const dir = '/tmp/small-prof/out';
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  try {
    const database = await startBenchDatabase(run, 4);
    const auth = await loadBenchWorld(database.db);
    const redis = await startRedisServer(await freePort());
    run.cleanups.push(() => redis.stop());
    const which = process.argv[2] ?? 'import';
    const server = await startBenchServer(run, database.url, { LOG_LEVEL: 'info', REDIS_URL: redis.url, WEB_CONCURRENCY: '1', HOOKS_WORKER: 'false', MAINTENANCE_INTERVAL_MS: '0' }, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const lead = JSON.stringify({ CampaignCode: BENCH_CAMPAIGN, Data: { Name: 'Bench Lead', Telefon: '+45 12 34 56 78', Customer: 'C-1' } });
    const opts = which === 'import'
      ? { url: server.base + '/api/leads', method: 'POST' as const, headers: { authorization: auth, 'content-type': 'application/json' }, body: lead }
      : { url: server.base + '/api/myaccount', headers: { authorization: auth } };
    const r = await autocannon({ ...opts, connections: 32, duration: 10 });
    console.log(which, r.requests.average, 'req/s', r.non2xx, 'non2xx');
  } finally {
    await run.cleanup();
  }
  await new Promise((r) => setTimeout(r, 2000));
  console.log(fs.readdirSync(dir));
}
void main();
