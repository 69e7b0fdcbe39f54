import { Counter, Histogram, type Registry } from 'prom-client';

/** One request being timed: ended once with its answer; rows its streamed body wrote are added as they go. */
export interface RequestTimer {
  end: (status: number, aborted: boolean) => void;
  countRows: (rows: number) => void;
}

/**
 * The HTTP requests of one process, by service: how long they took and with which status, the
 * ones cut short, the 429s, and the rows streamed responses wrote.
 */
export class RequestMetrics {
  private readonly duration: Histogram<'service' | 'status'>;
  private readonly aborted: Counter<'service'>;
  private readonly rateLimited: Counter<'service'>;
  private readonly exportedRows: Counter<'service'>;

  constructor(registry: Registry) {
    this.duration = new Histogram({
      name: 'lcm_http_request_duration_seconds',
      help: 'Time from request to the end of the response, by service and status',
      labelNames: ['service', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300],
      registers: [registry],
    });
    this.aborted = new Counter({
      name: 'lcm_http_responses_aborted_total',
      help: 'Responses that ended before completion (client went away or a stream failed)',
      labelNames: ['service'],
      registers: [registry],
    });
    this.rateLimited = new Counter({
      name: 'lcm_http_rate_limited_total',
      help: 'Requests refused with 429 because a request limit (daily or fair use minute) was used up, by service',
      labelNames: ['service'],
      registers: [registry],
    });
    this.exportedRows = new Counter({
      name: 'lcm_export_rows_total',
      help: 'Rows written to streamed responses (JSON arrays and CSV exports), by service',
      labelNames: ['service'],
      registers: [registry],
    });
  }

  /** The histogram's child per service and status, looked up once: labelling per request costs more than observing. */
  private readonly durationChildren = new Map<string, { observe(value: number): void }>();

  /** Starts timing one request of `service`. */
  start(service: string): RequestTimer {
    const started = performance.now();
    return {
      end: (status, aborted) => {
        this.observe(service, status, performance.now() - started);
        if (status === 429) this.rateLimited.inc({ service });
        if (aborted) this.aborted.inc({ service });
      },
      countRows: (rows) => this.exportedRows.inc({ service }, rows),
    };
  }

  /** One request of `service` answered with `status` after `ms` milliseconds. */
  observe(service: string, status: number, ms: number): void {
    const key = `${service} ${status}`;
    let child = this.durationChildren.get(key);
    if (child === undefined) {
      child = this.duration.labels(service, String(status));
      this.durationChildren.set(key, child);
    }
    child.observe(ms / 1000);
  }
}
