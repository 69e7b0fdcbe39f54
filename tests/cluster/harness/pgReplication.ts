import { spawn, execFile, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../harness/freePort';
import { killOnExit, removeOnExit } from '../../harness/killOnExit';
import { until } from '../../harness/until';

const run = promisify(execFile);

/**
 * A Postgres primary and a streaming replica from the operating system's PostgreSQL server
 * packages (Debian's `postgresql`, installed by scripts/test-cluster.sh): initdb, a primary on a
 * free loopback port, `pg_basebackup -R` for the replica, both in a temporary folder. Postgres
 * refuses to run as root, so as root the servers run as the `postgres` system user the package
 * creates. stop() kills both and removes the folder.
 */

interface PgServer {
  port: number;
  url: string;
  dataDir: string;
  /** Fast shutdown (as an operator stopping it would). */
  stop(): Promise<void>;
  start(): Promise<void>;
  running(): boolean;
}

export interface PgReplication {
  primary: PgServer;
  replica: PgServer;
  /** psql-free SQL against one server's `lcm` database. */
  query<T = Record<string, unknown>>(server: PgServer, sql: string, params?: unknown[]): Promise<T[]>;
  /** Waits until the replica has replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The newest PostgreSQL server binaries of the OS packages. */
function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base)
    ? fs
        .readdirSync(base)
        .filter((v) => fs.existsSync(path.join(base, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error(`no PostgreSQL server in ${base}; scripts/test-cluster.sh installs Debian's postgresql package`);
  return path.join(base, versions[0]!, 'bin');
}

const DATABASE = 'lcm';

export async function startPgReplication(): Promise<PgReplication> {
  const bin = postgresBinDir();
  const root = removeOnExit(fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-pg-replication-')));
  fs.chmodSync(root, 0o755);
  const asRoot = os.userInfo().uid === 0;
  let ids: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: g } = await run('id', ['-g', 'postgres']);
    ids = { uid: Number(stdout.trim()), gid: Number(g.trim()) };
    fs.chownSync(root, ids.uid, ids.gid);
    // The postgres user must reach the folder: every ancestor needs o+x.
    for (let dir = path.dirname(root); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const mode = fs.statSync(dir).mode;
      if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o001);
    }
  }
  const exec = (file: string, args: string[]) => run(path.join(bin, file), args, { ...(ids ?? {}), timeout: 120_000, cwd: root });

  const children: ChildProcess[] = [];
  const server = (name: string, port: number): PgServer => {
    const dataDir = path.join(root, name);
    let child: ChildProcess | undefined;
    let log = '';
    const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
    const start = async () => {
      log = '';
      child = spawn(
        path.join(bin, 'postgres'),
        ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${root}`, '-c', 'fsync=off'],
        { ...(ids ?? {}), stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(killOnExit(child));
      child.stderr!.on('data', (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
      await until(
        `postgres ${name} to accept connections`,
        async () => {
          if (!running()) throw new Error(`postgres ${name} exited: ${log}`);
          const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
          const ok = await client.connect().then(
            () => true,
            () => false,
          );
          await client.end().catch(() => undefined);
          return ok;
        },
        { timeoutMs: 60_000, intervalMs: 100, detail: () => log },
      );
    };
    const stop = async () => {
      const c = child;
      if (!c || !running()) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGINT');
      });
    };
    return { port, url: `postgres://postgres@127.0.0.1:${port}/${DATABASE}`, dataDir, start, stop, running };
  };

  const primary = server('primary', await freePort());
  const replica = server('replica', await freePort());
  const killAll = async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    // Trust on loopback: a throwaway cluster on a private port, reachable only from this host.
    await exec('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8']);
    fs.appendFileSync(path.join(primary.dataDir, 'postgresql.conf'), '\nwal_level = replica\nmax_wal_senders = 5\nhot_standby = on\n');
    await primary.start();
    const admin = new pg.Client({ host: '127.0.0.1', port: primary.port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    await admin.query(`create database ${DATABASE}`);
    await admin.end();
    // -R writes standby.signal and primary_conninfo; -X stream copies the WAL it needs.
    await exec('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      replica.dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await replica.start();
  } catch (err) {
    await killAll();
    throw err;
  }

  const query = async <T>(s: PgServer, sql: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ host: '127.0.0.1', port: s.port, user: 'postgres', database: DATABASE });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };

  return {
    primary,
    replica,
    query,
    async caughtUp(timeoutMs = 30_000) {
      const { lsn } = (await query<{ lsn: string }>(primary, 'select pg_current_wal_lsn()::text as lsn'))[0]!;
      await until(
        'the replica to catch up',
        async () => (await query<{ done: boolean }>(replica, 'select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [lsn]))[0]!.done,
        { timeoutMs },
      );
    },
    stop: killAll,
  };
}
