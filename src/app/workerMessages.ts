import type { Worker } from 'node:cluster';

/**
 * What `lcm serve`'s processes tell each other over the cluster's IPC channel. One map from the
 * message's `type` to its body: a new message is a compile error wherever it is not handled.
 */
interface WorkerToSupervisor {
  /** An HTTP worker listens; `port` is the one it got (PORT=0 picks a free one for the first). */
  listening: { port: number };
  /** The jobs process runs its background work. */
  ready: Record<never, never>;
  /** Start-up failed; the process exits next. */
  failed: { reason: string };
  /** GET /api/metrics on this worker asks for every process's figures. */
  metricsRequest: { id: number };
}

interface SupervisorToWorker {
  metricsResponse: { id: number; text?: string; error?: string };
}

type Envelope<M> = { [K in keyof M]: { type: K } & M[K] }[keyof M];

export type WorkerMessage = Envelope<WorkerToSupervisor>;
export type SupervisorMessage = Envelope<SupervisorToWorker>;

const workerTypes: Record<keyof WorkerToSupervisor, true> = { listening: true, ready: true, failed: true, metricsRequest: true };
const supervisorTypes: Record<keyof SupervisorToWorker, true> = { metricsResponse: true };

/** Messages of other senders on the same channel (prom-client's own, Node's) are not ours. */
export function isWorkerMessage(message: unknown): message is WorkerMessage {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === 'string' && Object.hasOwn(workerTypes, type);
}

export function isSupervisorMessage(message: unknown): message is SupervisorMessage {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === 'string' && Object.hasOwn(supervisorTypes, type);
}

/** From a worker to the supervisor; false when the channel is gone (the supervisor died). */
export function tellSupervisor(message: WorkerMessage): boolean {
  if (!process.send || !process.connected) return false;
  return process.send(message);
}

export function tellWorker(worker: Worker, message: SupervisorMessage): void {
  if (worker.isConnected()) worker.send(message);
}
