import type { Knex } from 'knex';
import { LeadStatus, LeadStatusName } from '../domain/enums';
import { canonicalUniqueId } from '../domain/uniqueId';
import { projectScope, projectVisibleSql } from './projectScope';
import { projectSelectedSql } from './projectRepository';

/**
 * The live event stream's reads (docs/decisions.md, "Live events"): the hook events in the order
 * of `event_stream.position`. Writers only list their events; a sequencing round
 * (`lcm_sequence_events`, db/migrations/…_event_sequencer.ts) numbers what has committed, one
 * round at a time, so a reader that has seen position p never sees a smaller one appear later.
 * Every process reads new events once for all its streams; a stream that resumes reads what it
 * missed here too. No connection is held between reads.
 */

/** Notified with the last position when a sequencing round has numbered events. */
export const LIVE_EVENTS_CHANNEL = 'lcm_events';

/**
 * One sequencing round: numbers every event whose transaction has committed. With `wait` it waits
 * for a round in progress and answers the last position committed after its own round; without,
 * it gives way to a round in progress (`undefined`): that one, or the next, numbers what is left.
 */
export async function sequenceEvents(db: Knex, wait: boolean): Promise<number | undefined> {
  const { rows } = await db.raw<{ rows: { head: number | null }[] }>('select lcm_sequence_events(?) as head', [wait]);
  return rows[0]?.head ?? undefined;
}

export interface LiveEventRow {
  position: number;
  type: string;
  occurredTime: Date;
  /** The campaign's project (lead and call events) or the calendar's (calendar events). */
  project: string | null;
  campaignCode: string | null;
  previousStatus: LeadStatusName | null;
  snapshot: unknown;
}

interface Row {
  position: number;
  type: string;
  occurred_time: Date;
  project: string | null;
  campaign_code: string | null;
  previous_status: number | null;
  snapshot: unknown;
}

/**
 * Which events a read returns. Every condition is SQL, beside the stream's order, so a page
 * holds only the events its reader is sent.
 */
export interface EventFilter {
  types: readonly string[];
  /** Campaign codes; undefined: any. Calendar events have none and are left out when given. */
  campaignCodes?: readonly string[];
  /**
   * The account's project rights (patterns); an event without a project is then left out.
   * Undefined: events of every project and of none (the feed, which reads for all its streams).
   */
  projectRights?: readonly string[];
  /** `Projects`: patterns or project unique ids; undefined: every project the rights reach. */
  projects?: readonly string[];
}

/** The filter's conditions on the event `x` (hook_events), with their bindings. */
function filterSql(filter: EventFilter): { sql: string; bindings: Knex.RawBinding[] } {
  const parts = ['x.type = any(?::text[])'];
  const bindings: Knex.RawBinding[] = [[...filter.types]];
  if (filter.campaignCodes) {
    parts.push('x.campaign_code = any(?::text[])');
    bindings.push([...filter.campaignCodes]);
  }
  if (filter.projectRights) {
    const visible = projectVisibleSql('x.project', projectScope(filter.projectRights));
    parts.push(visible.sql);
    bindings.push(...(visible.bindings as Knex.RawBinding[]));
  }
  if (filter.projects) {
    const selected = projectSelectedSql('x.project', filter.projects);
    parts.push(selected.sql);
    bindings.push(...selected.bindings);
  }
  return { sql: parts.join(' and '), bindings };
}

/** What a read saw besides its events. */
export interface EventWindow {
  /** The newest position committed as the read saw it. */
  head: number;
  /**
   * The last position the read looked at (it may lie beyond `head`): when fewer events than
   * asked for come back, none after `after` up to here (and up to `head`) is left to read.
   */
  upto: number;
}

/**
 * The events of `filter` among the `span` positions after `after` (after the oldest kept one,
 * when `after` lies before it), at most `limit`, in position order. The span bounds what one
 * read examines: a filter that matches few events costs a read of `span` positions at most, and
 * the reader goes on from `upto`. `columns` are what each event gives (`s`: event_stream, `e`:
 * hook_events).
 */
async function readWindow<R>(
  db: Knex,
  columns: string,
  after: number,
  limit: number,
  filter: EventFilter,
  span: number,
): Promise<{ rows: R[] } & EventWindow> {
  const conditions = filterSql(filter);
  const { rows } = await db.raw<{ rows: (R & { position: number | null; head: number; upto: number })[] }>(
    // The stream's order drives the read, one event looked up by its key per position (LIMIT 1
    // keeps the lookup from being flattened into a join): with stale statistics, a join read
    // every event ever kept to hash it, tens of ms per read. The window's ends come from
    // subqueries, so they bound the index scan itself (joined to the CTE, the scan read every
    // position and filtered them).
    `with bounds as (
       select greatest(?::bigint, coalesce(min(position), 0) - 1) as lo, coalesce(max(position), 0) as head from event_stream),
     page as (
       select ${columns}
         from event_stream s
        cross join lateral (select * from hook_events x where x.id = s.event_id and ${conditions.sql} limit 1) e
        where s.position > (select lo from bounds) and s.position <= (select lo from bounds) + ?
        order by s.position
        limit ?)
     select b.head, b.lo + ? as upto, page.*
       from bounds b left join page on true
      order by page.position`,
    [after, ...conditions.bindings, span, limit, span],
  );
  return { head: rows[0]?.head ?? 0, upto: rows[0]?.upto ?? after, rows: rows.filter((r) => r.position !== null) };
}

function toLiveEvent(r: Row): LiveEventRow {
  return {
    position: r.position,
    type: r.type,
    occurredTime: r.occurred_time,
    project: r.project,
    campaignCode: r.campaign_code,
    previousStatus: r.previous_status === null ? null : LeadStatus.toName(r.previous_status),
    snapshot: r.snapshot,
  };
}

const EVENT_COLUMNS = 's.position, e.type, e.occurred_time, e.project, e.campaign_code, e.previous_status, e.snapshot';

/** Up to `limit` events of `filter` after `after`, in position order, from `span` positions at most. */
export async function readEventsAfter(
  db: Knex,
  after: number,
  limit: number,
  filter: EventFilter,
  span: number,
): Promise<{ rows: LiveEventRow[] } & EventWindow> {
  const read = await readWindow<Row>(db, EVENT_COLUMNS, after, limit, filter, span);
  return { ...read, rows: read.rows.map(toLiveEvent) };
}

/** An event a read found, by its position and its key. */
export interface FoundEvent {
  position: number;
  eventId: number;
}

/**
 * What `readEventsAfter` would return, without the events themselves: where a list of `limit`
 * events ends is known before the first is sent.
 */
export async function findEventsAfter(
  db: Knex,
  after: number,
  limit: number,
  filter: EventFilter,
  span: number,
): Promise<{ found: FoundEvent[] } & EventWindow> {
  const read = await readWindow<FoundEvent>(db, 's.position, s.event_id as "eventId"', after, limit, filter, span);
  return { head: read.head, upto: read.upto, found: read.rows.map((r) => ({ position: r.position, eventId: r.eventId })) };
}

/** The events found, in their order; one removed since (retention) is left out. */
export async function readFoundEvents(db: Knex, found: readonly FoundEvent[]): Promise<LiveEventRow[]> {
  if (found.length === 0) return [];
  const { rows } = await db.raw<{ rows: Row[] }>(
    `select ${EVENT_COLUMNS}
       from unnest(?::bigint[], ?::bigint[]) as s(position, event_id)
       join hook_events e on e.id = s.event_id
      order by s.position`,
    [found.map((f) => f.position), found.map((f) => f.eventId)],
  );
  return rows.map(toLiveEvent);
}

export interface StreamPositions {
  /** The last position committed (0 when none is kept): a stream that starts now reads after it. */
  committed: number;
  /** The last position ever handed out: no client can have seen a later one. */
  issued: number;
}

/** The positions after a sequencing round: every event committed before this call is numbered. */
export async function streamPositions(db: Knex): Promise<StreamPositions> {
  // One statement, the round first: in a subquery of its own (OFFSET 0 keeps it from being merged
  // into the outer query), then the sequence, read by a subquery that refers to the round's result
  // and so runs on the round's row, after it. Without that reference the order would be the
  // planner's (an InitPlan); read before the round, the sequence would miss the positions the round
  // hands out, and `issued` would fall below `committed`.
  const { rows } = await db.raw<{ rows: StreamPositions[] }>(
    `select round.committed,
            (select case when is_called then last_value else 0 end from event_stream_positions
              where round.committed is not null) as issued
       from (select coalesce(lcm_sequence_events(true), 0) as committed offset 0) round`,
  );
  return rows[0]!;
}

export interface PruneResult {
  events: number;
  positions: number;
}

/** Rows per statement of the pruning: short locks, and a pass that stops when it finds nothing old. */
const PRUNE_BATCH = 5000;

/**
 * Removes what is older than `before`: stream positions (from the oldest, while their events
 * are old), and the events themselves with their finished deliveries. An event with a delivery
 * still pending stays until it is delivered or fails; its delivery log goes with it.
 */
export async function pruneLiveEvents(db: Knex, before: Date): Promise<PruneResult> {
  const result: PruneResult = { events: 0, positions: 0 };
  for (;;) {
    // The oldest positions, removed while their events are old or gone: a batch ends at the first newer one.
    const { rows } = await db.raw<{ rows: { removed: number; old: boolean }[] }>(
      `with head as (
         select s.position, coalesce(e.created_time < ?, true) as old
           from event_stream s left join hook_events e on e.id = s.event_id
          order by s.position limit ?),
       gone as (delete from event_stream where position in (select position from head where old) returning 1)
       select (select count(*) from gone) as removed, coalesce(bool_and(old), false) as old from head`,
      [before, PRUNE_BATCH],
    );
    const { removed, old } = rows[0]!;
    result.positions += removed;
    if (removed < PRUNE_BATCH || !old) break;
  }
  for (;;) {
    const removed = await db.transaction(async (trx) => {
      const { rows } = await trx.raw<{ rows: { id: number }[] }>(
        `select e.id from hook_events e
          where e.created_time < ?
            and not exists (select 1 from hook_deliveries d where d.event_id = e.id and d.status = 'pending')
          order by e.created_time limit ?
          for update skip locked`,
        [before, PRUNE_BATCH],
      );
      if (rows.length === 0) return 0;
      const ids = rows.map((r) => r.id);
      await trx.raw(`delete from hook_deliveries where event_id = any(?::bigint[]) and status <> 'pending'`, [ids]);
      const gone = await trx.raw<{ rowCount: number }>(`delete from hook_events where id = any(?::bigint[])`, [ids]);
      return gone.rowCount;
    });
    result.events += removed;
    if (removed < PRUNE_BATCH) break;
  }
  return result;
}

/** A campaign a filter names, by code or unique id, with its project. */
export interface NamedCampaign {
  code: string;
  uniqueId: string;
  project: string;
}

/** The campaigns these codes or unique ids name (codes compared exactly, as hooks compare them). */
export async function campaignsNamed(db: Knex, keys: readonly string[]): Promise<NamedCampaign[]> {
  const { rows } = await db.raw<{ rows: NamedCampaign[] }>(
    `select code, unique_id as "uniqueId", project from campaigns where code = any(?::text[]) or unique_id = any(?::text[])`,
    [[...keys], keys.map(canonicalUniqueId)],
  );
  return rows;
}
