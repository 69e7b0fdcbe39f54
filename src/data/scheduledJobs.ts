import os from 'node:os';
import type { Knex } from 'knex';
import { knexClient } from './db';

/**
 * Background work that every API node schedules but only one may do at a time, and only once
 * per interval across all nodes (the lead lifecycle sweep, partition maintenance).
 *
 * A run holds a session advisory lock on a connection of its own for its whole length, so two
 * runs of one job never overlap, and a node that dies mid-run releases the lock with its
 * connection. Inside the lock, one conditional UPDATE of `scheduled_jobs` claims the interval:
 * a node whose timer fires while another node's run of this interval is done finds it claimed
 * and skips. The row also tells operators when each job last ran, where and with what result.
 */

/** The jobs that run this way. */
export const JOB_NAMES = {
  lifecycleSweep: 'lead-lifecycle-sweep',
  partitionMaintenance: 'partition-maintenance',
  hookQueuePruning: 'hook-queue-pruning',
  eventRetention: 'event-retention',
} as const;

/** First key of the two-key advisory locks (the second is the job name's hash). */
const LOCK_NAMESPACE = 0x4c434d; // 'LCM'

/** This process, as recorded in scheduled_jobs.last_node. */
const NODE_NAME = `${os.hostname()}:${process.pid}`;

export type JobOutcome<T> = { ran: true; result: T } | { ran: false; reason: 'busy' | 'not-due' };

export interface RunJobOptions {
  /** The job runs at most once per this many ms across all nodes. */
  intervalMs: number;
  /** Run even if it ran less than intervalMs ago (a command run by hand). */
  force?: boolean;
  /** Wait for a run elsewhere to finish instead of skipping (a command run by hand). */
  wait?: boolean;
  node?: string;
}

/** Runs `work` if this node gets the job's lock and the interval is due; records the run. */
export async function runScheduledJob<T>(db: Knex, job: string, options: RunJobOptions, work: () => Promise<T>): Promise<JobOutcome<T>> {
  const conn = await knexClient(db).acquireConnection();
  let locked = false;
  try {
    const lock = options.wait ? 'pg_advisory_lock' : 'pg_try_advisory_lock';
    const { rows } = await conn.query<{ ok: string }>(`select ${lock}($1::int, hashtext($2))::text as ok`, [LOCK_NAMESPACE, job]);
    locked = options.wait === true || rows[0]!.ok === 'true';
    if (!locked) return { ran: false, reason: 'busy' };

    const claimed = await db.raw<{ rows: { runs: number }[] }>(
      `insert into scheduled_jobs as j (job, last_started_at, last_node, runs) values (?, now(), ?, 1)
       on conflict (job) do update set last_started_at = now(), last_node = excluded.last_node, runs = j.runs + 1
        where ?::boolean or j.last_started_at <= now() - ?::bigint * interval '1 millisecond'
       returning runs`,
      [job, options.node ?? NODE_NAME, options.force === true, options.intervalMs],
    );
    if (claimed.rows.length === 0) return { ran: false, reason: 'not-due' };
    try {
      const result = await work();
      await db('scheduled_jobs')
        .where({ job })
        .update({ last_finished_at: db.fn.now(), last_error: null, last_result: JSON.stringify(result ?? null) });
      return { ran: true, result };
    } catch (err) {
      await db('scheduled_jobs')
        .where({ job })
        .update({ last_finished_at: db.fn.now(), last_error: String((err as Error)?.message ?? err) })
        .catch(() => undefined);
      throw err;
    }
  } finally {
    if (locked) await conn.query('select pg_advisory_unlock($1::int, hashtext($2))', [LOCK_NAMESPACE, job]).catch(() => undefined);
    await knexClient(db).releaseConnection(conn);
  }
}

export interface ScheduledJobRow {
  job: string;
  runs: number;
  lastStartedAt: Date | null;
  lastFinishedAt: Date | null;
  lastNode: string | null;
  lastError: string | null;
  lastResult: unknown;
}

/** A row of scheduled_jobs. */
interface ScheduledJobsTableRow {
  job: string;
  runs: number;
  last_started_at: Date | null;
  last_finished_at: Date | null;
  last_node: string | null;
  last_error: string | null;
  last_result: unknown;
}

export async function listScheduledJobs(db: Knex): Promise<ScheduledJobRow[]> {
  const rows = await db<ScheduledJobsTableRow>('scheduled_jobs').orderBy('job');
  return rows.map((r) => ({
    job: r.job,
    runs: r.runs,
    lastStartedAt: r.last_started_at,
    lastFinishedAt: r.last_finished_at,
    lastNode: r.last_node,
    lastError: r.last_error,
    lastResult: r.last_result,
  }));
}
