import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../config/logger';
import { isWorkerMessage, type WorkerMessage } from './workerMessages';
import { answerMetricsRequests } from './clusterMetrics';

/**
 * The processes of `lcm serve` (docs/architecture.md, "Processes"): HTTP workers that share the
 * listening port, and one jobs process for the background work. The supervisor (the cluster's
 * primary) forks them, restarts one that dies, answers their metrics requests with every
 * process's figures, and stops them all on shutdown. It serves nothing itself.
 */

export type WorkerRole = 'http' | 'jobs';

/** The environment variable that tells a forked process its role. */
export const ROLE_VARIABLE = 'LCM_WORKER_ROLE';

export interface SupervisorOptions {
  httpWorkers: number;
  /** Start the jobs process (hook delivery, lifecycle sweep, partition maintenance). */
  jobs: boolean;
  /** PORT; 0 lets the first HTTP worker pick one, which the others then share. */
  port: number;
  /** What every worker gets in its environment on top of this process's (the database URL). */
  env: Record<string, string>;
  /** SHUTDOWN_GRACE_MS: how long a worker may take to drain on shutdown. */
  graceMs: number;
  logger: Logger;
}

interface Member {
  role: WorkerRole;
  startedAt: number;
  /** Settles when the worker is up (listening, or the jobs process ready), or fails to be. */
  started: Promise<void>;
}

/** A worker that lived shorter than this before it died counts as failing to start. */
const QUICK_EXIT_MS = 10_000;
/** The longest wait before a replacement is forked (a worker that keeps dying at start). */
const MAX_RESTART_DELAY_MS = 4_000;
/** What stopping waits beyond the grace period before it kills the workers left. */
const STOP_MARGIN_MS = 5_000;

export class Supervisor {
  private readonly members = new Map<Worker, Member>();
  private readonly quickExits: Record<WorkerRole, number> = { http: 0, jobs: 0 };
  private readonly restarts = new Set<NodeJS.Timeout>();
  private stopping = false;
  private port: number;
  private readonly stopAnswering: () => void;

  constructor(private readonly options: SupervisorOptions) {
    this.port = options.port;
    this.stopAnswering = answerMetricsRequests();
    cluster.on('exit', this.onExit);
  }

  /** The port the HTTP workers share (known once start has resolved). */
  get listeningPort(): number {
    return this.port;
  }

  /** Processes running now, by role (for tests and the start-up line). */
  count(role: WorkerRole): number {
    return [...this.members.values()].filter((m) => m.role === role).length;
  }

  /**
   * Forks every worker and resolves once all are up. The first HTTP worker goes alone: with
   * PORT=0 it picks the port the others then listen on. Rejects with the first worker's
   * reason when one cannot start (the port is taken, a bad setting), after stopping the rest.
   */
  async start(): Promise<void> {
    try {
      await this.fork('http').started;
      const rest: Promise<void>[] = [];
      for (let i = 1; i < this.options.httpWorkers; i++) rest.push(this.fork('http').started);
      if (this.options.jobs) rest.push(this.fork('jobs').started);
      await Promise.all(rest);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Stops every worker: each drains (SIGTERM) within the grace period, then is killed. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.restarts) clearTimeout(timer);
    this.restarts.clear();
    const exits = [...this.members.keys()].map((worker) => {
      const exited = new Promise<void>((resolve) => {
        if (worker.isDead()) resolve();
        else worker.once('exit', () => resolve());
      });
      worker.process.kill('SIGTERM');
      return exited;
    });
    const deadline = setTimeout(() => {
      for (const worker of this.members.keys()) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, this.options.graceMs + STOP_MARGIN_MS);
    await Promise.all(exits);
    clearTimeout(deadline);
    cluster.off('exit', this.onExit);
    this.stopAnswering();
  }

  private fork(role: WorkerRole): { worker: Worker; started: Promise<void> } {
    const worker = cluster.fork({ ...this.options.env, [ROLE_VARIABLE]: role, PORT: String(this.port) });
    const started = new Promise<void>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if (!isWorkerMessage(message)) return;
        const settled = this.settleStart(role, message);
        if (settled === undefined) return;
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        if (settled instanceof Error) reject(settled);
        else resolve();
      };
      const onExit = (code: number | null, signal: string | null) => {
        worker.off('message', onMessage);
        reject(new Error(`the ${role} worker exited before it was up (${signal ?? `exit code ${code}`})`));
      };
      worker.on('message', onMessage);
      worker.once('exit', onExit);
    });
    // A replacement's failure is handled by onExit; an unwatched rejection must not end this process.
    started.catch(() => undefined);
    this.members.set(worker, { role, startedAt: Date.now(), started });
    return { worker, started };
  }

  /** A start-up message's outcome: undefined while the worker is still starting. */
  private settleStart(role: WorkerRole, message: WorkerMessage): Error | true | undefined {
    if (message.type === 'failed') return new Error(message.reason);
    if (role === 'http' && message.type === 'listening') {
      this.port = message.port;
      return true;
    }
    if (role === 'jobs' && message.type === 'ready') return true;
    return undefined;
  }

  private readonly onExit = (worker: Worker, code: number | null, signal: string | null): void => {
    const member = this.members.get(worker);
    if (!member) return;
    this.members.delete(worker);
    if (this.stopping) return;
    const lived = Date.now() - member.startedAt;
    this.quickExits[member.role] = lived < QUICK_EXIT_MS ? this.quickExits[member.role] + 1 : 0;
    const delay = this.quickExits[member.role] <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** this.quickExits[member.role]);
    this.options.logger.warn(
      { role: member.role, pid: worker.process.pid, code, signal, restartInMs: delay },
      `${member.role} worker ended unexpectedly; starting another`,
    );
    const timer = setTimeout(() => {
      this.restarts.delete(timer);
      if (this.stopping) return;
      this.fork(member.role).started.catch((err: unknown) =>
        this.options.logger.warn({ role: member.role, err }, `a replacement ${member.role} worker failed to start`),
      );
    }, delay);
    this.restarts.add(timer);
  };
}
