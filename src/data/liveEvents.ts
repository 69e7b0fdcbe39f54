import type { Knex } from 'knex';
import { LeadStatus, LeadStatusName } from '../domain/enums';

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
 * Up to `limit` events of the given kinds (and campaigns, when given) after `after`, in position
 * order, and the newest position committed as this read saw it: when fewer than `limit` come
 * back, nothing up to that position is left to read.
 */
export async function readEventsAfter(
  db: Knex,
  after: number,
  limit: number,
  types: readonly string[],
  campaignCodes?: readonly string[],
): Promise<{ rows: LiveEventRow[]; head: number }> {
  const { rows } = await db.raw<{ rows: (Row & { head: number })[] }>(
    // The stream's order drives the read, one event looked up by its key per position (LIMIT 1
    // keeps the lookup from being flattened into a join): with stale statistics, a join read
    // every event ever kept to hash it, tens of ms per read.
    `with page as (
       select s.position, e.type, e.occurred_time, e.project, e.campaign_code, e.previous_status, e.snapshot
         from event_stream s
        cross join lateral (
              select * from hook_events x
               where x.id = s.event_id and x.type = any(?::text[]) ${campaignCodes ? 'and x.campaign_code = any(?::text[])' : ''}
               limit 1) e
        where s.position > ?
        order by s.position
        limit ?)
     select head.position as head, page.*
       from (select coalesce(max(position), 0) as position from event_stream) head left join page on true
      order by page.position`,
    [[...types], ...(campaignCodes ? [[...campaignCodes]] : []), after, limit],
  );
  const head = rows[0]?.head ?? 0;
  return {
    head,
    rows: rows
      .filter((r) => r.position !== null)
      .map((r) => ({
        position: r.position,
        type: r.type,
        occurredTime: r.occurred_time,
        project: r.project,
        campaignCode: r.campaign_code,
        previousStatus: r.previous_status === null ? null : LeadStatus.toName(r.previous_status),
        snapshot: r.snapshot,
      })),
  };
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
    [[...keys], [...keys]],
  );
  return rows;
}
