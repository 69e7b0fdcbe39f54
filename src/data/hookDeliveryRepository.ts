import type { Knex } from 'knex';
import {
  DateTimeFormat,
  DateTimeFormatName,
  EntryAccess,
  EntryAccessName,
  FieldType,
  LeadStatus,
  LeadStatusName,
  ResourceType,
  Verb,
} from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import { toHook, HookRecord, DeliveryStatus, lockDeliveryClaims } from './hookRepository';
import { deliveryAttemptJobSql, deliveryJobKeySql, HOOK_DELIVERY_TASK, JOB_QUEUE_SCHEMA } from './jobQueue';

/**
 * The delivery worker's side of hooks: claim one attempt of a delivery, read what it needs,
 * and record the attempt's outcome together with what follows from it (next attempt's job,
 * failure clock of the hook, disabling), in one transaction.
 */

export interface DeliveryWork {
  delivery: { id: number; uniqueId: string; attempts: number; firstAttemptTime: Date | null };
  hook: HookRecord;
  account: {
    id: number;
    enabled: boolean;
    projectPatterns: string[];
    rights: Partial<Record<ResourceType, Verb[]>>;
    entryAccess: EntryAccessName;
    /** How the account reads DateTimes: hook bodies are written in it too. */
    dateTimeFormat: DateTimeFormatName;
  };
  event: {
    type: string;
    occurredTime: Date;
    project: string | null;
    campaignCode: string | null;
    previousStatus: LeadStatusName | null;
    snapshot: unknown;
  };
  /** A lead event's lead definition fields as they are now (read with the claim). */
  leadFields?: LeadFieldRule[];
}

export type Claim =
  | { kind: 'claimed'; work: DeliveryWork }
  /** The attempt was made already, or the delivery is finished or gone: nothing to do. */
  | { kind: 'done' }
  /** The attempt is still to be made, but another attempt of this delivery held its lease: try again later. */
  | { kind: 'busy' }
  /** Not now: its hook is paused (circuit breaker) or has its fill of attempts in flight; the attempt was queued again for `until`. */
  | { kind: 'deferred'; until: Date; reason: 'paused' | 'hook-busy' };

/** A Postgres array literal of ids (bound as one parameter, cast to bigint[]). */
const idArray = (ids: number[]) => `{${ids.map((id) => String(Math.trunc(id))).join(',')}}`;

/** One attempt a job asks to claim. */
export interface ClaimRequest {
  deliveryId: number;
  attempt: number;
}

export interface ClaimRules {
  /** How long a claimed attempt holds its delivery (beyond the send's deadline). */
  leaseMs: number;
  /** Attempts in flight at once for one hook, and for all hooks of one account (HOOKS_MAX_PER_HOOK). */
  maxInFlight: number;
  /** When an attempt held back for a full hook or account is tried again: a delay in ms, from the random number given. */
  busyDelayMs: (random: number) => number;
  random?: () => number;
  /** The clock a hook's pause is judged by (the delivery decisions' clock; leases use the database's). */
  clock?: () => Date;
}

/**
 * Claims attempt `attempt` of each delivery for `leaseMs` and loads what each attempt needs
 * (the delivery, its hook, the hook's account, the event and, for lead events, the lead
 * definition's fields as they are now) in one statement for all of them: no second attempt of
 * the same delivery starts while one runs, whichever worker or job it comes from. Each row is
 * claimed on its own conditions, exactly as if it were claimed alone; a delivery may appear
 * once per call (the caller sends a second request for it in a later call). The answers are in
 * the order of the requests.
 *
 * Fairness: an attempt is not claimed while its hook is paused (circuit breaker) or while its
 * hook, or its account, has `maxInFlight` attempts in flight (unexpired leases), counting those
 * claimed before it in the same call. Such an attempt's job is queued again for later in the same
 * statement (the running job then ends), so a slow or dead receiver holds at most `maxInFlight`
 * of the workers' slots, and the other accounts' deliveries go on. The counts are exact across
 * every worker and node: claims of the same accounts are serialised by a transaction-scoped
 * advisory lock per account, taken in account order (no deadlock).
 */
export async function claimDeliveryAttempts(db: Knex, requests: ClaimRequest[], rules: ClaimRules): Promise<Claim[]> {
  if (requests.length === 0) return [];
  if (new Set(requests.map((r) => r.deliveryId)).size !== requests.length)
    throw new Error('claimDeliveryAttempts: a delivery appears twice');
  const random = rules.random ?? Math.random;
  const wanted = JSON.stringify(
    requests.map((r) => ({ id: r.deliveryId, attempts: r.attempt - 1, busy_delay_ms: Math.round(rules.busyDelayMs(random())) })),
  );
  // The ids again as an array: the planner cannot count the rows of jsonb_to_recordset (it
  // guesses 100) and, on a table of some thousands of deliveries, scans it all instead of
  // taking the primary key; `id = any(array)` leads it to the index at every size.
  const ids = idArray(requests.map((r) => r.deliveryId));
  const { work, deferred } = await db.transaction(async (trx) => {
    const accounts = await trx('hook_deliveries as d')
      .join('hooks as h', 'h.id', 'd.hook_id')
      .whereRaw('d.id = any(?::bigint[])', [ids])
      .distinct<{ account_id: number }[]>('h.account_id');
    await lockDeliveryClaims(
      trx,
      accounts.map((a) => a.account_id),
    );
    const { rows } = await trx.raw<{ rows: (WorkRow | DeferredRow)[] }>(
      `with w as (select * from jsonb_to_recordset(?::jsonb) as w(id bigint, attempts integer, busy_delay_ms integer)),
       clock as (select ?::timestamptz as now),
       cand as (
         select d.id, d.hook_id, h.account_id, w.busy_delay_ms, (h.enabled and h.paused_until > clock.now) as paused, h.paused_until - clock.now as pause_left,
                row_number() over (partition by d.hook_id order by d.id) as hook_rank,
                row_number() over (partition by h.account_id, (h.enabled and h.paused_until > clock.now) order by d.id) as account_rank
           from w cross join clock join hook_deliveries d on d.id = w.id and d.id = any(?::bigint[])
           join hooks h on h.id = d.hook_id
          where d.status = 'pending' and d.attempts = w.attempts and (d.in_flight_until is null or d.in_flight_until < now())),
       hook_load as (
         select f.hook_id, count(*) as n from hook_deliveries f
          where f.hook_id in (select hook_id from cand) and f.in_flight_until > now() group by f.hook_id),
       account_load as (
         select h.account_id, count(*) as n from hook_deliveries f join hooks h on h.id = f.hook_id
          where h.account_id in (select account_id from cand) and f.in_flight_until > now() group by h.account_id),
       judged as (
         select cand.*, not coalesce(cand.paused, false)
                        and coalesce(hl.n, 0) + cand.hook_rank <= ? and coalesce(al.n, 0) + cand.account_rank <= ? as admitted
           from cand left join hook_load hl on hl.hook_id = cand.hook_id left join account_load al on al.account_id = cand.account_id),
       c as (
         update hook_deliveries d set in_flight_until = now() + ? * interval '1 millisecond'
           from judged j
          where d.id = j.id and j.admitted
          returning d.id, d.unique_id, d.attempts, d.first_attempt_time, d.hook_id, d.event_id),
       later as (
         select j.id, j.attempts_next, coalesce(j.paused, false) as paused,
                now() + case when coalesce(j.paused, false) then j.pause_left else interval '0' end
                      + j.busy_delay_ms * interval '1 millisecond' as until
           from (select judged.*, w.attempts + 1 as attempts_next from judged join w on w.id = judged.id where not judged.admitted) j),
       moved as (
         update hook_deliveries d set next_attempt_time = later.until from later where d.id = later.id
         returning d.id, d.hook_id, later.until, later.paused,
                   (select 1 from ${JOB_QUEUE_SCHEMA}.add_job(?, json_build_object('deliveryId', later.id, 'attempt', later.attempts_next),
                      run_at => later.until, job_key => ${deliveryJobKeySql('later.id')}, max_attempts => 25)) as queued)
       select 'claimed' as kind, c.id as d_id, c.unique_id as d_unique_id, c.attempts as d_attempts, c.first_attempt_time as d_first,
              a.enabled as a_enabled, a.project_patterns as a_patterns, a.rights as a_rights, a.entry_access as a_access, (to_jsonb(a) ->> 'date_time_format')::smallint as a_format,
              e.type as e_type, e.occurred_time as e_time, e.project as e_project, e.campaign_code as e_campaign,
              e.previous_status as e_previous, e.snapshot as e_snapshot,
              case when jsonb_typeof(e.snapshot #> '{campaign,leadDefinitionId}') = 'number' then
                (select coalesce(jsonb_agg(to_jsonb(f) order by f.sort_order, f.id), '[]') from lead_definition_fields f
                  where f.lead_definition_id = (e.snapshot #>> '{campaign,leadDefinitionId}')::bigint)
              end as fields,
              null::timestamptz as until, null::boolean as paused,
              h.*
         from c join hooks h on h.id = c.hook_id join accounts a on a.id = h.account_id
         join hook_events e on e.id = c.event_id
       union all
       select 'deferred' as kind, moved.id as d_id, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
              moved.until, moved.paused, h.*
         from moved join hooks h on h.id = moved.hook_id`,
      [wanted, (rules.clock ?? (() => new Date()))(), ids, rules.maxInFlight, rules.maxInFlight, rules.leaseMs, HOOK_DELIVERY_TASK],
    );
    return {
      work: rows.filter((r): r is WorkRow => r.kind === 'claimed'),
      deferred: new Map(
        rows
          .filter((r): r is DeferredRow => r.kind === 'deferred')
          .map((r) => [r.d_id, { until: r.until, reason: r.paused ? ('paused' as const) : ('hook-busy' as const) }]),
      ),
    };
  });
  const claimed = new Map<number, WorkRow>(work.map((r) => [r.d_id, r]));
  const missed = requests.filter((r) => !claimed.has(r.deliveryId) && !deferred.has(r.deliveryId)).map((r) => r.deliveryId);
  // Why a request was not claimed: its attempt is still to be made (another attempt held the
  // delivery's lease), or there is nothing to do. The lease is not looked at again: it may have
  // run out since the claim (which judged it at its transaction's start, before waiting for the
  // account's lock), and an attempt not made must be tried again, never taken for done.
  const busy = new Set<number>();
  if (missed.length > 0) {
    const rows = await db('hook_deliveries')
      .whereIn('id', missed)
      .select<{ id: number; status: string; attempts: number }[]>('id', 'status', 'attempts');
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of requests) {
      const row = byId.get(r.deliveryId);
      if (row && row.status === 'pending' && row.attempts === r.attempt - 1) busy.add(r.deliveryId);
    }
  }
  return requests.map((r): Claim => {
    const row = claimed.get(r.deliveryId);
    if (row) return { kind: 'claimed', work: toWork(row) };
    const later = deferred.get(r.deliveryId);
    if (later) return { kind: 'deferred', ...later };
    return busy.has(r.deliveryId) ? { kind: 'busy' } : { kind: 'done' };
  });
}

/** A deferred row of the claim statement. */
interface DeferredRow {
  kind: 'deferred';
  d_id: number;
  until: Date;
  paused: boolean;
}

/** A row of the claim: the hook's columns and the others prefixed (d_, a_, e_). */
type WorkRow = Parameters<typeof toHook>[0] & {
  kind: 'claimed';
  d_id: number;
  d_unique_id: string;
  d_attempts: number;
  d_first: Date | null;
  a_enabled: boolean;
  a_patterns: string[];
  a_rights: Partial<Record<ResourceType, Verb[]>>;
  a_access: number;
  a_format: number | null;
  e_type: string;
  e_time: Date;
  e_project: string | null;
  e_campaign: string | null;
  e_previous: number | null;
  e_snapshot: unknown;
  /** A lead event's lead definition fields (rows of lead_definition_fields); null for other events. */
  fields: FieldRow[] | null;
};

function toWork(r: WorkRow): DeliveryWork {
  return {
    delivery: { id: r.d_id, uniqueId: r.d_unique_id, attempts: r.d_attempts, firstAttemptTime: r.d_first },
    hook: toHook(r),
    account: {
      id: r.account_id,
      enabled: r.a_enabled,
      projectPatterns: r.a_patterns,
      rights: r.a_rights,
      entryAccess: EntryAccess.toName(r.a_access),
      dateTimeFormat: r.a_format === null ? 'Offset' : DateTimeFormat.toName(r.a_format),
    },
    event: {
      type: r.e_type,
      occurredTime: r.e_time,
      project: r.e_project,
      campaignCode: r.e_campaign,
      previousStatus: r.e_previous === null ? null : LeadStatus.toName(r.e_previous),
      snapshot: r.e_snapshot,
    },
    ...(r.fields !== null ? { leadFields: r.fields.map(toFieldRule) } : {}),
  };
}

interface FieldRow {
  name: string;
  import_name: string | null;
  type: FieldType;
  required: boolean;
  access: number;
  external_key: boolean;
  sort_order: number;
}

const toFieldRule = (f: FieldRow): LeadFieldRule => ({
  name: f.name,
  importName: f.import_name,
  type: f.type,
  required: f.required,
  access: EntryAccess.toName(f.access),
  externalKey: f.external_key,
  sortOrder: f.sort_order,
});

/** The fields of a lead definition as they are now (entry access decides what a hook account sees). */
export async function leadDefinitionFieldsById(db: Knex, leadDefinitionId: number): Promise<LeadFieldRule[]> {
  const rows = await db<FieldRow & { id: number; lead_definition_id: number }>('lead_definition_fields')
    .where({ lead_definition_id: leadDefinitionId })
    .orderBy(['sort_order', 'id']);
  return rows.map(toFieldRule);
}

export type AttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused' | 'skipped';

export interface AttemptRecord {
  deliveryId: number;
  hookId: number;
  attempt: number;
  attemptTime: Date;
  outcome: AttemptOutcome;
  statusCode?: number;
  durationMs?: number;
  error?: string;
  responseBody?: string;
  workerId?: string;
  /** The delivery's state after this attempt. */
  status: DeliveryStatus;
  /** When pending: when the next attempt is due (clock time) and its delay from now. */
  next?: { time: Date; delayMs: number };
  /** A failed attempt: after this many failures in a row the hook is paused until `pauseUntil`. */
  breaker?: { failures: number; pauseUntil: Date };
  /** Why the address or URL was refused (shown on the hook); the delivery has then failed at once. */
  refused?: string;
}

/** What an attempt does to its hook's failure clock: a delivery stops it, a failure starts it. */
export type HookHealth = 'healthy' | 'failing' | 'unchanged';

/**
 * Writes the attempt, the delivery's new state, the hook's failure clock and, if there is a
 * next attempt, its job, in one statement (one round trip, atomic without a transaction of its
 * own). Returns the hook's failure clock start when `health` is 'failing' and the hook is enabled.
 */
export async function recordAttempt(
  db: Knex | Knex.Transaction,
  a: AttemptRecord,
  health: HookHealth = 'unchanged',
): Promise<Date | undefined> {
  const finished = a.status !== 'pending';
  // The hook's failure clock and circuit breaker: a delivery resets both; a failure counts, and
  // the breaker-th failure in a row pauses the hook until its next retry time.
  const breaker = a.breaker ?? { failures: Number.MAX_SAFE_INTEGER, pauseUntil: a.attemptTime };
  const hookSql =
    health === 'healthy'
      ? `update hooks set failing_since = null, consecutive_failures = 0, paused_until = null, refused_reason = null, refused_time = null
          where id = ? and (failing_since is not null or consecutive_failures > 0 or paused_until is not null or refused_reason is not null)
            and exists (select 1 from d) returning failing_since, enabled`
      : health === 'failing'
        ? `update hooks set failing_since = coalesce(failing_since, ?), consecutive_failures = consecutive_failures + 1,
                  paused_until = case when consecutive_failures + 1 >= ? then greatest(paused_until, ?) else paused_until end,
                  refused_reason = coalesce(?, refused_reason), refused_time = case when ?::text is null then refused_time else ? end
            where id = ? and exists (select 1 from d) returning failing_since, enabled`
        : `select null::timestamptz as failing_since, null::boolean as enabled where false`;
  const hookBindings: Knex.RawBinding[] =
    health === 'failing'
      ? [a.attemptTime, breaker.failures, breaker.pauseUntil, a.refused ?? null, a.refused ?? null, a.attemptTime, a.hookId]
      : health === 'healthy'
        ? [a.hookId]
        : [];
  const job = a.next ? deliveryAttemptJobSql({ deliveryId: a.deliveryId, attempt: a.attempt + 1 }, a.next.delayMs) : undefined;
  // Everything hangs on the delivery's update (d): a delivery deleted meanwhile (its hook was
  // deleted while the attempt was sent) gets no attempt row, no hook change and no next job.
  const { rows } = await db.raw<{ rows: { failing_since: Date | null; enabled: boolean | null }[] }>(
    `with d as (
       update hook_deliveries
          set status = ?, attempts = ?, first_attempt_time = coalesce(first_attempt_time, ?), last_attempt_time = ?,
              next_attempt_time = ?, in_flight_until = null, last_status_code = ?, last_error = ?, completed_time = ?
        where id = ?
       returning id),
     a as (
       insert into hook_delivery_attempts
         (delivery_id, attempt, attempt_time, outcome, status_code, duration_ms, error, response_body, next_attempt_time, worker_id)
       select d.id, ?, ?, ?, ?, ?, ?, ?, ?, ? from d),
     h as (${hookSql})
     select h.failing_since, h.enabled${job ? `, (select count(*) from (${job.sql}) j where exists (select 1 from d)) as queued` : ''}
       from (select 1) one left join h on true`,
    [
      a.status,
      a.attempt,
      a.attemptTime,
      a.attemptTime,
      a.next?.time ?? null,
      a.statusCode ?? null,
      a.error ?? null,
      finished ? a.attemptTime : null,
      a.deliveryId,
      a.attempt,
      a.attemptTime,
      a.outcome,
      a.statusCode ?? null,
      a.durationMs ?? null,
      a.error ?? null,
      a.responseBody ?? null,
      a.next?.time ?? null,
      a.workerId ?? null,
      ...hookBindings,
      ...(job?.bindings ?? []),
    ],
  );
  const row = rows[0];
  return health === 'failing' && row?.enabled && row.failing_since ? row.failing_since : undefined;
}

/** A delivered attempt, as recordDeliveredAttempts takes it. */
export type DeliveredAttempt = Omit<AttemptRecord, 'outcome' | 'status' | 'next'>;

/**
 * Records delivered attempts, several deliveries in one statement: each attempt row, its
 * delivery's new state (delivered) and its hook's failure clock stopped — what recordAttempt
 * does with `status: 'delivered'` and health 'healthy', for many at once. A delivery is only
 * written if the attempt is still its next one (its `attempts` is `attempt - 1`): an attempt
 * recorded meanwhile by another worker (after this one's lease had run out) is kept, and this
 * one is left out instead of failing the whole statement. Returns the ids of the deliveries
 * recorded.
 */
export async function recordDeliveredAttempts(db: Knex, attempts: DeliveredAttempt[]): Promise<Set<number>> {
  if (attempts.length === 0) return new Set();
  const w = JSON.stringify(
    attempts.map((a) => ({
      delivery_id: a.deliveryId,
      hook_id: a.hookId,
      attempt: a.attempt,
      attempt_time: a.attemptTime.toISOString(),
      status_code: a.statusCode ?? null,
      duration_ms: a.durationMs === undefined ? null : Math.round(a.durationMs),
      error: a.error ?? null,
      response_body: a.responseBody ?? null,
      worker_id: a.workerId ?? null,
    })),
  );
  const { rows } = await db.raw<{ rows: { id: number }[] }>(
    `with w as (
       select * from jsonb_to_recordset(?::jsonb) as w(delivery_id bigint, hook_id bigint, attempt integer, attempt_time timestamptz,
         status_code integer, duration_ms integer, error text, response_body text, worker_id text)),
     d as (
       update hook_deliveries d
          set status = 'delivered', attempts = w.attempt, first_attempt_time = coalesce(d.first_attempt_time, w.attempt_time),
              last_attempt_time = w.attempt_time, next_attempt_time = null, in_flight_until = null,
              last_status_code = w.status_code, last_error = w.error, completed_time = w.attempt_time
         from w
        where d.id = w.delivery_id and d.id = any(?::bigint[]) and d.attempts = w.attempt - 1
        returning d.id),
     a as (
       insert into hook_delivery_attempts
         (delivery_id, attempt, attempt_time, outcome, status_code, duration_ms, error, response_body, next_attempt_time, worker_id)
       select w.delivery_id, w.attempt, w.attempt_time, 'delivered', w.status_code, w.duration_ms, w.error, w.response_body, null, w.worker_id
         from w join d on d.id = w.delivery_id),
     h as (
       update hooks set failing_since = null, consecutive_failures = 0, paused_until = null, refused_reason = null, refused_time = null
        where id in (select w.hook_id from w join d on d.id = w.delivery_id)
          and (failing_since is not null or consecutive_failures > 0 or paused_until is not null or refused_reason is not null))
     select id from d`,
    [w, idArray(attempts.map((a) => a.deliveryId))],
  );
  return new Set(rows.map((r) => r.id));
}

export async function disableHook(trx: Knex.Transaction, hookId: number, reason: string, at: Date): Promise<void> {
  await trx('hooks')
    .where({ id: hookId, enabled: true })
    .update({ enabled: false, disabled_reason: reason, disabled_time: at, modified_time: at });
}

// ---- worker heartbeats -------------------------------------------------------------------------

/** Records that a worker pool is alive. */
export async function heartbeat(db: Knex, workerId: string, host: string): Promise<void> {
  await db.raw(
    `insert into hook_workers (worker_id, host) values (?, ?)
       on conflict (worker_id) do update set heartbeat_time = now()`,
    [workerId, host],
  );
}

/**
 * Releases the claimed jobs of worker pools silent for `staleMs` (killed, frozen, cut off) so
 * others pick them up, with the queue's own force_unlock_workers; returns the pools released.
 */
export async function releaseDeadWorkers(db: Knex, staleMs: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { ids: string[] }[] }>(
    `with dead as (delete from hook_workers where heartbeat_time < now() - ? * interval '1 millisecond' returning worker_id),
          ids as (select array_agg(worker_id) as ids from dead)
     select ids, ${JOB_QUEUE_SCHEMA}.force_unlock_workers(ids) from ids where ids is not null`,
    [staleMs],
  );
  return rows.length === 0 ? [] : rows[0]!.ids;
}

/** Releases the claimed jobs of the given worker pools now (pools known to have ended) and forgets their heartbeats. */
export async function releaseWorkers(db: Knex, workerIds: string[]): Promise<void> {
  await db.raw(
    `with gone as (delete from hook_workers where worker_id = any(?::text[]))
     select ${JOB_QUEUE_SCHEMA}.force_unlock_workers(?::text[])`,
    [workerIds, workerIds],
  );
}

export async function forgetWorker(db: Knex, workerId: string): Promise<void> {
  await db('hook_workers').where({ worker_id: workerId }).delete();
}
