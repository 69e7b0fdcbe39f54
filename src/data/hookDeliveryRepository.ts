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
import { toHook, HookRecord, DeliveryStatus } from './hookRepository';
import { deliveryAttemptJobSql, JOB_QUEUE_SCHEMA } from './jobQueue';

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
  /** Another attempt of this delivery is being sent right now. */
  | { kind: 'busy' };

/** A Postgres array literal of ids (bound as one parameter, cast to bigint[]). */
const idArray = (ids: number[]) => `{${ids.map((id) => String(Math.trunc(id))).join(',')}}`;

/** One attempt a job asks to claim. */
export interface ClaimRequest {
  deliveryId: number;
  attempt: number;
}

/**
 * Claims attempt `attempt` of each delivery for `leaseMs` and loads what each attempt needs
 * (the delivery, its hook, the hook's account, the event and, for lead events, the lead
 * definition's fields as they are now) in one statement for all of them: no second attempt of
 * the same delivery starts while one runs, whichever worker or job it comes from. Each row is
 * claimed on its own conditions, exactly as if it were claimed alone; a delivery may appear
 * once per call (the caller sends a second request for it in a later call). The answers are in
 * the order of the requests.
 */
export async function claimDeliveryAttempts(db: Knex, requests: ClaimRequest[], leaseMs: number): Promise<Claim[]> {
  if (requests.length === 0) return [];
  if (new Set(requests.map((r) => r.deliveryId)).size !== requests.length)
    throw new Error('claimDeliveryAttempts: a delivery appears twice');
  const wanted = JSON.stringify(requests.map((r) => ({ id: r.deliveryId, attempts: r.attempt - 1 })));
  // The ids again as an array: the planner cannot count the rows of jsonb_to_recordset (it
  // guesses 100) and, on a table of some thousands of deliveries, scans it all instead of
  // taking the primary key; `id = any(array)` leads it to the index at every size.
  const ids = idArray(requests.map((r) => r.deliveryId));
  const { rows: work } = await db.raw<{ rows: WorkRow[] }>(
    `with w as (select * from jsonb_to_recordset(?::jsonb) as w(id bigint, attempts integer)),
     c as (
       update hook_deliveries d set in_flight_until = now() + ? * interval '1 millisecond'
         from w
        where d.id = w.id and d.id = any(?::bigint[]) and d.status = 'pending' and d.attempts = w.attempts and (d.in_flight_until is null or d.in_flight_until < now())
        returning d.id, d.unique_id, d.attempts, d.first_attempt_time, d.hook_id, d.event_id)
     select c.id as d_id, c.unique_id as d_unique_id, c.attempts as d_attempts, c.first_attempt_time as d_first,
            a.enabled as a_enabled, a.project_patterns as a_patterns, a.rights as a_rights, a.entry_access as a_access, (to_jsonb(a) ->> 'date_time_format')::smallint as a_format,
            e.type as e_type, e.occurred_time as e_time, e.project as e_project, e.campaign_code as e_campaign,
            e.previous_status as e_previous, e.snapshot as e_snapshot,
            case when jsonb_typeof(e.snapshot #> '{campaign,leadDefinitionId}') = 'number' then
              (select coalesce(jsonb_agg(to_jsonb(f) order by f.sort_order, f.id), '[]') from lead_definition_fields f
                where f.lead_definition_id = (e.snapshot #>> '{campaign,leadDefinitionId}')::bigint)
            end as fields,
            h.*
       from c join hooks h on h.id = c.hook_id join accounts a on a.id = h.account_id
       join hook_events e on e.id = c.event_id`,
    [wanted, leaseMs, ids],
  );
  const claimed = new Map<number, WorkRow>(work.map((r) => [r.d_id, r]));
  const missed = requests.filter((r) => !claimed.has(r.deliveryId)).map((r) => r.deliveryId);
  // Why a request was not claimed: its attempt is being sent right now, or there is nothing to do.
  const busy = new Set<number>();
  if (missed.length > 0) {
    const rows = await db('hook_deliveries')
      .whereIn('id', missed)
      .select<{ id: number; status: string; attempts: number; busy: boolean }[]>(
        'id',
        'status',
        'attempts',
        db.raw('coalesce(in_flight_until > now(), false) as busy'),
      );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of requests) {
      const row = byId.get(r.deliveryId);
      if (row && row.status === 'pending' && row.attempts === r.attempt - 1 && row.busy) busy.add(r.deliveryId);
    }
  }
  return requests.map((r): Claim => {
    const row = claimed.get(r.deliveryId);
    if (row) return { kind: 'claimed', work: toWork(row) };
    return busy.has(r.deliveryId) ? { kind: 'busy' } : { kind: 'done' };
  });
}

/** A row of the claim: the hook's columns and the others prefixed (d_, a_, e_). */
type WorkRow = Parameters<typeof toHook>[0] & {
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
  const hookSql =
    health === 'healthy'
      ? `update hooks set failing_since = null where id = ? and failing_since is not null returning failing_since, enabled`
      : health === 'failing'
        ? `update hooks set failing_since = coalesce(failing_since, ?) where id = ? returning failing_since, enabled`
        : `select null::timestamptz as failing_since, null::boolean as enabled where false`;
  const hookBindings: Knex.RawBinding[] = health === 'failing' ? [a.attemptTime, a.hookId] : health === 'healthy' ? [a.hookId] : [];
  const job = a.next ? deliveryAttemptJobSql({ deliveryId: a.deliveryId, attempt: a.attempt + 1 }, a.next.delayMs) : undefined;
  const { rows } = await db.raw<{ rows: { failing_since: Date | null; enabled: boolean | null }[] }>(
    `with a as (
       insert into hook_delivery_attempts
         (delivery_id, attempt, attempt_time, outcome, status_code, duration_ms, error, response_body, next_attempt_time, worker_id)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)),
     d as (
       update hook_deliveries
          set status = ?, attempts = ?, first_attempt_time = coalesce(first_attempt_time, ?), last_attempt_time = ?,
              next_attempt_time = ?, in_flight_until = null, last_status_code = ?, last_error = ?, completed_time = ?
        where id = ?),
     h as (${hookSql})
     select h.failing_since, h.enabled${job ? `, (${job.sql}) as queued` : ''} from (select 1) one left join h on true`,
    [
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
      a.status,
      a.attempt,
      a.attemptTime,
      a.attemptTime,
      a.next?.time ?? null,
      a.statusCode ?? null,
      a.error ?? null,
      finished ? a.attemptTime : null,
      a.deliveryId,
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
       update hooks set failing_since = null
        where id in (select w.hook_id from w join d on d.id = w.delivery_id) and failing_since is not null)
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
