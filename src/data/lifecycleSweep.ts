import type { Knex } from 'knex';
import { LeadStatus } from '../domain/enums';
import { recordLeadEvents } from './hookEvents';
import { SWEEP_RULES, SweepRule } from '../domain/lifecycle';

/**
 * The lead lifecycle's time limits applied to the data (docs/decisions.md, Lead lifecycle): Unresolved leads
 * become Abandoned after the campaign's `abandon_after`; New, RedialAutomatic and
 * RedialManualCommon leads become Expired after `expire_after`, RedialManualPrivate after
 * `private_expire_after`; VIP redials never expire and a campaign without a setting never
 * moves its leads. The rules come from SWEEP_RULES of the pure lifecycle module; here they
 * run as SQL over batches of leads, so a sweep never loads leads into memory.
 */

export const SWEEP_BATCH_SIZE = 5000;

const SETTING_COLUMN: Record<SweepRule['setting'], string> = {
  abandonAfter: 'abandon_after',
  expireAfter: 'expire_after',
  privateExpireAfter: 'private_expire_after',
};

export interface SweepResult {
  abandoned: number;
  expired: number;
}

/**
 * One batch of one rule. The deadline is `status_changed_time + limit` in calendar arithmetic
 * of the session's time zone (the platform zone, so P1D across a DST change is 23 or 25
 * hours), exactly as sweepDeadline computes it. The extra range condition only lets the index
 * on (status, status_changed_time) narrow the scan: month and DST steps never move a deadline
 * by more than a few days.
 */
async function sweepBatch(db: Knex, rule: SweepRule, now: Date, zone: string, options: Required<SweepOptions>): Promise<number> {
  const column = SETTING_COLUMN[rule.setting];
  const onlyCampaigns = options.campaignIds === null ? '' : 'and c.id = any(?::bigint[])';
  return db.transaction(async (trx) => {
    await trx.raw(`select set_config('TimeZone', ?, true)`, [zone]);
    const result = await trx.raw<{ rows: { id: number; previous_status: number }[] }>(
      `with due as (
         select l.id, l.status as previous_status
           from campaigns c
           join leads l on l.campaign_id = c.id
          where c.${column} is not null ${onlyCampaigns}
            and l.status = any(?::smallint[])
            and l.status_changed_time <= ?::timestamptz - c.${column} + interval '4 days'
            and l.status_changed_time + c.${column} <= ?::timestamptz
          limit ?
          for update of l skip locked)
       update leads l
          set status = ?, status_changed_time = ?, last_modified_time = ?, last_modified_by_user_id = null
         from due
        where l.id = due.id
       returning l.id, due.previous_status`,
      [
        ...(options.campaignIds === null ? [] : [options.campaignIds]),
        rule.from.map((s) => LeadStatus.toNumber(s)),
        now,
        now,
        options.batchSize,
        LeadStatus.toNumber(rule.to),
        now,
        now,
      ],
    );
    const moved = result.rows;
    // Each moved lead's lead.statusChanged, in the same transaction as the move.
    await recordLeadEvents(
      trx,
      'lead.statusChanged',
      moved.map((r) => ({ leadId: r.id, previousStatus: LeadStatus.toName(r.previous_status) })),
      now,
    );
    return moved.length;
  });
}

export interface SweepOptions {
  /** Leads moved per statement (and transaction). */
  batchSize?: number;
  /** Only the leads of these campaigns; null (default) = every campaign. */
  campaignIds?: number[] | null;
}

/** Moves every lead whose time limit has run out at `now`; batches until none is left. */
export async function sweepLeads(db: Knex, now: Date, zone: string, options: SweepOptions = {}): Promise<SweepResult> {
  const opts: Required<SweepOptions> = { batchSize: options.batchSize ?? SWEEP_BATCH_SIZE, campaignIds: options.campaignIds ?? null };
  const result: SweepResult = { abandoned: 0, expired: 0 };
  for (const rule of SWEEP_RULES) {
    for (;;) {
      const moved = await sweepBatch(db, rule, now, zone, opts);
      if (rule.to === 'Abandoned') result.abandoned += moved;
      else result.expired += moved;
      if (moved < opts.batchSize) break;
    }
  }
  return result;
}
