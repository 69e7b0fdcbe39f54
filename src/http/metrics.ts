import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { hookQueueStats, HookQueueStats } from '../data/hookRepository';

/** Prometheus metrics of one app instance (a registry each, so test apps don't collide). */
export class Metrics {
  readonly registry = new Registry();
  private readonly duration = new Histogram({
    name: 'lcm_http_request_duration_seconds',
    help: 'Time from request to the end of the response, by service and status',
    labelNames: ['service', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300],
    registers: [this.registry],
  });
  private readonly aborted = new Counter({
    name: 'lcm_http_responses_aborted_total',
    help: 'Responses that ended before completion (client went away or a stream failed)',
    labelNames: ['service'],
    registers: [this.registry],
  });

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  startRequest(service: string): (status: number, aborted: boolean) => void {
    const end = this.duration.startTimer({ service });
    return (status, aborted) => {
      end({ status: String(status) });
      if (aborted) this.aborted.inc({ service });
    };
  }

  /**
   * Gauges of the hook delivery queue, read from Postgres when scraped (the queue is shared by
   * every node, so any node reports it): pending and due deliveries, the age of the oldest due
   * one, and the queue's jobs. Delivery outcomes are counted by the workers of each process
   * (lcm_hook_deliveries_total, src/jobs/hookWorker.ts) in this same registry.
   */
  watchHookQueue(db: Knex): void {
    let last: Promise<HookQueueStats | undefined> | undefined;
    // One query per scrape, however many gauges read it.
    const stats = () => {
      last ??= hookQueueStats(db)
        .catch(() => undefined)
        .finally(() => setImmediate(() => (last = undefined)));
      return last;
    };
    const gauge = (name: string, help: string, pick: (s: HookQueueStats) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          const s = await stats();
          if (s !== undefined) this.set(pick(s));
        },
      });
    gauge('lcm_hook_deliveries_pending', 'Hook deliveries not yet delivered, failed or skipped (due now or waiting for a retry)', (s) => s.pending);
    gauge('lcm_hook_deliveries_due', 'Pending hook deliveries whose attempt is due', (s) => s.due);
    gauge('lcm_hook_oldest_due_delivery_age_seconds', 'How long the oldest due hook delivery has been waiting (0 when none is due)', (s) => s.oldestDueSeconds);
    gauge('lcm_hook_queue_jobs', 'Hook delivery jobs in the job queue (waiting, scheduled or running)', (s) => s.queuedJobs);
  }
}
