import type { Knex } from 'knex';
import { DateTimeFormat, DateTimeFormatName, EntryAccess, EntryAccessName, FieldType, LeadStatus, LeadStatusName, ResourceType, Verb } from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import { toHook, HookRecord, DeliveryStatus } from './hookRepository';
import { enqueueDeliveryAttempt, JOB_QUEUE_SCHEMA } from './jobQueue';

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
}

export type Claim =
  | { kind: 'claimed'; work: DeliveryWork }
  /** The attempt was made already, or the delivery is finished or gone: nothing to do. */
  | { kind: 'done' }
  /** Another attempt of this delivery is being sent right now. */
  | { kind: 'busy' };

/**
 * Claims attempt `attempt` of a delivery for `leaseMs`: no second attempt of the same delivery
 * starts while it runs, whichever worker or job it comes from.
 */
export async function claimDeliveryAttempt(db: Knex, deliveryId: number, attempt: number, leaseMs: number): Promise<Claim> {
  const { rows } = await db.raw(
    `update hook_deliveries set in_flight_until = now() + ? * interval '1 millisecond'
      where id = ? and status = 'pending' and attempts = ? and (in_flight_until is null or in_flight_until < now())
      returning id`,
    [leaseMs, deliveryId, attempt - 1],
  );
  if (rows.length === 0) {
    const row = await db('hook_deliveries').where({ id: deliveryId }).first('status', 'attempts', db.raw('in_flight_until > now() as busy'));
    if (row && row.status === 'pending' && row.attempts === attempt - 1 && row.busy) return { kind: 'busy' };
    return { kind: 'done' };
  }
  const { rows: work } = await db.raw(
    `select d.id as d_id, d.unique_id as d_unique_id, d.attempts as d_attempts, d.first_attempt_time as d_first,
            a.enabled as a_enabled, a.project_patterns as a_patterns, a.rights as a_rights, a.entry_access as a_access, (to_jsonb(a) ->> 'date_time_format')::smallint as a_format,
            e.type as e_type, e.occurred_time as e_time, e.project as e_project, e.campaign_code as e_campaign,
            e.previous_status as e_previous, e.snapshot as e_snapshot, h.*
       from hook_deliveries d join hooks h on h.id = d.hook_id join accounts a on a.id = h.account_id
       join hook_events e on e.id = d.event_id
      where d.id = ?`,
    [deliveryId],
  );
  const r = work[0];
  if (!r) return { kind: 'done' };
  return {
    kind: 'claimed',
    work: {
      delivery: { id: r.d_id, uniqueId: r.d_unique_id, attempts: r.d_attempts, firstAttemptTime: r.d_first },
      hook: toHook(r),
      account: {
        id: r.account_id,
        enabled: r.a_enabled,
        projectPatterns: r.a_patterns,
        rights: r.a_rights,
        entryAccess: EntryAccess.toName(r.a_access) as EntryAccessName,
        dateTimeFormat: r.a_format === null ? 'Offset' : (DateTimeFormat.toName(r.a_format) as DateTimeFormatName),
      },
      event: {
        type: r.e_type,
        occurredTime: r.e_time,
        project: r.e_project,
        campaignCode: r.e_campaign,
        previousStatus: r.e_previous === null ? null : (LeadStatus.toName(r.e_previous) as LeadStatusName),
        snapshot: r.e_snapshot,
      },
    },
  };
}

/** The fields of a lead definition as they are now (entry access decides what a hook account sees). */
export async function leadDefinitionFieldsById(db: Knex, leadDefinitionId: number): Promise<LeadFieldRule[]> {
  const rows = await db('lead_definition_fields').where({ lead_definition_id: leadDefinitionId }).orderBy(['sort_order', 'id']);
  return rows.map((f) => ({
    name: f.name as string,
    importName: f.import_name as string | null,
    type: f.type as FieldType,
    required: f.required as boolean,
    access: EntryAccess.toName(f.access) as EntryAccessName,
    externalKey: f.external_key as boolean,
    sortOrder: f.sort_order as number,
  }));
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

/** Writes the attempt and the delivery's new state, and queues the next attempt if there is one. */
export async function recordAttempt(trx: Knex.Transaction, a: AttemptRecord): Promise<void> {
  await trx('hook_delivery_attempts').insert({
    delivery_id: a.deliveryId,
    attempt: a.attempt,
    attempt_time: a.attemptTime,
    outcome: a.outcome,
    status_code: a.statusCode ?? null,
    duration_ms: a.durationMs ?? null,
    error: a.error ?? null,
    response_body: a.responseBody ?? null,
    next_attempt_time: a.next?.time ?? null,
    worker_id: a.workerId ?? null,
  });
  const finished = a.status !== 'pending';
  await trx('hook_deliveries')
    .where({ id: a.deliveryId })
    .update({
      status: a.status,
      attempts: a.attempt,
      first_attempt_time: trx.raw('coalesce(first_attempt_time, ?)', [a.attemptTime]),
      last_attempt_time: a.attemptTime,
      next_attempt_time: a.next?.time ?? null,
      in_flight_until: null,
      last_status_code: a.statusCode ?? null,
      last_error: a.error ?? null,
      completed_time: finished ? a.attemptTime : null,
    });
  if (a.next) await enqueueDeliveryAttempt(trx, { deliveryId: a.deliveryId, attempt: a.attempt + 1 }, a.next.delayMs);
}

/** A successful attempt: the hook is no longer failing. */
export async function markHookHealthy(trx: Knex.Transaction, hookId: number): Promise<void> {
  await trx('hooks').where({ id: hookId }).whereNotNull('failing_since').update({ failing_since: null });
}

/** A failed attempt: the hook's failure clock starts (if it was not running); returns its start. */
export async function markHookFailing(trx: Knex.Transaction, hookId: number, at: Date): Promise<Date | undefined> {
  const [row] = await trx('hooks')
    .where({ id: hookId })
    .update({ failing_since: trx.raw('coalesce(failing_since, ?)', [at]) })
    .returning(['failing_since', 'enabled']);
  return row && row.enabled ? (row.failing_since as Date) : undefined;
}

export async function disableHook(trx: Knex.Transaction, hookId: number, reason: string, at: Date): Promise<void> {
  await trx('hooks').where({ id: hookId, enabled: true }).update({ enabled: false, disabled_reason: reason, disabled_time: at, modified_time: at });
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
  const { rows } = await db.raw(
    `with dead as (delete from hook_workers where heartbeat_time < now() - ? * interval '1 millisecond' returning worker_id),
          ids as (select array_agg(worker_id) as ids from dead)
     select ids, ${JOB_QUEUE_SCHEMA}.force_unlock_workers(ids) from ids where ids is not null`,
    [staleMs],
  );
  return rows.length === 0 ? [] : (rows[0].ids as string[]);
}

export async function forgetWorker(db: Knex, workerId: string): Promise<void> {
  await db('hook_workers').where({ worker_id: workerId }).delete();
}
