import type { Knex } from 'knex';
import { LeadStatus, LeadStatusName } from '../domain/enums';
import { isLeadEvent } from '../domain/hooks';
import type { CalendarEvent } from '../domain/calendarEventSerializer';
import { ENQUEUE_FIRST_ATTEMPTS_SQL } from './jobQueue';
import { NEW_MESSAGE_ID_SQL } from './hookRepository';
import { projectSelectedByColumnSql } from './projectRepository';
import { CALL_FIELDS } from '../domain/callFields';
import { fieldJsonbPairs } from './fieldColumns';

/**
 * The event API: code that changes a lead, a call or a calendar event calls one of these with
 * its own transaction, so the event is committed with the change or not at all (no event
 * without its change, no change without its event):
 *
 *   await recordLeadEvent(trx, { type: 'lead.statusChanged', leadId, previousStatus: 'New', time });
 *   await recordLeadEvents(trx, 'lead.statusChanged', [{ leadId, previousStatus }, ...], time);
 *   await recordCallEvent(trx, { callId, startTime, time });
 *   await recordCalendarEvent(trx, { type: 'calendarEvent.deleted', event, project, time });
 *
 * Each is one SQL statement (lead events: the database function lcm_record_lead_events). It
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

/**
 * The statement of call and calendar events: `source` selects (key, resource_id, campaign_code,
 * project, lead_status, lead_closure, previous_status) per changed resource; `snapshot` is an
 * expression over `s` giving its jsonb. Returns the deliveries queued. Its hook filters are those
 * of lcm_record_lead_events (the lead events' function in its migration): a new filter goes into both.
 */
async function emit(
  trx: Knex.Transaction,
  type: string,
  time: Date,
  source: { sql: string; bindings: Knex.RawBinding[] },
  snapshot: { sql: string; bindings: Knex.RawBinding[] },
): Promise<number> {
  const storeEvents = `insert into hook_events (type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot)
       select ?, ?, s.project, s.campaign_code, s.resource_id, s.previous_status, ${snapshot.sql} from s`;
  if (!(await anyHookWants(trx, type))) {
    await trx.raw(`with s as (${source.sql}) ${storeEvents}`, [...source.bindings, type, time, ...snapshot.bindings]);
    return 0;
  }
  const { rows } = await trx.raw<{ rows: { count: number }[] }>(
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
          and exists (select 1 from unnest(a.project_patterns) p where lower(s.project) like lcm_glob_to_like(p))),
     e as (${storeEvents} returning id, resource_id),
     d as (
       insert into hook_deliveries (unique_id, hook_id, event_id, status, next_attempt_time)
       select ${NEW_MESSAGE_ID_SQL}, m.hook_id, e.id, 'pending', now()
         from m join s on s.key = m.key join e on e.resource_id = s.resource_id
       returning id)
     ${ENQUEUE_FIRST_ATTEMPTS_SQL}`,
    [...source.bindings, type, isLeadEvent(type), type, type, time, ...snapshot.bindings],
  );
  return Number(rows[0]?.count ?? 0);
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

/** `call.ended` of a completed call; its id and start time find it in its month's partition. */
export function recordCallEvent(trx: Knex.Transaction, event: { callId: number; startTime: Date; time: Date }): Promise<number> {
  return emit(
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
}

export type CalendarEventType = 'calendarEvent.created' | 'calendarEvent.updated' | 'calendarEvent.deleted';

/**
 * A calendar event change; `event` is the event as it is after the change (as it was, for a
 * deletion) and `project` its calendar's project. Calendars have no campaign: hooks narrowed
 * to a campaign do not receive calendar events.
 */
export function recordCalendarEvent(
  trx: Knex.Transaction,
  change: { type: CalendarEventType; event: CalendarEvent; project: string; time: Date },
): Promise<number> {
  return emit(
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
}
