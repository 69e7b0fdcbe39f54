import type { Knex } from 'knex';
import type pg from 'pg';
import { LeadStatus, LeadStatusName } from '../domain/enums';
import { isLeadEvent } from '../domain/hooks';
import type { CalendarEvent } from '../domain/calendarEventSerializer';
import { ENQUEUE_FIRST_ATTEMPTS_SQL } from './jobQueue';
import { NEW_MESSAGE_ID_SQL } from './hookRepository';
import { projectSelectedByColumnSql } from './projectRepository';
import { CALL_FIELDS } from '../domain/callFields';
import { fieldJsonbPairs } from './fieldColumns';
import { queryPreparedRaw } from './db';

/**
 * The event API: code that changes a lead, a call or a calendar event calls one of these with
 * its own transaction, so the event is committed with the change or not at all (no event
 * without its change, no change without its event):
 *
 *   await recordLeadEvent(trx, { type: 'lead.statusChanged', leadId, previousStatus: 'New', time });
 *   await recordLeadEvents(trx, 'lead.statusChanged', [{ leadId, previousStatus }, ...], time);
 *   await recordCallEvent(trx, { callId, startTime, time });
 *   await writeCalendarEvents(db, 'calendarEvent.deleted', time, (returning) => ({ sql: `delete ... returning ${returning}`, bindings }));
 *
 * Each is one SQL statement (lead events: the database function lcm_record_lead_events); calendar
 * events are written by the same statement as the change itself, so it needs no transaction. It
 * stores the event with the resource as it is now in the transaction (a snapshot the delivery
 * and the live event stream render with the API's serializers; every event is kept for the
 * stream, docs/decisions.md "Live events"), matches the hooks that want it (enabled, of an
 * enabled account, subscribed to the type, campaign / projects / lead status / lead release type
 * filters, and the account's project rights) and queues one delivery per such hook with the
 * first attempt's job.
 */

export type LeadEventType = 'lead.created' | 'lead.updated' | 'lead.statusChanged';

export interface LeadEventInput {
  leadId: number;
  /** The status before the change (lead.statusChanged). */
  previousStatus?: LeadStatusName;
}

/** The call as src/domain/hookMessages.ts CallSnapshot, from `calls c` (binding-free). */
const CALL_SNAPSHOT = `(
  select jsonb_build_object(
    'row', jsonb_build_object(${fieldJsonbPairs(CALL_FIELDS, 'c')},
      'campaign_id', c.campaign_id, 'user_id', c.user_id,
      'ou_chain', concat_ws(' ', c.ou0_id, c.ou1_id, c.ou2_id, c.ou3_id, c.ou4_id)),
    'units', coalesce((select jsonb_agg(jsonb_build_object('id', o.id, 'uniqueId', o.unique_id, 'orgCode', o.org_code,
                         'name', o.name, 'level', o.level, 'parentId', o.parent_id) order by o.level)
                       from org_units o where o.id in (c.ou0_id, c.ou1_id, c.ou2_id, c.ou3_id, c.ou4_id)), '[]'),
    'campaignCode', k.code,
    'agentEmail', (select u.email from users u where u.id = c.user_id))
  from calls c join campaigns k on k.id = c.campaign_id where c.id = s.key and c.start_time = s.call_start)`;

/**
 * Whether any enabled hook is subscribed to `type`, asked once per transaction and type (call and
 * calendar events; lcm_record_lead_events asks for lead events): a long transaction (a loader
 * file) then stores its events without matching hooks row by row while no hook wants them. A
 * hook created while such a transaction runs receives the events of later ones.
 */
const wanted = new WeakMap<object, Map<string, boolean>>();
async function anyHookWants(trx: Knex.Transaction, type: string): Promise<boolean> {
  let byType = wanted.get(trx);
  if (byType === undefined) {
    byType = new Map();
    wanted.set(trx, byType);
  }
  let answer = byType.get(type);
  if (answer === undefined) {
    const { rows } = await trx.raw<{ rows: { wanted: boolean }[] }>(
      `select exists (select 1 from hooks where enabled and events @> array[?]::text[]) as wanted`,
      [type],
    );
    answer = rows[0]!.wanted;
    byType.set(type, answer);
  }
  return answer;
}

const isTransaction = (db: Knex | Knex.Transaction): db is Knex.Transaction => db.isTransaction === true;

/**
 * The statement of call and calendar events: `source` selects (key, resource_id, campaign_code,
 * project, lead_status, lead_closure, previous_status) per changed resource, or is the change
 * itself (a data-modifying statement returning them); `snapshot` is an expression over `s`
 * giving its jsonb. Returns the events stored and the deliveries queued. Its hook filters are those
 * of lcm_record_lead_events (the lead events' function in its migration): a new filter goes into both.
 * Within a transaction it asks first whether any hook wants `type` (anyHookWants), unless the
 * change is the statement itself (`source` writes): it then matches the hooks in the same statement
 * (asking first would be a round trip of its own, and outside a transaction nothing could keep the answer).
 */
async function emit(
  trx: Knex | Knex.Transaction,
  type: string,
  time: Date,
  source: { sql: string; bindings: Knex.RawBinding[]; writes?: boolean },
  snapshot: { sql: string; bindings: Knex.RawBinding[] },
): Promise<{ events: number; deliveries: number }> {
  const storeEvents = `insert into hook_events (type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot)
       select ?, ?, s.project, s.campaign_code, s.resource_id, s.previous_status, ${snapshot.sql} from s`;
  if (!source.writes && isTransaction(trx) && !(await anyHookWants(trx, type))) {
    const stored = await trx.raw<{ rowCount: number }>(`with s as (${source.sql}) ${storeEvents}`, [
      ...source.bindings,
      type,
      time,
      ...snapshot.bindings,
    ]);
    return { events: stored.rowCount, deliveries: 0 };
  }
  // A write's statement is prepared (planned once per connection): planning it took longer than running it.
  const run = source.writes
    ? <R extends pg.QueryResultRow>(sql: string, bindings: Knex.RawBinding[]) => queryPreparedRaw<R>(trx, sql, bindings)
    : <R>(sql: string, bindings: Knex.RawBinding[]) => trx.raw<{ rows: R[] }>(sql, bindings);
  const { rows } = await run<{ events: number; deliveries: number }>(
    `with s as (${source.sql}),
     m as (
       select s.key, h.id as hook_id
         from s
         join hooks h on h.enabled and h.events @> array[?]::text[]
         join accounts a on a.id = h.account_id and a.enabled
        where (h.campaign_code is null or h.campaign_code = s.campaign_code)
          and (h.lead_status is null or not ?::boolean or h.lead_status = s.lead_status)
          and (h.lead_release_type is null or ?::text <> 'lead.statusChanged' or h.lead_release_type = s.lead_closure)
          and (h.projects is null or ${projectSelectedByColumnSql('s.project', 'h.projects')})
          and exists (select 1 from unnest(a.project_patterns) p where lower(s.project) like lcm_glob_to_like(p))
       -- A hook being deleted is waited for, then passed over when it is gone (its
       -- delivery would fail the write on the missing hook), as lcm_record_lead_events does.
       for key share of h),
     e as (${storeEvents} returning id, resource_id),
     d as (
       insert into hook_deliveries (unique_id, hook_id, event_id, status, next_attempt_time)
       select ${NEW_MESSAGE_ID_SQL}, m.hook_id, e.id, 'pending', now()
         from m join s on s.key = m.key join e on e.resource_id = s.resource_id
       returning id)
     select (select count(*) from e)::int as events, q.count::int as deliveries from (${ENQUEUE_FIRST_ATTEMPTS_SQL}) q`,
    [...source.bindings, type, isLeadEvent(type), type, type, time, ...snapshot.bindings],
  );
  return { events: Number(rows[0]?.events ?? 0), deliveries: Number(rows[0]?.deliveries ?? 0) };
}

/**
 * Events of many leads of one type (a sweep batch, a bulk import); returns the deliveries queued.
 * Lead events are the database function lcm_record_lead_events (its migration has the statement),
 * which the single import's function calls in the same statement as its insert.
 */
export async function recordLeadEvents(trx: Knex.Transaction, type: LeadEventType, leads: LeadEventInput[], time: Date): Promise<number> {
  if (leads.length === 0) return 0;
  const previous = leads.map((l) => (l.previousStatus === undefined ? null : LeadStatus.toNumber(l.previousStatus)));
  const { rows } = await trx.raw<{ rows: { queued: number }[] }>(
    `select lcm_record_lead_events(?, ?::bigint[], ?::smallint[], ?) as queued`,
    [type, leads.map((l) => l.leadId), previous as unknown as Knex.RawBinding, time],
  );
  return Number(rows[0]?.queued ?? 0);
}

export function recordLeadEvent(
  trx: Knex.Transaction,
  event: { type: LeadEventType; leadId: number; previousStatus?: LeadStatusName; time: Date },
): Promise<number> {
  return recordLeadEvents(
    trx,
    event.type,
    [{ leadId: event.leadId, ...(event.previousStatus ? { previousStatus: event.previousStatus } : {}) }],
    event.time,
  );
}

/** `call.ended` of a completed call; its id and start time find it in its month's partition. Returns the deliveries queued. */
export async function recordCallEvent(trx: Knex.Transaction, event: { callId: number; startTime: Date; time: Date }): Promise<number> {
  const { deliveries } = await emit(
    trx,
    'call.ended',
    event.time,
    {
      sql: `select c.id as key, c.unique_id as resource_id, k.code as campaign_code, k.project,
                   null::smallint as lead_status, null::smallint as lead_closure, null::smallint as previous_status, c.start_time as call_start
              from calls c join campaigns k on k.id = c.campaign_id where c.id = ? and c.start_time = ?`,
      bindings: [event.callId, event.startTime],
    },
    { sql: CALL_SNAPSHOT, bindings: [] },
  );
  return deliveries;
}

export type CalendarEventType = 'calendarEvent.created' | 'calendarEvent.updated' | 'calendarEvent.deleted';

/**
 * What a calendar event write returns (`e` the event's row: as it is after the write, as it was
 * for a deletion), as the source of its hook event: its calendar's project (calendars have no
 * campaign: hooks narrowed to a campaign do not receive calendar events) and its columns.
 */
const WRITTEN_CALENDAR_EVENT = `0::bigint as key, e.unique_id as resource_id, null::text as campaign_code,
  (select k.project from calendars k where k.id = e.calendar_id) as project,
  null::smallint as lead_status, null::smallint as lead_closure, null::smallint as previous_status,
  (select k.code from calendars k where k.id = e.calendar_id) as calendar_code,
  e.lead_unique_id, e.title, e.notes, e.start_time, e.end_time, e.source, e.external_id`;

/** The event as src/domain/hookMessages.ts CalendarEventSnapshot, from `s` (times as JSON writes a Date). */
const isoUtc = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const CALENDAR_EVENT_SNAPSHOT = `jsonb_build_object('uniqueId', s.resource_id, 'calendarCode', s.calendar_code,
  'leadUniqueId', s.lead_unique_id, 'title', s.title, 'notes', s.notes, 'start', ${isoUtc('s.start_time')}, 'end', ${isoUtc('s.end_time')},
  'source', s.source, 'externalId', s.external_id)`;

/**
 * Writes calendar events and records `type` for each in one statement (outside a transaction, one
 * transaction of its own): `write` gets the RETURNING list and gives the data-modifying statement
 * (an insert, update or delete of `calendar_events as e`). Returns the events written; none when
 * the statement's own conditions left every row alone.
 */
export async function writeCalendarEvents(
  db: Knex | Knex.Transaction,
  type: CalendarEventType,
  time: Date,
  write: (returning: string) => { sql: string; bindings: Knex.RawBinding[] },
): Promise<number> {
  const { events } = await emit(
    db,
    type,
    time,
    { ...write(WRITTEN_CALENDAR_EVENT), writes: true },
    { sql: CALENDAR_EVENT_SNAPSHOT, bindings: [] },
  );
  return events;
}

/**
 * A calendar event change written by the caller in its transaction; `event` is the event as it is
 * after the change (as it was, for a deletion) and `project` its calendar's project. Returns the
 * deliveries queued. (The API's writes use writeCalendarEvents: the change and its event in one
 * statement.)
 */
export async function recordCalendarEvent(
  trx: Knex.Transaction,
  change: { type: CalendarEventType; event: CalendarEvent; project: string; time: Date },
): Promise<number> {
  const { deliveries } = await emit(
    trx,
    change.type,
    change.time,
    {
      sql: `select 0::bigint as key, ?::text as resource_id, null::text as campaign_code, ?::text as project,
                   null::smallint as lead_status, null::smallint as lead_closure, null::smallint as previous_status`,
      bindings: [change.event.uniqueId, change.project],
    },
    { sql: '?::jsonb', bindings: [JSON.stringify(change.event)] },
  );
  return deliveries;
}
