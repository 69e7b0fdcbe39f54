import { spawn, execFile, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './freePort';
import { killOnExit, removeOnExit } from './killOnExit';
import { until } from './until';

const run = promisify(execFile);

/**
 * A throwaway Redis Cluster on loopback: `masters` redis-server processes in cluster mode (and
 * `replicasPerMaster` replicas each, so a lost master fails over), joined with
 * `redis-cli --cluster create`. Every node has two free ports of its own (client and cluster
 * bus) and a folder under a temporary root; stop() kills them all and removes the folder.
 */
export interface RedisClusterNode {
  port: number;
  url: string;
  process: ChildProcess | undefined;
}

export interface RedisClusterHandle {
  nodes: RedisClusterNode[];
  /** Every node's URL, comma-separated: a REDIS_URL / REDIS_CLUSTER value. */
  urls: string;
  /** The node now serving `slot` as master. */
  masterOfSlot(slot: number): Promise<RedisClusterNode>;
  /** Kills one node with SIGKILL. */
  kill(node: RedisClusterNode): Promise<void>;
  /** Resolves once the cluster reports cluster_state:ok from a live node. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Checks every 100 ms; a redis-cli that fails (a node not up yet, or killed) counts as not yet. */
const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 100, ignoreErrors: true });

const cli = (port: number, ...args: string[]) => run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10000 });

/**
 * One cluster node on free ports. Another process may take a port between freePort() and
 * redis-server binding it (tests run side by side); a node that exits at start is started
 * again on new ports.
 */
async function startNode(root: string, nodeTimeoutMs: number): Promise<RedisClusterNode> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const busPort = await freePort();
    const dir = path.join(root, String(port));
    fs.mkdirSync(dir, { recursive: true });
    const child = killOnExit(
      spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--cluster-port',
          String(busPort),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          path.join(dir, 'nodes.conf'),
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--loglevel',
          'warning',
        ],
        { stdio: 'ignore' },
      ),
    );
    child.once('error', () => undefined);
    const exited = new Promise<'exited'>((resolve) => child.once('exit', () => resolve('exited')));
    let gone = false;
    void exited.then(() => (gone = true));
    // Stops polling once the process is gone (it will not answer any more).
    const up = until(
      `redis-server on ${port}`,
      async () => gone || (await cli(port, 'ping')).stdout.trim() === 'PONG',
      within(60_000),
    ).then(
      () => (gone ? ('exited' as const) : ('up' as const)),
      (err: Error) => err,
    );
    const outcome = await Promise.race([up, exited]);
    if (outcome === 'up') return { port, url: `redis://127.0.0.1:${port}`, process: child };
    if (outcome instanceof Error) {
      child.kill('SIGKILL');
      throw outcome;
    }
    if (attempt >= 5) throw new Error(`redis-server on ${port} exited at start ${attempt} times`);
  }
}

export async function startRedisCluster(
  options: { masters?: number; replicasPerMaster?: number; nodeTimeoutMs?: number } = {},
): Promise<RedisClusterHandle> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 0;
  const root = removeOnExit(fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-redis-cluster-')));
  const nodes: RedisClusterNode[] = [];
  const stop = async () => {
    await Promise.all(
      nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            const c = n.process;
            n.process = undefined;
            if (!c || c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) nodes.push(await startNode(root, options.nodeTimeoutMs ?? 1000));
    await run(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeout: 30000 },
    );
  } catch (err) {
    await stop();
    throw err;
  }

  const live = () => nodes.filter((n) => n.process && n.process.exitCode === null && n.process.signalCode === null);
  const waitHealthy = async (timeoutMs = 60000): Promise<void> => {
    await until(
      'the Redis Cluster to be healthy',
      async () => {
        // Every live node must agree, and each slot range must have a master that answers: right
        // after a kill the others still report ok until they notice (node timeout), so a killed
        // node still holding slots in any live node's view is not healthy yet.
        const killed = new Set(nodes.filter((n) => !live().includes(n)).map((n) => n.port));
        for (const n of live()) {
          if (!/cluster_state:ok/.test((await cli(n.port, 'cluster', 'info')).stdout)) return false;
          const view = (await cli(n.port, 'cluster', 'nodes')).stdout.split('\n').map((line) => line.trim().split(' '));
          if (
            view.some((f) => f.length >= 9 && f[2]!.split(',').includes('master') && killed.has(Number(f[1]!.split('@')[0]!.split(':')[1])))
          )
            return false;
        }
        return true;
      },
      within(timeoutMs),
    );
  };
  // A replica that has not finished its first sync has no data age to fail over with: a master
  // killed before then is never replaced. Wait until every replica's link to its master is up.
  const replicasSynced = () =>
    until(
      'the Redis Cluster replicas to sync',
      async () => {
        for (const n of live()) {
          const info = (await cli(n.port, 'info', 'replication')).stdout;
          if (/role:slave/.test(info) && !/master_link_status:up/.test(info)) return false;
        }
        return true;
      },
      within(60_000),
    );
  await waitHealthy()
    .then(replicasSynced)
    .catch(async (err) => {
      await stop();
      throw err;
    });

  return {
    nodes,
    urls: nodes.map((n) => n.url).join(','),
    async masterOfSlot(slot) {
      for (const n of live()) {
        const { stdout } = await cli(n.port, 'cluster', 'nodes').catch(() => ({ stdout: '' }));
        // <id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges...>
        for (const line of stdout.split('\n')) {
          const f = line.trim().split(' ');
          if (f.length < 9 || !f[2]!.split(',').includes('master') || f[2]!.includes('fail')) continue;
          const owns = f.slice(8).some((r) => {
            const [lo, hi] = r.split('-').map(Number);
            return slot >= lo! && slot <= (hi ?? lo!);
          });
          const port = Number(f[1]!.split('@')[0]!.split(':')[1]);
          const found = nodes.find((x) => x.port === port);
          if (owns && found) return found;
        }
      }
      throw new Error(`no master found for slot ${slot}`);
    },
    async kill(node) {
      const c = node.process;
      if (!c || c.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGKILL');
      });
      node.process = undefined;
    },
    waitHealthy,
    stop,
  };
}
