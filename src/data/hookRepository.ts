import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { LeadClosure, LeadClosureName, LeadStatus, LeadStatusName } from '../domain/enums';
import type { HookEventName, HookFormat, HookMethod, StandardTemplateName } from '../domain/hooks';
import { TEST_EVENT } from '../domain/hooks';
import { newHookSecret } from '../domain/hookSignature';
import type { LeadSnapshot } from '../domain/hookMessages';
import { deliveryJobKeySql, enqueueDeliveryAttempt, JOB_QUEUE_SCHEMA, HOOK_DELIVERY_TASK } from './jobQueue';

/**
 * Hooks of an account (the WebHooks resource), their deliveries log, test deliveries and
 * redelivery. A hook belongs to the account that created it; other accounts never see it.
 */
export interface HookRecord {
  id: number;
  uniqueId: string;
  accountId: number;
  name: string;
  description: string | null;
  url: string;
  method: HookMethod;
  format: HookFormat;
  events: HookEventName[];
  campaignCode: string | null;
  projects: string[] | null;
  leadStatus: LeadStatusName | null;
  leadReleaseType: LeadClosureName | null;
  contentTemplate: string | null;
  standardTemplate: StandardTemplateName;
  secret: string;
  enabled: boolean;
  disabledReason: string | null;
  disabledTime: Date | null;
  failingSince: Date | null;
  /** Failed attempts in a row since the last delivered one (the circuit breaker counts them). */
  consecutiveFailures: number;
  /** The circuit breaker is open: no attempt before this time. */
  pausedUntil: Date | null;
  /** Why the last refused attempt was refused (the address or URL), and when. */
  refusedReason: string | null;
  refusedTime: Date | null;
  createdTime: Date;
  modifiedTime: Date;
}

/** What a client writes (create and full replacement). */
export interface HookInput {
  name: string;
  description: string | null;
  url: string;
  method: HookMethod;
  format: HookFormat;
  events: HookEventName[];
  campaignCode: string | null;
  projects: string[] | null;
  leadStatus: LeadStatusName | null;
  leadReleaseType: LeadClosureName | null;
  contentTemplate: string | null;
  standardTemplate: StandardTemplateName;
  enabled: boolean;
}

interface HookRow {
  id: number;
  unique_id: string;
  account_id: number;
  name: string;
  description: string | null;
  url: string;
  method: HookMethod;
  format: HookFormat;
  events: HookEventName[];
  campaign_code: string | null;
  projects: string[] | null;
  lead_status: number | null;
  lead_release_type: number | null;
  content_template: string | null;
  standard_template: StandardTemplateName;
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_time: Date | null;
  failing_since: Date | null;
  consecutive_failures: number;
  paused_until: Date | null;
  refused_reason: string | null;
  refused_time: Date | null;
  created_time: Date;
  modified_time: Date;
}

export function toHook(row: HookRow): HookRecord {
  return {
    id: row.id,
    uniqueId: row.unique_id,
    accountId: row.account_id,
    name: row.name,
    description: row.description,
    url: row.url,
    method: row.method,
    format: row.format,
    events: row.events,
    campaignCode: row.campaign_code,
    projects: row.projects,
    leadStatus: row.lead_status === null ? null : LeadStatus.toName(row.lead_status),
    leadReleaseType: row.lead_release_type === null ? null : LeadClosure.toName(row.lead_release_type),
    contentTemplate: row.content_template,
    standardTemplate: row.standard_template,
    secret: row.secret,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    disabledTime: row.disabled_time,
    failingSince: row.failing_since,
    consecutiveFailures: row.consecutive_failures,
    pausedUntil: row.paused_until,
    refusedReason: row.refused_reason,
    refusedTime: row.refused_time,
    createdTime: row.created_time,
    modifiedTime: row.modified_time,
  };
}

function inputColumns(input: HookInput) {
  return {
    name: input.name,
    description: input.description,
    url: input.url,
    method: input.method,
    format: input.format,
    events: input.events,
    campaign_code: input.campaignCode,
    projects: input.projects,
    lead_status: input.leadStatus === null ? null : LeadStatus.toNumber(input.leadStatus),
    lead_release_type: input.leadReleaseType === null ? null : LeadClosure.toNumber(input.leadReleaseType),
    content_template: input.contentTemplate,
    standard_template: input.standardTemplate,
  };
}

export async function listHooks(db: Knex, accountId: number): Promise<HookRecord[]> {
  const rows = await db<HookRow>('hooks')
    .where({ account_id: accountId })
    .orderBy([{ column: 'created_time' }, { column: 'id' }]);
  return rows.map(toHook);
}

export async function findHook(db: Knex | Knex.Transaction, accountId: number, uniqueId: string): Promise<HookRecord | undefined> {
  const row = await db<HookRow>('hooks').where({ account_id: accountId, unique_id: uniqueId }).first();
  return row ? toHook(row) : undefined;
}

export async function createHook(db: Knex, accountId: number, input: HookInput): Promise<HookRecord> {
  const [row] = await db<HookRow>('hooks')
    .insert({
      unique_id: randomUUID(),
      account_id: accountId,
      secret: newHookSecret(),
      enabled: input.enabled,
      ...inputColumns(input),
    })
    .returning('*');
  return toHook(row!);
}

/**
 * Full replacement. Enabling a disabled hook clears its reason and starts its failure clock
 * again; disabling it by hand records no reason.
 */
export async function replaceHook(db: Knex, accountId: number, uniqueId: string, input: HookInput): Promise<HookRecord | undefined> {
  const [row] = await db<HookRow>('hooks')
    .where({ account_id: accountId, unique_id: uniqueId })
    .update({
      ...inputColumns(input),
      enabled: input.enabled,
      disabled_reason: db.raw('case when ? then null else disabled_reason end', [input.enabled]),
      disabled_time: db.raw('case when ? then null when enabled then now() else disabled_time end', [input.enabled]),
      failing_since: db.raw('case when ? and not enabled then null else failing_since end', [input.enabled]),
      // A replaced hook (a new URL, perhaps) starts with its circuit breaker closed.
      consecutive_failures: 0,
      paused_until: null,
      refused_reason: null,
      refused_time: null,
      modified_time: db.fn.now(),
    })
    .returning('*');
  return row ? toHook(row) : undefined;
}

/** First key of the advisory locks that serialise the claims of an account's deliveries (the second is the account id). */
const CLAIM_LOCK_NAMESPACE = 0x484b43; // 'HKC'

/**
 * Takes, for the transaction, the locks that serialise claiming the deliveries of these accounts
 * (src/data/hookDeliveryRepository.ts), in account order so that no two transactions deadlock.
 */
export async function lockDeliveryClaims(trx: Knex.Transaction, accountIds: number[]): Promise<void> {
  await trx.raw(
    `select count(pg_advisory_xact_lock(?::int, (a % 2147483647)::int)) from (select distinct unnest(?::bigint[]) as a order by 1) x`,
    [CLAIM_LOCK_NAMESPACE, `{${accountIds.map((id) => String(Math.trunc(id))).join(',')}}`],
  );
}

/**
 * Deletes the hook with its deliveries log and, in the same transaction, the queue's jobs of its
 * pending deliveries (the queue's own remove_job: a job that is running keeps running, is not
 * tried again, and its attempt finds its delivery gone). Returns the deliveries cancelled, or
 * undefined when the account has no such hook.
 */
export async function deleteHook(db: Knex, accountId: number, uniqueId: string): Promise<{ cancelled: number } | undefined> {
  return db.transaction(async (trx) => {
    const found = await trx('hooks').where({ account_id: accountId, unique_id: uniqueId }).first<{ id: number } | undefined>('id');
    if (!found) return undefined;
    // Locks in the order the delivery workers take them (the account's claim lock, the
    // deliveries, then the hook): an attempt being recorded finishes first and its next job is
    // then removed below, instead of a deadlock or a job left behind for a deleted delivery.
    await lockDeliveryClaims(trx, [accountId]);
    await trx.raw(`select count(*) from (select 1 from hook_deliveries where hook_id = ? for update) locked`, [found.id]);
    const hook = await trx('hooks').where({ id: found.id }).forUpdate().first<{ id: number } | undefined>('id');
    if (!hook) return undefined;
    const { rows } = await trx.raw<{ rows: { cancelled: number }[] }>(
      `select count(${JOB_QUEUE_SCHEMA}.remove_job(${deliveryJobKeySql('d.id')}))::int as cancelled
         from hook_deliveries d where d.hook_id = ? and d.status = 'pending'`,
      [hook.id],
    );
    await trx('hooks').where({ id: hook.id }).delete();
    return { cancelled: rows[0]?.cancelled ?? 0 };
  });
}

interface CampaignForHookRow {
  id: number;
  unique_id: string;
  code: string;
  project: string;
  lead_definition_id: number;
  visible: boolean;
}

/** A campaign by code with whether the account's project patterns reach it; undefined when unknown. */
export async function findCampaignForHook(
  db: Knex,
  code: string,
  projectPatterns: string[],
): Promise<{ id: number; uniqueId: string; code: string; project: string; leadDefinitionId: number; visible: boolean } | undefined> {
  const { rows } = await db.raw<{ rows: CampaignForHookRow[] }>(
    `select c.id, c.unique_id, c.code, c.project, c.lead_definition_id,
            exists (select 1 from unnest(?::text[]) p where lower(c.project) like lcm_glob_to_like(p)) as visible
       from campaigns c where c.code = ?`,
    [projectPatterns, code],
  );
  const r = rows[0];
  return r
    ? { id: r.id, uniqueId: r.unique_id, code: r.code, project: r.project, leadDefinitionId: r.lead_definition_id, visible: r.visible }
    : undefined;
}

// ---- deliveries ----------------------------------------------------------------------------

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

interface DeliveryAttemptRecord {
  attempt: number;
  attemptTime: Date;
  outcome: string;
  statusCode: number | null;
  durationMs: number | null;
  error: string | null;
  responseBody: string | null;
  nextAttemptTime: Date | null;
}

export interface DeliveryRecord {
  uniqueId: string;
  eventType: string;
  eventTime: Date;
  resourceId: string;
  status: DeliveryStatus;
  attempts: number;
  createdTime: Date;
  lastAttemptTime: Date | null;
  nextAttemptTime: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  completedTime: Date | null;
  attemptLog: DeliveryAttemptRecord[];
}

interface DeliveryRow {
  unique_id: string;
  type: string;
  occurred_time: Date;
  resource_id: string;
  status: DeliveryStatus;
  attempts: number;
  created_time: Date;
  last_attempt_time: Date | null;
  next_attempt_time: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  completed_time: Date | null;
  /** json_agg of the attempts: times are ISO text. */
  attempt_log: {
    attempt: number;
    attemptTime: string;
    outcome: string;
    statusCode: number | null;
    durationMs: number | null;
    error: string | null;
    responseBody: string | null;
    nextAttemptTime: string | null;
  }[];
}

/** Deliveries of a hook created in [from, to), oldest first, with their attempts. */
export async function listDeliveries(db: Knex, hookId: number, from: Date, to: Date, limit: number): Promise<DeliveryRecord[]> {
  const { rows } = await db.raw<{ rows: DeliveryRow[] }>(
    `select d.unique_id, e.type, e.occurred_time, e.resource_id, d.status, d.attempts, d.created_time,
            d.last_attempt_time, d.next_attempt_time, d.last_status_code, d.last_error, d.completed_time,
            coalesce((select json_agg(json_build_object(
                'attempt', a.attempt, 'attemptTime', a.attempt_time, 'outcome', a.outcome, 'statusCode', a.status_code,
                'durationMs', a.duration_ms, 'error', a.error, 'responseBody', a.response_body,
                'nextAttemptTime', a.next_attempt_time) order by a.attempt)
              from hook_delivery_attempts a where a.delivery_id = d.id), '[]') as attempt_log
       from hook_deliveries d join hook_events e on e.id = d.event_id
      where d.hook_id = ? and d.created_time >= ? and d.created_time < ?
      order by d.created_time, d.id
      limit ?`,
    [hookId, from, to, limit],
  );
  return rows.map((r) => ({
    uniqueId: r.unique_id,
    eventType: r.type,
    eventTime: r.occurred_time,
    resourceId: r.resource_id,
    status: r.status,
    attempts: r.attempts,
    createdTime: r.created_time,
    lastAttemptTime: r.last_attempt_time,
    nextAttemptTime: r.next_attempt_time,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    completedTime: r.completed_time,
    attemptLog: r.attempt_log.map((a) => ({
      attempt: a.attempt,
      attemptTime: new Date(a.attemptTime),
      outcome: a.outcome,
      statusCode: a.statusCode,
      durationMs: a.durationMs,
      error: a.error,
      responseBody: a.responseBody,
      nextAttemptTime: a.nextAttemptTime === null ? null : new Date(a.nextAttemptTime),
    })),
  }));
}

/**
 * Sends a delivery again: a finished one (delivered, failed or skipped) becomes pending with a
 * new retry window and keeps its webhook-id; a pending one is brought forward to now.
 */
export async function redeliver(
  db: Knex,
  hookId: number,
  deliveryUniqueId: string,
): Promise<{ uniqueId: string; status: DeliveryStatus } | undefined> {
  return db.transaction(async (trx) => {
    const row = await trx('hook_deliveries')
      .where({ hook_id: hookId, unique_id: deliveryUniqueId })
      .forUpdate()
      .first<{ id: number; attempts: number; status: DeliveryStatus } | undefined>('id', 'attempts', 'status');
    if (!row) return undefined;
    await trx('hook_deliveries')
      .where({ id: row.id })
      .update({
        status: 'pending',
        next_attempt_time: trx.fn.now(),
        completed_time: null,
        // A new retry window from the next attempt on.
        first_attempt_time: row.status === 'pending' ? trx.raw('first_attempt_time') : null,
      });
    await enqueueDeliveryAttempt(trx, { deliveryId: row.id, attempt: row.attempts + 1 });
    return { uniqueId: deliveryUniqueId, status: 'pending' as const };
  });
}

/** Queues a `hook.test` delivery of a sample lead to this hook alone; undefined when the hook is gone. */
export async function queueTestDelivery(db: Knex, hookId: number, snapshot: LeadSnapshot, occurredTime: Date): Promise<string | undefined> {
  return db.transaction(async (trx) => {
    // Held until the delivery is queued: a delete of the hook meanwhile waits, or went first.
    const hook = await trx('hooks').where({ id: hookId }).forKeyShare().first<{ id: number } | undefined>('id');
    if (hook === undefined) return undefined;
    const [event] = await trx('hook_events')
      .insert({
        type: TEST_EVENT,
        occurred_time: occurredTime,
        resource_id: snapshot.row.uniqueId,
        snapshot: JSON.stringify(snapshot),
      })
      .returning<{ id: number }[]>('id');
    const uniqueId = newMessageId();
    const [delivery] = await trx('hook_deliveries')
      .insert({ unique_id: uniqueId, hook_id: hookId, event_id: event!.id, status: 'pending', next_attempt_time: trx.fn.now() })
      .returning<{ id: number }[]>('id');
    await enqueueDeliveryAttempt(trx, { deliveryId: delivery!.id, attempt: 1 });
    return uniqueId;
  });
}

/** A webhook-id: `msg_` and 32 hex digits. */
export const newMessageId = (): string => 'msg_' + randomUUID().replace(/-/g, '');
export const NEW_MESSAGE_ID_SQL = `'msg_' || replace(gen_random_uuid()::text, '-', '')`;

// ---- operations ----------------------------------------------------------------------------

export interface HookQueueStats {
  /** Pending deliveries (due now or scheduled for a retry). */
  pending: number;
  /** Pending deliveries whose attempt is due. */
  due: number;
  /** Seconds since the oldest due delivery became due (0 when none is). */
  oldestDueSeconds: number;
  /** Jobs waiting in the queue (graphile-worker), locked ones included. */
  queuedJobs: number;
}

export async function hookQueueStats(db: Knex): Promise<HookQueueStats> {
  const { rows } = await db.raw<{ rows: { pending: number; due: number; oldest: number; jobs: number }[] }>(
    `select count(*) as pending,
            count(*) filter (where next_attempt_time <= now()) as due,
            coalesce(extract(epoch from now() - min(next_attempt_time) filter (where next_attempt_time <= now())), 0)::float8 as oldest,
            (select count(*) from ${JOB_QUEUE_SCHEMA}.jobs where task_identifier = ?) as jobs
       from hook_deliveries where status = 'pending'`,
    [HOOK_DELIVERY_TASK],
  );
  const r = rows[0]!;
  return { pending: Number(r.pending), due: Number(r.due), oldestDueSeconds: Number(r.oldest), queuedJobs: Number(r.jobs) };
}
