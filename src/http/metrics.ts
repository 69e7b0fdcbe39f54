import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
}
