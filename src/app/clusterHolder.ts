import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { processAlive } from './embeddedPostgres';

/**
 * Who holds the embedded cluster of a data folder: a small JSON file beside the folder,
 * `<data folder>.running.json` (docs/cli.md, "Which database"). `lcm serve` holds the cluster
 * for as long as it runs and shares it: the other `lcm` commands use its database instead of
 * starting a second Postgres on the same folder. A one-shot command holds it briefly and does
 * not share it, since it stops the cluster when it is done. A file whose process is gone, or
 * whose server no longer accepts connections, is stale: it is ignored and replaced.
 *
 * Postgres's own lock (postmaster.pid) is what keeps two clusters off one folder; this file
 * only turns that into a clear message or a shared database.
 */
interface ClusterHolder {
  pid: number;
  /** `serve`, `load`, `account create`, ... */
  command: string;
  /** True for a server: other commands may use its database while it runs. */
  shared: boolean;
  /** The database URL, once the cluster accepts connections. */
  url?: string;
  /** Set when the holder has begun to stop the cluster. */
  stopping?: boolean;
  startedAt: string;
}

function holderFile(dataDir: string): string {
  return `${path.resolve(dataDir)}.running.json`;
}

/** What opening the folder's cluster found: ours to start, or a running server's database to use. */
export type ClusterClaim =
  | { kind: 'claimed'; publish(url: string): void; stopping(): void; release(): void }
  | { kind: 'server'; holder: ClusterHolder & { url: string } };

class ClusterBusyError extends Error {}

const WAIT_FOR_SERVER_MS = 120_000;

/**
 * Claims the cluster of `dataDir` for `command`, or finds the running server whose database
 * to use. Throws ClusterBusyError when another command holds it (or, for `serve`, when a
 * server already runs).
 */
export async function claimCluster(dataDir: string, command: string, shared: boolean): Promise<ClusterClaim> {
  const file = holderFile(dataDir);
  const deadline = Date.now() + WAIT_FOR_SERVER_MS;
  let unreadableSince: number | undefined;
  for (;;) {
    const mine: ClusterHolder = { pid: process.pid, command, shared, startedAt: new Date().toISOString() };
    if (createExclusive(file, mine)) return claimed(file, mine);

    const holder = read(file);
    if (holder === undefined) {
      // Files are written whole (createExclusive, replace), so this one is not ours to wait for long.
      unreadableSince ??= Date.now();
      if (Date.now() - unreadableSince > 2000) fs.rmSync(file, { force: true });
      else await sleep(100);
      continue;
    }
    if (!processAlive(holder.pid)) {
      // Its process is gone: stale, unless it changed meanwhile.
      removeIfUnchanged(file, holder);
      continue;
    }
    if (!holder.shared) {
      throw new ClusterBusyError(
        `the embedded database in ${path.resolve(dataDir)} is in use by "lcm ${holder.command}" (pid ${holder.pid}); run this again when it has finished`,
      );
    }
    if (shared && !holder.stopping) {
      throw new ClusterBusyError(
        `an lcm server (pid ${holder.pid}) already runs on the embedded database in ${path.resolve(dataDir)}; ` +
          'stop it first, or give this one its own EMBEDDED_DATA_DIR and EMBEDDED_PG_PORT',
      );
    }
    if (holder.url === undefined || holder.stopping) {
      // A server is starting or stopping the cluster: wait for it, then use its database or start our own.
      if (Date.now() > deadline)
        throw new ClusterBusyError(
          `the lcm server (pid ${holder.pid}) has not ${holder.stopping ? 'stopped' : 'started'} the embedded database in ${path.resolve(dataDir)} in time`,
        );
      await sleep(250);
      continue;
    }
    const answer = await probe(holder.url);
    if (answer === 'refused') {
      // Its Postgres is gone although the process lives on: stale as well.
      removeIfUnchanged(file, holder);
      continue;
    }
    if (answer === 'not-now' && Date.now() < deadline) {
      await sleep(250);
      continue;
    }
    if (answer !== 'ok') {
      throw new ClusterBusyError(
        `the lcm server (pid ${holder.pid}) holds the embedded database in ${path.resolve(dataDir)}, but it does not answer: ${answer === 'not-now' ? 'still starting or stopping' : answer.message}`,
      );
    }
    return { kind: 'server', holder: holder as ClusterHolder & { url: string } };
  }
}

function claimed(file: string, mine: ClusterHolder): ClusterClaim {
  // A process that ends without releasing (an uncaught error) still removes its claim.
  const releaseNow = () => removeIfUnchanged(file, mine);
  process.on('exit', releaseNow);
  return {
    kind: 'claimed',
    publish(url) {
      mine.url = url;
      replace(file, mine);
    },
    stopping() {
      mine.stopping = true;
      replace(file, mine);
    },
    release() {
      process.removeListener('exit', releaseNow);
      releaseNow();
    },
  };
}

/** Writes the whole file under a temporary name, then links it into place: it appears complete or not at all. */
function createExclusive(file: string, holder: ClusterHolder): boolean {
  const tmp = writeTemporary(file, holder);
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

function replace(file: string, holder: ClusterHolder): void {
  fs.renameSync(writeTemporary(file, holder), file);
}

function writeTemporary(file: string, holder: ClusterHolder): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  // The URL carries the cluster's password.
  fs.writeFileSync(tmp, JSON.stringify(holder, null, 2) + '\n', { mode: 0o600 });
  return tmp;
}

function read(file: string): ClusterHolder | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ClusterHolder>;
    return typeof parsed.pid === 'number' && typeof parsed.command === 'string' ? (parsed as ClusterHolder) : undefined;
  } catch {
    return undefined;
  }
}

function removeIfUnchanged(file: string, holder: ClusterHolder): void {
  const current = read(file);
  if (current?.pid === holder.pid && current.startedAt === holder.startedAt) fs.rmSync(file, { force: true });
}

/** Whether a server's database takes connections: `refused` means nobody listens any more. */
async function probe(url: string): Promise<'ok' | 'refused' | 'not-now' | Error> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return 'ok';
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ECONNREFUSED') return 'refused';
    // 57P03: the database system is starting up or shutting down.
    if (code === '57P03') return 'not-now';
    return err as Error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
