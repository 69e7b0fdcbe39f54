import os from 'node:os';
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import { Logger as QueueLogger, run, Runner, WorkerEvents } from 'graphile-worker';
import { Counter, Histogram, Registry } from 'prom-client';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import type { RetryPolicy } from '../domain/hookRetry';
import { HOOK_DELIVERY_TASK, HookDeliveryJob, JOB_QUEUE_SCHEMA, openJobQueuePool } from '../data/jobQueue';
import { connectionStringOf } from '../data/db';
import { forgetWorker, heartbeat, releaseDeadWorkers, releaseWorkers } from '../data/hookDeliveryRepository';
import { AttemptBusyError, deliveryBatches, runDeliveryAttempt } from './hookDelivery';
import { HookSender } from './hookSender';

/**
 * The hook delivery workers of one process (`lcm serve`, `lcm hooks work`): a graphile-worker
 * pool running the `hook_deliver` task HOOKS_CONCURRENCY at a time. New deliveries reach it at
 * once through the queue's LISTEN/NOTIFY; retries come due by polling. Claims are the queue's
 * (`FOR UPDATE SKIP LOCKED`), so any number of processes on any number of nodes share the work.
 *
 * A killed process leaves its claimed jobs locked; the queue itself frees them only after
 * hours. So every pool records a heartbeat, and each one releases the jobs of pools silent for
 * HOOKS_WORKER_STALE_MS with the queue's force_unlock_workers: after `kill -9` and a restart
 * (or on another node) the in-flight deliveries are sent again — at least once, never lost.
 */
export interface HookWorker {
  /** The pool's id (as it appears in the queue's locks and in hook_delivery_attempts.worker_id). */
  id(): string | undefined;
  /** Finishes the attempts in flight, then stops. */
  stop(): Promise<void>;
}

export interface HookWorkerOptions {
  db: Knex;
  settings: Settings;
  logger: Logger;
  /** Where the delivery counters are registered (the app's /api/metrics registry in `lcm serve`). */
  registry?: Registry;
  clock?: () => Date;
  random?: () => number;
  /** Overrides of the queue's batching (benchmarks compare with and without it). */
  queue?: Partial<QueueTuning>;
}

/**
 * How the pool talks to the job queue. Batching is the queue library's own: the pool fetches
 * and locks up to `localQueueSize` due jobs in one query and hands them to its workers, and
 * completes (or fails) the jobs finished within `batchDelayMs` in one query, instead of one
 * fetch and one completion per job. Both only change how the queue's bookkeeping reaches the
 * database: a job fetched but not started, or finished but not yet completed, when the process
 * is killed stays locked by this pool and is released by the heartbeat check like any other.
 */
export interface QueueTuning {
  /** Jobs fetched per query (-1: each worker fetches its own, one per query). */
  localQueueSize: number;
  /** How long finished jobs wait to be completed together (-1: each at once, on its own). */
  batchDelayMs: number;
  /** Connections of the queue's own pg pool (opened on demand; with batching a few are in use). */
  maxPoolSize: number;
}

/** Waits before starting the queue again after it stopped, while the database does not answer. */
const RESTART_BASE_DELAY_MS = 500;
const RESTART_MAX_DELAY_MS = 15_000;

/** The queue's pool with its batching on: LISTEN, one fetch, overlapping batched completions and failures. */
const BATCHED_QUEUE_POOL = 10;

export function queueTuningOf(settings: Settings, overrides: Partial<QueueTuning> = {}): QueueTuning {
  const tuning = { localQueueSize: settings.HOOKS_CONCURRENCY + 1, batchDelayMs: 20, ...overrides };
  const batched = tuning.localQueueSize > 0 && tuning.batchDelayMs >= 0;
  return {
    ...tuning,
    // Without batching each worker completes its job on a connection of its own, plus one for
    // LISTEN and one to fetch; with it a handful are in use whatever the concurrency.
    maxPoolSize: batched ? Math.min(BATCHED_QUEUE_POOL, settings.HOOKS_CONCURRENCY + 2) : settings.HOOKS_CONCURRENCY + 2,
    ...(overrides.maxPoolSize !== undefined ? { maxPoolSize: overrides.maxPoolSize } : {}),
  };
}

function retryPolicyOf(settings: Settings): RetryPolicy {
  return {
    baseMs: settings.HOOKS_RETRY_BASE_MS,
    maxDelayMs: settings.HOOKS_RETRY_MAX_DELAY_MS,
    windowMs: settings.HOOKS_RETRY_WINDOW_MS,
    disableAfterMs: settings.HOOKS_DISABLE_AFTER_MS,
  };
}

function queueLogger(logger: Logger): QueueLogger {
  return new QueueLogger((scope) => (logLevel, message, meta) => {
    // The library's LogLevel is an ambient const enum (unusable with isolatedModules): read by its string values.
    const level: string = logLevel;
    const fields = { ...scope, ...meta, component: 'job-queue' };
    if (level === 'error') logger.error(fields, message);
    // The library warns at every start when its pool is smaller than the concurrency; with its
    // fetches and completions batched (queueTuningOf) that is by design, not a problem.
    else if (level === 'warning' && /maxPoolSize .* smaller than concurrency/.test(message)) logger.debug(fields, message);
    else if (level === 'warning') logger.warn(fields, message);
    else logger.debug(fields, message);
  });
}

function deliveryMetrics(registry: Registry | undefined) {
  if (registry === undefined) return undefined;
  const existing = registry.getSingleMetric('lcm_hook_deliveries_total') as Counter<'outcome'> | undefined;
  const outcomes =
    existing ??
    new Counter({
      name: 'lcm_hook_deliveries_total',
      help: 'Hook delivery attempts made by this process, by outcome (delivered, http_error, timeout, network_error, refused, skipped)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric('lcm_hook_delivery_duration_seconds') as Histogram | undefined) ??
    new Histogram({
      name: 'lcm_hook_delivery_duration_seconds',
      help: 'Time from sending a hook request to its answer (or failure)',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  return (outcome: string, durationMs: number | undefined) => {
    outcomes.inc({ outcome });
    if (durationMs !== undefined) duration.observe(durationMs / 1000);
  };
}

export async function startHookWorker(options: HookWorkerOptions): Promise<HookWorker> {
  const { db, settings, logger } = options;
  const sender = new HookSender({
    timeoutMs: settings.HOOKS_TIMEOUT_MS,
    allowHttp: settings.HOOKS_ALLOW_HTTP,
    allowedHosts: settings.HOOKS_ALLOWED_HOSTS,
  });
  let poolId: string | undefined;
  const events: WorkerEvents = new EventEmitter() as WorkerEvents;
  events.on('pool:create', ({ workerPool }) => {
    poolId = workerPool.id;
  });
  const onOutcome = deliveryMetrics(options.registry);
  const deps = {
    db,
    batches: deliveryBatches(db, {
      timeoutMs: settings.HOOKS_TIMEOUT_MS,
      maxInFlight: settings.HOOKS_MAX_PER_HOOK,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.random ? { random: options.random } : {}),
    }),
    breakerFailures: settings.HOOKS_BREAKER_FAILURES,
    sender,
    policy: retryPolicyOf(settings),
    timeoutMs: settings.HOOKS_TIMEOUT_MS,
    zone: settings.PLATFORM_TIMEZONE,
    clock: options.clock ?? (() => new Date()),
    random: options.random ?? Math.random,
    logger,
    workerId: () => poolId,
    ...(onOutcome ? { onOutcome } : {}),
  };

  // Jobs left locked by a process that died before this one started are released first.
  await releaseDeadWorkers(db, settings.HOOKS_WORKER_STALE_MS).catch(() => undefined);

  const tuning = queueTuningOf(settings, options.queue);
  const pgPool = openJobQueuePool(connectionStringOf(db), tuning.maxPoolSize, (err, where) =>
    logger.warn({ err, component: 'job-queue' }, `a job queue connection (${where}) failed; the pool replaces it`),
  );
  const startRunner = () =>
    run({
      pgPool,
      schema: JOB_QUEUE_SCHEMA,
      concurrency: settings.HOOKS_CONCURRENCY,
      pollInterval: settings.HOOKS_POLL_INTERVAL_MS,
      preset: {
        worker: {
          ...(tuning.localQueueSize > 0 ? { localQueue: { size: tuning.localQueueSize } } : {}),
          completeJobBatchDelay: tuning.batchDelayMs,
          failJobBatchDelay: tuning.batchDelayMs,
        },
      },
      noHandleSignals: true,
      logger: queueLogger(logger),
      events,
      taskList: {
        [HOOK_DELIVERY_TASK]: async (payload) => {
          try {
            await runDeliveryAttempt(deps, payload as HookDeliveryJob);
          } catch (err) {
            if (!(err instanceof AttemptBusyError))
              logger.warn({ err, job: payload }, 'hook delivery attempt failed; the queue retries it');
            throw err;
          }
        },
      },
    });

  let runner: Runner;
  try {
    runner = await startRunner();
  } catch (err) {
    sender.close();
    await pgPool.end();
    throw err;
  }

  /**
   * The queue's worker pool shuts itself down when it cannot record finished jobs (Postgres
   * restarting or unreachable), and that shutdown may never finish while it waits on work that
   * failed with the database. So the pool is given up as soon as it starts shutting down (or its
   * runner ends) without being asked: its runner is killed in the background, and a new runner
   * starts on the same connections once the database answers again, after releasing the jobs the
   * old pool still held (at once, not after HOOKS_WORKER_STALE_MS). Deliveries are at least once
   * and their attempts are leased (src/data/hookDeliveryRepository.ts), so a job the old pool
   * still runs is never sent twice at the same time.
   */
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  const givenUp = new Set<string>();
  const giveUp = (ended: string | undefined, reason: string) => {
    if (stopping || ended === undefined || givenUp.has(ended) || ended !== poolId) return;
    givenUp.add(ended);
    logger.warn({ pool: ended, reason }, 'the hook delivery queue stopped; starting it again once the database answers');
    const abandoned = runner;
    void abandoned.kill().catch(() => undefined);
    scheduleRestart(ended, 0);
  };
  events.on('pool:gracefulShutdown', ({ workerPool, message }) => giveUp(workerPool.id, message));
  const watch = (watched: Runner, id: string | undefined) => {
    void watched.promise.then(
      () => giveUp(id, 'its runner ended'),
      (err: unknown) => giveUp(id, `its runner failed: ${String(err)}`),
    );
  };
  const scheduleRestart = (ended: string, failures: number) => {
    const delay = failures === 0 ? RESTART_BASE_DELAY_MS : Math.min(RESTART_MAX_DELAY_MS, RESTART_BASE_DELAY_MS * 2 ** failures);
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      void (async () => {
        if (stopping) return;
        try {
          await releaseWorkers(db, [ended]);
          if (stopping) return;
          runner = await startRunner();
          watch(runner, poolId);
          logger.info({ pool: poolId, previous: ended }, 'hook delivery queue started again');
        } catch (err) {
          logger.warn({ err, attempt: failures + 1 }, 'the hook delivery queue could not start again yet; trying again');
          scheduleRestart(ended, failures + 1);
        }
      })();
    }, delay);
    restartTimer.unref();
  };
  watch(runner, poolId);

  const host = `${os.hostname()}:${process.pid}`;
  const beat = async () => {
    if (poolId === undefined) return;
    try {
      await heartbeat(db, poolId, host);
      const released = await releaseDeadWorkers(db, settings.HOOKS_WORKER_STALE_MS);
      if (released.length > 0) logger.warn({ released }, 'released the hook deliveries of silent worker pools');
    } catch (err) {
      logger.warn({ err }, 'hook worker heartbeat failed');
    }
  };
  await beat();
  const timer = setInterval(() => void beat(), settings.HOOKS_HEARTBEAT_MS);
  timer.unref();
  logger.info({ pool: poolId, concurrency: settings.HOOKS_CONCURRENCY }, 'hook delivery workers started');

  return {
    id: () => poolId,
    async stop() {
      stopping = true;
      clearInterval(timer);
      clearTimeout(restartTimer);
      // A runner that ended by itself is stopped already (its stop() then rejects); one whose
      // shutdown waits on a database that does not answer is killed once the attempts in flight
      // have had their time.
      const stopped = runner.stop().then(
        () => true,
        () => true,
      );
      let wait: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => (wait = setTimeout(() => resolve(false), settings.HOOKS_TIMEOUT_MS + 5_000)));
      if (!(await Promise.race([stopped, timedOut]))) await runner.kill().catch(() => undefined);
      clearTimeout(wait);
      sender.close();
      await pgPool.end().catch(() => undefined);
      if (poolId !== undefined) await forgetWorker(db, poolId).catch(() => undefined);
    },
  };
}
