import type { Response } from 'express';
import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CounterStore } from '../ratelimit/counterStore';
import type { ReadSource } from '../data/readSource';
import { hookQueueStats, HookQueueStats } from '../data/hookRepository';
import { poolOf } from '../data/db';
import type { RequestLogWriter } from '../data/requestLog';

/**
 * Prometheus metrics of one app instance (a registry each, so test apps don't collide): the
 * numbers people alert on (docs/operations.md, "Metrics"). Request durations, 429s and exported
 * rows carry the service name; the database pool and the counter store are read when scraped.
 */
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
  private readonly rateLimited = new Counter({
    name: 'lcm_http_rate_limited_total',
    help: 'Requests refused with 429 because a request limit (daily or fair use minute) was used up, by service',
    labelNames: ['service'],
    registers: [this.registry],
  });
  private readonly exportedRows = new Counter({
    name: 'lcm_export_rows_total',
    help: 'Rows written to streamed responses (JSON arrays and CSV exports), by service',
    labelNames: ['service'],
    registers: [this.registry],
  });

  private readonly readFallbacks = new Counter({
    name: 'lcm_db_read_fallbacks_total',
    help: 'Bulk reads served by the primary although a read replica is configured, by reason (down: known down; error: it failed that read)',
    labelNames: ['reason'],
    registers: [this.registry],
  });

  /** Where GET /api/metrics reads its text: this registry, or every process's figures (gatherFrom). */
  private gather: () => Promise<string> = () => this.registry.metrics();

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** In a worker of `lcm serve`: a scrape shows what `gather` collects from every process. */
  gatherFrom(gather: () => Promise<string>): void {
    this.gather = gather;
  }

  /** The scrape's text, in the Prometheus text format (the registry's content type). */
  text(): Promise<string> {
    return this.gather();
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
      // Across the processes of a node: 0 as soon as one of them reads from the primary.
      aggregator: 'min',
      collect() {
        this.set(reads.state === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'lcm_db_replica_lag_seconds',
      help: 'Replay lag of the read replica at its last check',
      registers: [this.registry],
      aggregator: 'max',
      collect() {
        if (reads.lagMs !== undefined) this.set(reads.lagMs / 1000);
      },
    });
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

  private readonly passwordChecks = (() => {
    const counter = new Counter({
      name: 'lcm_password_checks_total',
      help: 'Password (scrypt) checks run, by outcome: passed or failed (each failed one a guess the login limits let through)',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    for (const outcome of ['passed', 'failed']) counter.inc({ outcome }, 0);
    return counter;
  })();

  /** One password check and whether it passed. */
  countPasswordCheck(passed: boolean): void {
    this.passwordChecks.inc({ outcome: passed ? 'passed' : 'failed' });
  }

  /**
   * The request log's entries that were not written (by reason: overflow, the pending entries
   * were at REQUEST_LOG_MAX_PENDING; rejected, Postgres refused the batch) and those waiting.
   */
  observeRequestLog(log: RequestLogWriter): void {
    const dropped = new Counter({
      name: 'lcm_request_log_dropped_total',
      help: 'Request log entries not written, by reason: overflow (REQUEST_LOG_MAX_PENDING entries were waiting) or rejected (Postgres refused the batch)',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    for (const reason of ['overflow', 'rejected']) dropped.inc({ reason }, 0);
    log.on('dropped', (reason, entries) => dropped.inc({ reason }, entries));
    new Gauge({
      name: 'lcm_request_log_pending',
      help: 'Request log entries waiting to be written',
      registers: [this.registry],
      collect() {
        this.set(log.size);
      },
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

  /** The event streams open now, read when scraped. */
  observeEventStreams(open: () => number): void {
    new Gauge({
      name: 'lcm_event_streams_open',
      help: 'Server-Sent Events streams (GET /events) open in this process',
      registers: [this.registry],
      collect() {
        this.set(open());
      },
    });
  }

  /**
   * Times one request of `service`; with the response, also counts the rows its stream writes
   * (see recordExportedRows). The returned function ends the timer.
   */
  startRequest(service: string, res?: Response): (status: number, aborted: boolean) => void {
    const started = performance.now();
    if (res) rowCounters.set(res, (rows) => this.exportedRows.inc({ service }, rows));
    return (status, aborted) => {
      this.observeRequest(service, status, performance.now() - started);
      if (status === 429) this.rateLimited.inc({ service });
      if (aborted) this.aborted.inc({ service });
    };
  }

  /** The histogram's child per service and status, looked up once: labelling per request costs more than observing. */
  private readonly durationChildren = new Map<string, { observe(value: number): void }>();

  /** One request of `service` answered with `status` after `ms` milliseconds. */
  observeRequest(service: string, status: number, ms: number): void {
    const key = `${service} ${status}`;
    let child = this.durationChildren.get(key);
    if (child === undefined) {
      child = this.duration.labels(service, String(status));
      this.durationChildren.set(key, child);
    }
    child.observe(ms / 1000);
  }

  /**
   * Gauges of the hook delivery queue, read from Postgres when scraped (the queue is shared by
   * every node, so any node reports it): pending and due deliveries, the age of the oldest due
   * one, and the queue's jobs. Delivery outcomes are counted by the workers of each process
   * (lcm_hook_deliveries_total, src/jobs/hookWorker.ts) in this same registry.
   */
  watchHookQueue(db: Knex): void {
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
        timer = setTimeout(() => resolve(undefined), 1000);
        timer.unref();
      });
      return Promise.race([last, giveUp]).finally(() => clearTimeout(timer));
    };
    const gauge = (name: string, help: string, pick: (s: HookQueueStats) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
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

  /**
   * Gauges read at scrape time from the process's shared resources: the database pool (knex's
   * tarn pool: connections in use, idle, and requests waiting for one) and the request counter
   * store (whether it counts in Redis, and how often it fell back to counting in Postgres).
   */
  observe(resources: { db: Knex; counter: CounterStore }): void {
    const pool = () => poolOf(resources.db);
    new Gauge({
      name: 'lcm_db_pool_connections',
      help: 'Database pool connections by state: used (checked out by a query or cursor) or free (idle)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const p = pool();
        this.set({ state: 'used' }, p?.numUsed() ?? 0);
        this.set({ state: 'free' }, p?.numFree() ?? 0);
      },
    });
    new Gauge({
      name: 'lcm_db_pool_waiting',
      help: 'Requests waiting for a database connection (pending acquires); above zero for long means the pool is too small',
      registers: [this.registry],
      collect() {
        this.set(pool()?.numPendingAcquires() ?? 0);
      },
    });
    new Gauge({
      name: 'lcm_db_pool_max',
      help: 'Largest number of connections the database pool opens (DB_POOL_MAX)',
      registers: [this.registry],
      collect() {
        this.set(pool()?.max ?? 0);
      },
    });

    const stats = () => resources.counter.fallbackStats?.();
    if (resources.counter.fallbackStats === undefined) return; // no Redis configured
    new Gauge({
      name: 'lcm_redis_up',
      aggregator: 'min',
      help: '1 while requests are counted in Redis, 0 while counted in Postgres because Redis is unreachable',
      registers: [this.registry],
      collect() {
        this.set(stats()?.redisHealthy ? 1 : 0);
      },
    });
    monotonic(
      this.registry,
      'lcm_redis_fallbacks_total',
      'Times Redis became unreachable and request counting fell back to the Postgres counters',
      () => stats()?.fallbacks ?? 0,
    );
    monotonic(
      this.registry,
      'lcm_redis_fallback_operations_total',
      'Counter store operations (counting, peeking, /myaccount/request/counts) answered from Postgres because Redis was unreachable',
      () => stats()?.fallbackOperations ?? 0,
    );
  }
}

/** A counter whose value another object keeps: it catches up with that total when scraped. */
function monotonic(registry: Registry, name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}

/** Each observed response's row counter; a WeakMap so a finished response leaves nothing behind. */
const rowCounters = new WeakMap<Response, (rows: number) => void>();

/** Adds rows a streamed response has written to its service's exported-rows counter. */
export function recordExportedRows(res: Response, rows: number): void {
  rowCounters.get(res)?.(rows);
}
