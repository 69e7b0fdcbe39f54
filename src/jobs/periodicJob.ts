import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import { runScheduledJob } from '../data/scheduledJobs';

export interface PeriodicJob<T> {
  /** Name in scheduled_jobs and in the advisory lock. */
  name: string;
  intervalMs: number;
  /** Also try once right after start (maintenance: partitions ahead before the first month ends). */
  runAtStart?: boolean;
  work(): Promise<T>;
  /** Logs a run's result when it did something worth a line. */
  report?(result: T, logger: Logger): void;
}

/**
 * Runs a job every `intervalMs` in this server, coordinated with every other API node through
 * Postgres (src/data/scheduledJobs.ts): at most one node runs it at a time and once per
 * interval. A run never overlaps this node's previous one either. Returns the function that
 * stops the timer (a run in progress finishes).
 */
export function startPeriodicJob<T>(db: Knex, logger: Logger, job: PeriodicJob<T>): () => void {
  if (job.intervalMs <= 0) return () => undefined;
  let running = false;
  let stopped = false;
  const tick = async (): Promise<void> => {
    if (running || stopped) return;
    running = true;
    try {
      const outcome = await runScheduledJob(db, job.name, { intervalMs: job.intervalMs }, () => job.work());
      if (outcome.ran) job.report?.(outcome.result, logger);
    } catch (err) {
      if (!stopped) logger.warn({ err, job: job.name }, `${job.name} failed; it runs again at the next interval`);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), job.intervalMs);
  timer.unref();
  let first: NodeJS.Timeout | undefined;
  if (job.runAtStart) {
    first = setTimeout(() => void tick(), 0);
    first.unref();
  }
  return () => {
    stopped = true;
    clearInterval(timer);
    clearTimeout(first);
  };
}
