import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Express } from 'express';
import { createDb, migrateLatest } from '../../src/data/db';
import { loadSettings, Settings } from '../../src/config/settings';
import { createLogger } from '../../src/config/logger';
import { composeApp, ComposedApp } from '../../src/app/compose';
import { loadNdjson, LoadSummary } from '../../src/ingest/loader/loadNdjson';

/**
 * The real app on the harness's Postgres and Redis. Each test file makes its own (one pool,
 * one Redis client) and its own records with unique values, so files never depend on each
 * other or on a clean database. Test files get one through `useTestApp`/`useTestWorld`
 * (useTestWorld.ts), which also close it.
 */
export interface TestApp {
  app: Express;
  db: Knex;
  composed: ComposedApp;
  settings: Settings;
  /** The app's log lines (pino JSON) at the LOG_LEVEL of the settings (`silent` by default: none). */
  logs: string[];
  /** Loads records through the real loader (one transaction), e.g. `load({ type: 'orgUnit', ... })`. */
  load(...records: Record<string, unknown>[]): Promise<LoadSummary>;
  /** Moves the injected clock; undefined = real time. */
  setNow(date: Date | undefined): void;
  /** Serves the app on a free loopback port, for real sockets (browsers, concurrent clients, disconnects). */
  listen(): Promise<ListeningApp>;
  /** Closes the servers from `listen` that are still open, then the app, its pool and its Redis client. */
  close(): Promise<void>;
}

export interface ListeningApp {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  server: http.Server;
  /** Drops open connections and stops listening; closing twice is harmless. */
  close(): Promise<void>;
}

/** The database URL of the harness's Postgres (set by globalSetup.ts for every test worker). */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set; run the tests through jest (its global setup starts Postgres)');
  return url;
}

/** The test database with an application name that marks one app's connections in pg_stat_activity. */
export function databaseUrlNamed(name: string): string {
  const url = new URL(testDatabaseUrl());
  url.searchParams.set('application_name', name);
  return url.toString();
}

async function listenOnLoopback(app: Express): Promise<ListeningApp> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}

/** The settings every test app runs with (the shared test Postgres and Redis), `env` on top. */
export function testSettings(env: Record<string, string> = {}) {
  return loadSettings({
    DATABASE_URL: testDatabaseUrl(),
    REDIS_URL: process.env.TEST_REDIS_URL,
    LOG_LEVEL: 'silent',
    AUTH_CACHE_TTL_MS: '0',
    EXPORT_POOL_MAX: '5',
    // Generous for a machine busy with other suites (a new connection can take seconds there);
    // the admission tests set their own limits and timeouts.
    EXPORT_ACQUIRE_TIMEOUT_MS: '30000',
    EXPORT_MAX_CONCURRENT: '20',
    EXPORT_MAX_PER_ACCOUNT: '20',
    // Test files send many wrong credentials from one address; the login-limit test sets its own.
    LOGIN_FAILURES_PER_ADDRESS: '1000000',
    LOGIN_FAILURES_PER_USER: '1000000',
    ...env,
  });
}

export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const settings = testSettings(env);
  // Five connections unless the test sets DB_POOL_MAX (a small pool is how the admission tests load it).
  const poolMax = env.DB_POOL_MAX === undefined ? 5 : settings.DB_POOL_MAX;
  const db = createDb({
    url: settings.DATABASE_URL!,
    timezone: settings.PLATFORM_TIMEZONE,
    poolMax,
    acquireTimeoutMs: settings.DB_ACQUIRE_TIMEOUT_MS,
  });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger(settings.LOG_LEVEL, destination);
  let now: Date | undefined;
  const composed = await composeApp({ settings, db, logger, clock: () => now ?? new Date() });
  const servers: ListeningApp[] = [];
  return {
    app: composed.app.express,
    db,
    composed,
    settings,
    logs,
    load: (...records) => loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: settings.PLATFORM_TIMEZONE }),
    setNow: (d) => {
      now = d;
    },
    async listen() {
      const listening = await listenOnLoopback(composed.app.express);
      servers.push(listening);
      return listening;
    },
    async close() {
      await Promise.all(servers.map((s) => s.close()));
      await composed.close();
      await db.destroy();
    },
  };
}

/** A short unique suffix for names that must not collide across tests. */
export function uniq(prefix = ''): string {
  return `${prefix}${randomUUID().slice(0, 8)}`;
}

export function basicAuth(username: string, password: string): string {
  return 'Basic ' + Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
}

/**
 * A database of the test file's own on the harness's Postgres, migrated, dropped by `drop`.
 * For files that run hook delivery workers: the job queue lives in the database, and workers
 * of files running at the same time would otherwise take (and, with their own settings and
 * clocks, mishandle) each other's jobs.
 */
export async function createOwnDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const dbName = `lcm_test_${name.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}`;
  const admin = createDb({ url: testDatabaseUrl(), timezone: 'Europe/Copenhagen', poolMax: 1 });
  try {
    await admin.raw(`drop database if exists "${dbName}" with (force)`);
    await admin.raw(`create database "${dbName}"`);
  } finally {
    await admin.destroy();
  }
  const base = new URL(testDatabaseUrl());
  base.pathname = `/${dbName}`;
  const url = base.toString();
  const db = createDb({ url, timezone: 'Europe/Copenhagen', poolMax: 2 });
  try {
    await migrateLatest(db);
  } finally {
    await db.destroy();
  }
  return {
    url,
    async drop() {
      const dropper = createDb({ url: testDatabaseUrl(), timezone: 'Europe/Copenhagen', poolMax: 1 });
      try {
        await dropper.raw(`drop database if exists "${dbName}" with (force)`);
      } finally {
        await dropper.destroy();
      }
    },
  };
}
