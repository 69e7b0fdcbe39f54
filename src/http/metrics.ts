import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ReadSource } from '../data/readSource';

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

  private readonly readFallbacks = new Counter({
    name: 'lcm_db_read_fallbacks_total',
    help: 'Bulk reads served by the primary although a read replica is configured, by reason (down: known down; error: it failed that read)',
    labelNames: ['reason'],
    registers: [this.registry],
  });

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Counts the read source's fallbacks and reports the replica's state and lag at each scrape. */
  observeReads(reads: ReadSource): void {
    if (reads.state === 'not-configured') return;
    for (const reason of ['down', 'error']) this.readFallbacks.inc({ reason }, 0);
    reads.on('fallback', (reason) => this.readFallbacks.inc({ reason }));
    new Gauge({
      name: 'lcm_db_replica_up',
      help: 'Whether bulk reads go to the read replica (1) or to the primary because it is down or too far behind (0)',
      registers: [this.registry],
      collect() {
        this.set(reads.state === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'lcm_db_replica_lag_seconds',
      help: 'Replay lag of the read replica at its last check',
      registers: [this.registry],
      collect() {
        if (reads.lagMs !== undefined) this.set(reads.lagMs / 1000);
      },
    });
  }

  startRequest(service: string): (status: number, aborted: boolean) => void {
    const end = this.duration.startTimer({ service });
    return (status, aborted) => {
      end({ status: String(status) });
      if (aborted) this.aborted.inc({ service });
    };
  }
}
