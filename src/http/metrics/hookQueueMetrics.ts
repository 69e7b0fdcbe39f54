import { Gauge, type Registry } from 'prom-client';
import type { Knex } from 'knex';
import { hookQueueStats, type HookQueueStats } from '../../data/hookRepository';

/** How long a scrape waits for the queue's figures before the gauges keep their last values. */
const STATS_WAIT_MS = 1000;

/**
 * Gauges of the hook delivery queue, read from Postgres when scraped (the queue is shared by
 * every node, so any node reports it): pending and due deliveries, the age of the oldest due
 * one, and the queue's jobs. Delivery outcomes are counted by the workers of each process
 * (lcm_hook_deliveries_total, src/jobs/hookWorker.ts) in the same registry.
 */
export function collectHookQueueMetrics(registry: Registry, db: Knex): void {
  let last: Promise<HookQueueStats | undefined> | undefined;
  // One query per scrape, however many gauges read it, and never more than one in flight. A
  // scrape does not wait for it longer than a second: when every pooled connection is busy the
  // queue gauges keep their last values instead of holding the whole scrape.
  const stats = () => {
    last ??= hookQueueStats(db)
      .catch(() => undefined)
      .finally(() => setImmediate(() => (last = undefined)));
    let timer: NodeJS.Timeout | undefined;
    const giveUp = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), STATS_WAIT_MS);
      timer.unref();
    });
    return Promise.race([last, giveUp]).finally(() => clearTimeout(timer));
  };
  const gauge = (name: string, help: string, pick: (s: HookQueueStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      // Every worker reads the same figures from the shared database: one of them, not the sum.
      aggregator: 'first',
      async collect() {
        const s = await stats();
        if (s !== undefined) this.set(pick(s));
      },
    });
  gauge(
    'lcm_hook_deliveries_pending',
    'Hook deliveries not yet delivered, failed or skipped (due now or waiting for a retry)',
    (s) => s.pending,
  );
  gauge('lcm_hook_deliveries_due', 'Pending hook deliveries whose attempt is due', (s) => s.due);
  gauge(
    'lcm_hook_oldest_due_delivery_age_seconds',
    'How long the oldest due hook delivery has been waiting (0 when none is due)',
    (s) => s.oldestDueSeconds,
  );
  gauge('lcm_hook_queue_jobs', 'Hook delivery jobs in the job queue (waiting, scheduled or running)', (s) => s.queuedJobs);
}
