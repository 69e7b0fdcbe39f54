import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSettings, Settings } from '../config/settings';
import { configurePhoneRegion, configurePlatformZone } from '../config/platform';
import { createDb, migrateLatest } from '../data/db';
import { pendingMigrations } from '../data/migrations';
import { startEmbeddedPostgres } from './embeddedPostgres';
import { claimCluster } from './clusterHolder';
import type { CliContext } from '../cli/context';

export interface OpenOptions {
  /** false: do not migrate the embedded database on opening (`migrate` and `serve` do it themselves). */
  migrate?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The command, for the record of who holds the embedded cluster (`load`, `account create`). */
  command?: string;
  /** `lcm serve`: holds the embedded cluster for as long as it runs and lets other commands use it. */
  server?: boolean;
}

/**
 * Opens the context of an `lcm` command: DATABASE_URL; else the database of the `lcm serve`
 * that runs on the embedded data folder; else the embedded cluster, started here and stopped
 * by `close` (docs/cli.md, "Which database").
 */
export async function openCliContext(options: OpenOptions = {}): Promise<CliContext> {
  const settings = loadSettings(options.env ?? process.env);
  configurePlatformZone(settings.PLATFORM_TIMEZONE);
  configurePhoneRegion(settings.DEFAULT_PHONE_REGION);
  const database = settings.DATABASE_URL !== undefined ? external(settings.DATABASE_URL) : await embedded(settings, options);
  const db = createDb({
    url: database.url,
    timezone: settings.PLATFORM_TIMEZONE,
    poolMax: settings.DB_POOL_MAX,
    acquireTimeoutMs: settings.DB_ACQUIRE_TIMEOUT_MS,
    log: { warn: warnOnStderr },
  });
  try {
    if (options.migrate !== false && database.embedded) await migrateLatest(db);
    // DATABASE_URL is migrated by `lcm migrate` or `lcm serve` only (docs/cli.md, "lcm migrate"):
    // said in one line, rather than as the first query's "relation ... does not exist".
    if (options.migrate !== false && !database.embedded) {
      const pending = await pendingMigrations(db);
      if (pending.length > 0) {
        const which = pending.length === 1 ? `migration ${pending[0]} is` : `${pending.length} migrations (${pending[0]}, ...) are`;
        throw new Error(`the database of DATABASE_URL is not up to date: ${which} not applied; run lcm migrate first`);
      }
    }
  } catch (err) {
    await db.destroy();
    await database.stop();
    throw err;
  }
  return {
    settings,
    db,
    embedded: database.embedded,
    freshCluster: database.freshCluster,
    async close() {
      await db.destroy();
      await database.stop();
    },
  };
}

interface Database {
  url: string;
  embedded: boolean;
  freshCluster: boolean;
  stop(): Promise<void>;
}

function external(url: string): Database {
  return { url, embedded: false, freshCluster: false, stop: () => Promise.resolve() };
}

async function embedded(settings: Settings, options: OpenOptions): Promise<Database> {
  const dataDir = path.resolve(settings.EMBEDDED_DATA_DIR);
  assertWritableFolder(path.dirname(dataDir));
  const claim = await claimCluster(dataDir, options.command ?? 'lcm', options.server === true);
  // A running server's database: used, never stopped, by this command.
  if (claim.kind === 'server') return { url: claim.holder.url, embedded: true, freshCluster: false, stop: () => Promise.resolve() };

  const freshCluster = !fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  let cluster;
  try {
    cluster = await startEmbeddedPostgres({ dataDir, port: settings.EMBEDDED_PG_PORT, database: 'lcm', persistent: true });
  } catch (err) {
    claim.release();
    throw err;
  }
  claim.publish(cluster.url);
  return {
    url: cluster.url,
    embedded: true,
    freshCluster,
    async stop() {
      // Marked, stopped, released: a command arriving meanwhile waits for the cluster to be
      // down instead of being sent to a database that is going away.
      claim.stopping();
      try {
        await cluster.stop();
      } finally {
        claim.release();
      }
    },
  };
}

/**
 * The folder that holds the embedded data folder (and the record of who holds it) must be one
 * this user may write: a clear reason at once instead of a failure deep inside initdb.
 */
function assertWritableFolder(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new Error(
      `the embedded database needs a folder this user (${os.userInfo().username}) can write, and ${dir} is not one; ` +
        'set EMBEDDED_DATA_DIR to a writable folder, or DATABASE_URL to a Postgres server',
    );
  }
}

/** knex warnings on stderr, one line each; a failed connection is the command's own error, reported once. */
function warnOnStderr(message: unknown): void {
  const text = String(message);
  if (text.startsWith('Acquire connection error')) return;
  process.stderr.write(`lcm: warning: ${text.split('\n')[0]}\n`);
}
