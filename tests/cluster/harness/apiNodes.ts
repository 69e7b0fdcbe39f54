import { spawn, ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../harness/freePort';
import { killGroup, killOnExit } from '../../harness/killOnExit';

const ROOT = path.resolve(__dirname, '../../..');

/** One `lcm serve` (a supervisor and its worker processes) on a free loopback port. */
export interface ApiNode {
  name: string;
  url: string;
  /** The supervisor's process id, which is also the process group of every worker it forks. */
  pid: number;
  output(): string;
  /** The process has not exited (it neither crashed nor was stopped). */
  running(): boolean;
  stop(): Promise<void>;
  /** `kill -9`: the process ends at once, nothing of it runs any more (resolves once it is gone). */
  kill(): Promise<void>;
}

/**
 * Starts `node bin/lcm.js serve` (the real entry point) with `env` over the test process's
 * environment; resolves once it listens. Its output is kept for failure messages.
 */
export async function startApiNode(name: string, env: Record<string, string>): Promise<ApiNode> {
  const port = await freePort();
  const child: ChildProcess = killOnExit(
    spawn(process.execPath, [path.join(ROOT, 'bin/lcm.js'), 'serve'], {
      cwd: ROOT,
      env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own: killing the node kills its supervisor and every worker at once.
      detached: true,
    }),
  );
  let out = '';
  const keep = (c: Buffer) => (out = (out + c.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not start within 120 s:\n${out}`)), 120_000);
      const onData = () => {
        if (/listening on/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited with ${code}:\n${out}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const kill = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      killGroup(child);
    });
  const running = () => child.exitCode === null && child.signalCode === null;
  return { name, url: `http://127.0.0.1:${port}`, pid: child.pid!, output: () => out, running, stop, kill };
}

/** A client that sends each request to the next node in turn, as a round-robin load balancer would. */
export function roundRobin(nodes: ApiNode[]) {
  let next = 0;
  return {
    fetch(pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
      const node = nodes[next++ % nodes.length]!;
      return fetch(node.url + pathAndQuery, init);
    },
  };
}
