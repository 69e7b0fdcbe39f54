import { Counter, Gauge, type Registry } from 'prom-client';

/** Why a request was refused instead of queued (see the metric's help). */
export type RefusalReason = 'account' | 'global' | 'connection' | 'login' | 'hashing';

/** Admission control of one process: requests refused instead of queued, and the exports running. */
export class OverloadMetrics {
  private readonly refused: Counter<'reason'>;

  constructor(private readonly registry: Registry) {
    this.refused = new Counter({
      name: 'lcm_overload_refused_total',
      help:
        'Requests refused instead of queued: reason account (429, the account runs its most exports at once), ' +
        'global (503, the process runs its most exports), connection (503, no database connection free in time), ' +
        'login (429, too many failed logins), hashing (503, too many logins waiting for a password check)',
      labelNames: ['reason'],
      registers: [registry],
    });
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

  /** A request refused by admission control or a bounded wait. */
  countRefused(reason: RefusalReason): void {
    this.refused.inc({ reason });
  }
}
