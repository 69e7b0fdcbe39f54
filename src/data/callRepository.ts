import type { Knex } from 'knex';
import type { Readable } from 'node:stream';
import { CursorOptions, openCursor } from './cursorStream';
import type { ProjectScope } from './projectScope';
import { projectVisibleSql, whereCampaignVisible } from './projectScope';
import type { CallSubject } from '../domain/callSubject';
import { CALLS, findKey, PartitionedKey } from './uniqueIdRegistry';
import { CALL_FIELDS, READY_PERIOD_HEAD_FIELDS, READY_PERIOD_TAIL_FIELDS, RECORDING_FIELDS, RecordingRow } from '../domain/callFields';
import { fieldSelect } from './fieldColumns';

/**
 * Queries of the calls family. Every query applies the account's project scope in SQL, and
 * the window ones stream from a cursor (src/data/cursorStream.ts) in index order.
 *
 * Times leave Postgres as epoch milliseconds (int8 → number): no Date per value in pg's row
 * parser, and the serializer formats them with the cached-offset formatter.
 */

export interface CallWindow {
  subject: CallSubject;
  /** Inclusive. */
  start: Date;
  /** Exclusive. */
  end: Date;
  limit?: number;
  scope: ProjectScope;
}

const CALL_COLUMNS = fieldSelect(CALL_FIELDS, 'c');

// References resolved from the request's in-memory snapshot (campaigns, users, org units):
// no joins, and the chain travels as one text key instead of five columns.
const REFERENCE_COLUMNS = ['c.campaign_id', 'c.user_id', "concat_ws(' ', c.ou0_id, c.ou1_id, c.ou2_id, c.ou3_id, c.ou4_id) as ou_chain"];

/**
 * The window query: `start <= start_time < end`, ordered by start time then unique id, which
 * is the order of the (user_id | ouN_id, start_time, unique_id) indexes, so Postgres reads
 * the window off an index with no sort, and a Limit stops it early. An org unit at level N
 * matches its calls and those of every unit below it through the chain column ouN_id.
 *
 * One row shape serves JSON and CSV: Postgres returns only the call's own columns and
 * references (measured: every extra column costs the driver more than a map lookup costs the
 * serializer, and joining names for the CSV made the query itself twice as slow).
 */
export function callWindowQuery(db: Knex, window: CallWindow): Knex.QueryBuilder {
  const q = db('calls as c').select(db.raw([...CALL_COLUMNS, ...REFERENCE_COLUMNS].join(', ')));
  whereCampaignVisible(q, 'c.campaign_id', window.scope);
  const s = window.subject;
  if (s.kind === 'user') q.where('c.user_id', s.userId);
  else q.where(`c.ou${s.level}_id`, s.unitId);
  q.where('c.start_time', '>=', window.start)
    .andWhere('c.start_time', '<', window.end)
    .orderBy([{ column: 'c.start_time' }, { column: 'c.unique_id' }]);
  if (window.limit !== undefined) q.limit(window.limit);
  return q;
}

/**
 * Opens a cursor over the window. Resolves once the first batch is in (so a query error is
 * still a problem response); the stream ends, errors or is destroyed with its connection
 * released (src/data/cursorStream.ts).
 */
export function streamCalls(db: Knex, window: CallWindow, cursor: CursorOptions = {}): Promise<Readable> {
  return openCursor(db, callWindowQuery(db, window), cursor);
}

/**
 * The key (id and start time) of a call the account can see, or undefined (unknown or
 * invisible). Two statements: the unique id's row in the call_keys registry, then the call by
 * id and start time, a literal partition key that prunes to one month partition while the
 * statement is planned. One statement joining the registry to calls planned every partition
 * and measured about twice as slow (bench:partitions).
 */
export async function findVisibleCall(db: Knex, uniqueId: string, scope: ProjectScope): Promise<PartitionedKey | undefined> {
  const key = await findKey(db, CALLS, uniqueId);
  if (key === undefined) return undefined;
  const q = db('calls as c').where({ 'c.id': key.id, 'c.start_time': key.time }).first('c.id');
  whereCampaignVisible(q, 'c.campaign_id', scope);
  return (await q) ? key : undefined;
}

/** Recordings of one call, by start time, optionally within `[start, end)` and capped. */
export async function listRecordings(
  db: Knex,
  call: PartitionedKey,
  filter: { start?: Date; end?: Date; limit?: number },
): Promise<RecordingRow[]> {
  // The call's start time is the recordings' partition key: one partition is read.
  const q = db('recordings')
    .select(db.raw(fieldSelect(RECORDING_FIELDS, 'recordings').join(', ')))
    .where({ call_id: call.id, call_start_time: call.time })
    .orderBy([{ column: 'start_time' }, { column: 'file_name' }]);
  if (filter.start !== undefined) q.where('start_time', '>=', filter.start);
  if (filter.end !== undefined) q.where('start_time', '<', filter.end);
  if (filter.limit !== undefined) q.limit(filter.limit);
  return q;
}

/**
 * Ready periods that ended in `[from, to)`, by end time then unique id (the ready_periods_end
 * index), limited to the account's projects.
 */
export function streamReadyPeriods(
  db: Knex,
  window: { from: Date; to: Date; scope: ProjectScope; limit?: number },
  cursor: CursorOptions = {},
): Promise<Readable> {
  const visible = projectVisibleSql('cp.project', window.scope);
  const q = db('ready_periods as r')
    .join('users as u', 'u.id', 'r.user_id')
    .join('campaigns as cp', 'cp.id', 'r.campaign_id')
    .select(
      db.raw([...fieldSelect(READY_PERIOD_HEAD_FIELDS, 'r'), 'r.campaign_id', ...fieldSelect(READY_PERIOD_TAIL_FIELDS, 'r')].join(', ')),
    )
    .where('r.end_time', '>=', window.from)
    .andWhere('r.end_time', '<', window.to)
    .whereRaw(visible.sql, visible.bindings as Knex.RawBinding[])
    .orderBy([{ column: 'r.end_time' }, { column: 'r.unique_id' }]);
  if (window.limit !== undefined) q.limit(window.limit);
  return openCursor(db, q, cursor);
}
