import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { isSupervisorMessage, isWorkerMessage, tellSupervisor, tellWorker } from './workerMessages';

/**
 * One scrape of GET /api/metrics shows every process of `lcm serve`: the worker that receives
 * it asks the supervisor, which gathers each process's registry through prom-client's
 * AggregatorRegistry (sums by default; gauges read from the shared database say `first`).
 */

/** Supervisor side: answers the workers' requests. Returns the function that stops answering. */
export function answerMetricsRequests(): () => void {
  const aggregator = new AggregatorRegistry();
  const onMessage = (worker: Parameters<typeof tellWorker>[0], message: unknown) => {
    if (!isWorkerMessage(message) || message.type !== 'metricsRequest') return;
    aggregator.clusterMetrics().then(
      (text) => tellWorker(worker, { type: 'metricsResponse', id: message.id, text }),
      (err: unknown) => tellWorker(worker, { type: 'metricsResponse', id: message.id, error: String((err as Error).message ?? err) }),
    );
  };
  cluster.on('message', onMessage);
  return () => cluster.off('message', onMessage);
}

/** How long a worker waits for the gathered figures (the supervisor waits 5 s for each process). */
const RESPONSE_TIMEOUT_MS = 10_000;

/**
 * Worker side: offers this process's registry to the supervisor's gathering, and returns what
 * GET /api/metrics serves: every process's figures, in the Prometheus text format.
 */
export function clusterMetricsSource(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // A worker that constructs one answers the supervisor's gathering (prom-client's cluster example).
  new AggregatorRegistry();
  let next = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
  process.on('message', (message: unknown) => {
    if (!isSupervisorMessage(message) || message.type !== 'metricsResponse') return;
    const entry = waiting.get(message.id);
    if (!entry) return;
    waiting.delete(message.id);
    clearTimeout(entry.timer);
    if (message.text !== undefined) entry.resolve(message.text);
    else entry.reject(new Error(`gathering the processes' metrics failed: ${message.error ?? 'no reason given'}`));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the supervisor did not answer the metrics request in time'));
      }, RESPONSE_TIMEOUT_MS);
      waiting.set(id, { resolve, reject, timer });
      if (!tellSupervisor({ type: 'metricsRequest', id })) {
        waiting.delete(id);
        clearTimeout(timer);
        reject(new Error('the supervisor is gone'));
      }
    });
}

/** The jobs process takes part in the gathering with its own registry, serving nothing itself. */
export function offerMetrics(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry();
}
