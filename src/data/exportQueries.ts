import type { Knex } from 'knex';
import { callColumns, READY_PERIOD_HEAD_FIELDS, READY_PERIOD_TAIL_FIELDS } from '../domain/callFields';
import { fieldSelect } from './fieldColumns';
import { leadColumns, RAW_LEAD_COLUMNS } from '../domain/leadFields';
import type { LeadFilter } from '../domain/leadFilters';
import type { LeadVisibility } from '../domain/leadSerializer';
import type { CallWindow } from './callRepository';
import { inlineBindings } from './exportSession';
import { leadRowConditions } from './leadRepository';
import { streamingLimit } from './cursorStream';

/**
 * The lean SELECTs the transcoded exports COPY (src/data/exportSession.ts), values inlined
 * (COPY takes no parameters). Lean: the raw columns in their binary form (timestamps as
 * timestamptz, the five org-unit ids instead of a text key, enums as their numbers), no joins
 * for names (the export's snapshot or lookups name the ids), and the account's project scope
 * as `campaign_id = ANY(the visible campaign ids)` taken from that snapshot, read in the same
 * transaction.
 *
 * The limit is `LIMIT (SELECT n)` (streamingLimit): a value the planner cannot see when it
 * plans, so it streams in index order instead of sorting the whole result before the first row.
 */

/** The calls of a window (same rows and order as callWindowQuery), the columns of callColumns. */
export function callCopySql(db: Knex, window: Omit<CallWindow, 'scope'>, visibleCampaignIds: number[]): string {
  const s = window.subject;
  const subject = s.kind === 'user' ? 'c.user_id = ?' : `c.ou${checkedLevel(s.level)}_id = ?`;
  const columns = callColumns(
    (run) => fieldSelect(run, 'c', 'copy'),
    (c) => `c.${c}`,
  );
  const raw = db.raw(
    `select ${columns.join(', ')}
       from calls c
      where c.campaign_id = any(?::bigint[]) and ${subject} and c.start_time >= ? and c.start_time < ?
      order by c.start_time, c.unique_id
      ${streamingLimit(window.limit)}`,
    [visibleCampaignIds, s.kind === 'user' ? s.userId : s.unitId, window.start, window.end],
  );
  return inlineBindings(raw.toSQL().toNative());
}

function checkedLevel(level: number): number {
  if (!Number.isInteger(level) || level < 0 || level > 4) throw new RangeError(`org unit level ${level}`);
  return level;
}

/** Ready periods that ended in `[from, to)` (as streamReadyPeriods): the head fields, the campaign id, the tail fields. */
export function readyPeriodCopySql(db: Knex, window: { from: Date; to: Date; limit?: number }, visibleCampaignIds: number[]): string {
  const columns = [
    ...fieldSelect(READY_PERIOD_HEAD_FIELDS, 'r', 'copy'),
    'r.campaign_id',
    ...fieldSelect(READY_PERIOD_TAIL_FIELDS, 'r', 'copy'),
  ];
  const raw = db.raw(
    `select ${columns.join(', ')}
       from ready_periods r
       join users u on u.id = r.user_id
       join campaigns cp on cp.id = r.campaign_id
      where r.campaign_id = any(?::bigint[]) and r.end_time >= ? and r.end_time < ?
      order by r.end_time, r.unique_id
      ${streamingLimit(window.limit)}`,
    [visibleCampaignIds, window.from, window.to],
  );
  return inlineBindings(raw.toSQL().toNative());
}

/**
 * The leads of an export (same rows and order as leadExportQuery), the columns of leadColumns
 * (LEAD_COPY_COLUMNS), then `data_visible`. `visible` holds, per campaign in scope, what the
 * account's entry access reaches (leadVisibilityByCampaign): `data_visible` tells whether the
 * stored data holds no key but the visible names, and phoneNumber and externalKey are NULL where
 * the data does not hold them under a visible field (their table entries read `vf.phone_field`,
 * `vf.key_field`).
 */
export function leadCopySql(db: Knex, filter: LeadFilter, visible: Map<number, LeadVisibility>): string {
  const rows = leadRowConditions(filter);
  const campaignIds = [...visible.keys()];
  const columns = [
    ...leadColumns(
      (run) => fieldSelect(run, 'l', 'copy'),
      (c) => `l.${c.column}`,
    ),
    `(l.data - coalesce(vf.names, '{}'::text[])) = '{}'::jsonb as data_visible`,
  ];
  // Per campaign, what is visible: a VALUES list (no join of campaigns and fields per row).
  const values = campaignIds.map(() => '(?::bigint, ?::text[], ?::text, ?::text)').join(', ');
  const visibleJoin =
    campaignIds.length > 0
      ? `left join (values ${values}) vf(campaign_id, names, phone_field, key_field) on vf.campaign_id = l.campaign_id`
      : `left join (select null::bigint as campaign_id, null::text[] as names, null::text as phone_field,
                           null::text as key_field) vf on false`;
  const raw = db.raw(
    `select ${columns.join(', ')}
       from leads l ${visibleJoin}
      where ${['l.campaign_id = any(?::bigint[])', ...rows.parts].join(' and ')}
      order by l.last_modified_time, l.unique_id
      ${streamingLimit(filter.limit)}`,
    [
      ...campaignIds.flatMap((id) => {
        const v = visible.get(id)!;
        return [id, v.names, v.phone, v.key];
      }),
      campaignIds,
      ...rows.bindings,
    ],
  );
  return inlineBindings(raw.toSQL().toNative());
}

/** The leads of a RawLeads export, RAW_LEAD_COLUMNS. */
export function rawLeadCopySql(db: Knex, filter: LeadFilter, campaignIds: number[]): string {
  const rows = leadRowConditions(filter);
  const raw = db.raw(
    `select ${RAW_LEAD_COLUMNS.map((c) => `l.${c.column}`).join(', ')}
       from leads l
      where ${['l.campaign_id = any(?::bigint[])', ...rows.parts].join(' and ')}
      order by l.last_modified_time, l.unique_id
      ${streamingLimit(filter.limit)}`,
    [campaignIds, ...rows.bindings],
  );
  return inlineBindings(raw.toSQL().toNative());
}
