import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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

  private readonly refused = new Counter({
    name: 'lcm_overload_refused_total',
    help:
      'Requests refused instead of queued: reason account (429, the account runs its most exports at once), ' +
      'global (503, the process runs its most exports), connection (503, no database connection free in time), ' +
      'login (429, too many failed logins), hashing (503, too many logins waiting for a password check)',
    labelNames: ['reason'],
    registers: [this.registry],
  });

  /** A request refused by admission control or a bounded wait (see the metric's help). */
  countRefused(reason: 'account' | 'global' | 'connection' | 'login' | 'hashing'): void {
    this.refused.inc({ reason });
  }

  /** The exports running now, read when scraped. */
  observeExports(running: () => number): void {
    new Gauge({
      name: 'lcm_exports_running',
      help: 'Streamed exports running in this process (at most EXPORT_MAX_CONCURRENT)',
      registers: [this.registry],
      collect() {
        this.set(running());
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
