import { Logger, runMigrations } from 'graphile-worker';
import type { Knex } from 'knex';
import pg from 'pg';

/**
 * The job queue (graphile-worker, docs/decisions.md "Hooks"): its tables live in the
 * `graphile_worker` schema of the same database, so a job is added in the transaction of the
 * change that causes it, with the queue's own SQL function, and workers on any number of nodes
 * claim jobs with `FOR UPDATE SKIP LOCKED`.
 */
export const JOB_QUEUE_SCHEMA = 'graphile_worker';

/** The task that sends one attempt of one hook delivery. */
export const HOOK_DELIVERY_TASK = 'hook_deliver';

export interface HookDeliveryJob {
  deliveryId: number;
  /** The attempt this job makes; a job whose attempt was already made does nothing. */
  attempt: number;
}

/** The queue's key of a delivery's job: adding it again moves the pending job instead of adding a second. */
const DELIVERY_JOB_KEY_PREFIX = 'hook-delivery:';
const deliveryJobKey = (deliveryId: number) => `${DELIVERY_JOB_KEY_PREFIX}${deliveryId}`;

/** SQL of the job key of the delivery whose id is the expression `id` (binding-free). */
export const deliveryJobKeySql = (id: string) => `'${DELIVERY_JOB_KEY_PREFIX}' || ${id}`;

/**
 * The queue's own pg pool, kept by us rather than by the library. A pool the library makes from
 * a connection string loses its 'error' listeners when the library releases it, before the pool
 * has ended: an idle connection that Postgres cuts in that moment (a restart, a shutdown) then
 * emits an 'error' nobody listens to, which ends the process. Ours keeps a listener on the pool
 * and on every connection for as long as the pool lives, and is ended (awaited) by its owner.
 */
export function openJobQueuePool(
  connectionString: string,
  max: number,
  onError: (err: Error, where: 'idle' | 'active') => void = () => undefined,
): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', (err) => onError(err, 'idle'));
  pool.on('connect', (client) => client.on('error', (err) => onError(err, 'active')));
  return pool;
}

/** Creates or upgrades the queue's schema (idempotent; the queue serialises concurrent runs). */
export async function migrateJobQueue(connectionString: string): Promise<void> {
  const pgPool = openJobQueuePool(connectionString, 2);
  try {
    await runMigrations({ pgPool, schema: JOB_QUEUE_SCHEMA, logger: quietLogger() });
  } finally {
    await pgPool.end();
  }
}

// graphile-worker logs its migrations at info; they are part of `lcm migrate`, which says what it applied.
const quietLogger = () => new Logger(() => () => undefined);

/**
 * A query (with its bindings) adding the job of one delivery attempt, due `delayMs` from the
 * database's now; it can stand alone or as a subquery of a larger statement. A pending job of
 * the same delivery is moved instead of doubled.
 */
export function deliveryAttemptJobSql(job: HookDeliveryJob, delayMs = 0): { sql: string; bindings: Knex.RawBinding[] } {
  return {
    sql: `select 1 from ${JOB_QUEUE_SCHEMA}.add_job(?, ?::json, run_at => now() + ? * interval '1 millisecond', job_key => ?, max_attempts => 25)`,
    bindings: [HOOK_DELIVERY_TASK, JSON.stringify(job), Math.max(0, Math.round(delayMs)), deliveryJobKey(job.deliveryId)],
  };
}

/** Adds the job of one delivery attempt inside `trx` (workers see it when it commits). */
export async function enqueueDeliveryAttempt(trx: Knex | Knex.Transaction, job: HookDeliveryJob, delayMs = 0): Promise<void> {
  const { sql, bindings } = deliveryAttemptJobSql(job, delayMs);
  await trx.raw(sql, bindings);
}

/** SQL (one binding-free fragment) adding the first-attempt jobs of the deliveries in CTE `d` (column `id`). */
export const ENQUEUE_FIRST_ATTEMPTS_SQL = `
  select count(*) from ${JOB_QUEUE_SCHEMA}.add_jobs(array(
    select row('${HOOK_DELIVERY_TASK}', json_build_object('deliveryId', d.id, 'attempt', 1), null, null, 25,
               ${deliveryJobKeySql('d.id')}, null, null)::${JOB_QUEUE_SCHEMA}.job_spec
      from d))
   where exists (select 1 from d)`;

/**
 * Removes up to `limit` finished jobs of hook deliveries from the queue, with its own
 * complete_jobs: jobs that used up their attempts (the queue keeps them for inspection, for
 * ever), and jobs whose delivery is gone or no longer pending (their hook was deleted, or the
 * attempt they would make was made). Jobs running now are left alone. Returns the jobs removed.
 */
export async function pruneDeliveryJobs(db: Knex, limit: number): Promise<number> {
  const { rows } = await db.raw<{ rows: { removed: number }[] }>(
    `select count(*)::int as removed from ${JOB_QUEUE_SCHEMA}.complete_jobs(array(
       select j.id from ${JOB_QUEUE_SCHEMA}.jobs j
        where j.task_identifier = ? and j.locked_at is null
          and (j.attempts >= j.max_attempts or j.key is null
               or not exists (select 1 from hook_deliveries d
                               where d.id = substring(j.key from '^${DELIVERY_JOB_KEY_PREFIX}([0-9]+)$')::bigint and d.status = 'pending'))
        limit ?))`,
    [HOOK_DELIVERY_TASK, limit],
  );
  return rows[0]?.removed ?? 0;
}
