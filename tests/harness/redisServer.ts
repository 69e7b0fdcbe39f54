import { spawn, ChildProcess } from 'node:child_process';
import net from 'node:net';
import { until } from './until';

/** A throwaway redis-server on loopback, without persistence. Tests can stop and restart it, or freeze it. */
export interface RedisServer {
  port: number;
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered until `resume`. */
  pause(): void;
  resume(): void;
}

/** Resolves true once a connection to the port is accepted (and closes it); rejects with the connection's error. */
function connects(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', (err) => {
      socket.destroy();
      reject(err);
    });
  });
}

export async function startRedisServer(port: number): Promise<RedisServer> {
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
      { stdio: 'ignore' },
    );
    const failed = new Promise<never>((_, reject) =>
      child!.once('error', (err) => reject(new Error(`cannot start redis-server: ${err.message}`))),
    );
    const listening = until(`redis-server to listen on ${port}`, () => connects(port), {
      timeoutMs: 10_000,
      intervalMs: 50,
      ignoreErrors: true,
    });
    await Promise.race([listening, failed]);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  };
  const signal = (name: NodeJS.Signals) => {
    if (!child || child.exitCode !== null) throw new Error('redis-server is not running');
    child.kill(name);
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, start, stop, pause: () => signal('SIGSTOP'), resume: () => signal('SIGCONT') };
}
