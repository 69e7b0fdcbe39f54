import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/data/db';
import { createTestApp, TestApp, testDatabaseUrl, uniq } from './testApp';
import { createWorld, World } from './world';

/**
 * The set-up line of a test file (or of one describe block). Call it where you would write
 * beforeAll/afterAll; it registers them itself:
 *
 *   const { t, w } = useTestWorld();       // the real app + a fresh World, closed after the block
 *   const t = useTestApp({ OFF_HOURS_WEIGHT: '1' });  // the app only, with extra settings
 *   const db = useTestDb();                // a knex pool on the test database only
 *
 * `t` and `w` are filled in by the harness's beforeAll, so use them inside hooks and tests,
 * not directly in a describe body. Hooks run in the order they are declared: a beforeAll
 * written after the call sees `t` and `w` ready (add the file's own records there); an
 * afterAll written after the call runs after the app is closed.
 */

/** Settings for the app (see src/config/settings.ts), or a function giving them when the block starts. */
export type TestEnv = Record<string, string> | (() => Record<string, string>);

/** The real app on the test Postgres and Redis. The clock goes back to real time after each test. */
export function useTestApp(env: TestEnv = {}): TestApp {
  const t = {} as TestApp;
  beforeAll(async () => {
    Object.assign(t, await createTestApp(typeof env === 'function' ? env() : env));
  });
  afterEach(() => t.setNow?.(undefined));
  afterAll(() => t.close?.());
  return t;
}

/** The real app (as useTestApp) plus a World: org tree, users, campaigns and accounts of its own (world.ts). */
export function useTestWorld(env: TestEnv = {}): { t: TestApp; w: World } {
  const t = useTestApp(env);
  const w = {} as World;
  beforeAll(async () => {
    Object.assign(w, await createWorld(t));
  });
  return { t, w };
}

/** A knex pool on the test database in the platform zone, destroyed after the block. */
export function useTestDb(options: { timezone?: string; poolMax?: number } = {}): Knex {
  const db = createDb({ url: testDatabaseUrl(), timezone: options.timezone ?? 'Europe/Copenhagen', poolMax: options.poolMax });
  afterAll(() => db.destroy());
  return db;
}

/**
 * A database of the block's own on the test server, made (and migrated, unless `migrate` is
 * false) before the block and dropped after it: for work whose effects reach beyond its own rows
 * (partition maintenance moves whole months), or whose rows other files' work would change (a
 * lifecycle sweep of the shared database moves every due lead).
 */
export function useOwnDatabase(options: { migrate?: boolean; timezone?: string } = {}): { db: Knex; url: string } {
  const timezone = options.timezone ?? 'Europe/Copenhagen';
  const name = `own_${uniq().replace(/-/g, '')}`;
  const url = testDatabaseUrl().replace(/\/[^/]+$/, `/${name}`);
  const own = { db: undefined as unknown as Knex, url };
  let admin: Knex;
  beforeAll(async () => {
    admin = createDb({ url: testDatabaseUrl(), timezone });
    await admin.raw(`create database ${name}`);
    own.db = createDb({ url, timezone, poolMax: 5 });
    if (options.migrate !== false) await migrateLatest(own.db);
  });
  afterAll(async () => {
    await own.db?.destroy();
    await admin.raw(`drop database if exists ${name} with (force)`);
    await admin.destroy();
  });
  return own;
}
