import type { TestApp } from './testApp';
import type { World } from './world';

/**
 * Many rows at once for tests that need large exports (backpressure, slow clients, admission):
 * one INSERT … SELECT generate_series each, far faster than the loader for tens of thousands.
 * Calls start at `CALLS_FROM` (one a second) and belong to the world's agent in its B2B
 * campaign; leads go to the world's B2B campaign, pool `Bulk <id>`.
 */
export const CALLS_FROM = '2026-05-06T08:00:00Z';

/** The query string of a calls export of every call of insertCalls (the world's root unit). */
export function callsWindow(w: World): string {
  return `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=${CALLS_FROM}&TimeSpan=P2D`;
}

interface IdAndOrgCode {
  id: number;
  org_code: string;
}

export async function insertCalls(t: TestApp, w: World, count: number): Promise<void> {
  const unit = async (orgCode: string) => (await t.db<IdAndOrgCode>('org_units').where({ org_code: orgCode }).first('id'))!.id;
  const [ou0, ou1, ou2] = [await unit(w.units.root), await unit(w.units.sales), await unit(w.units.team)];
  const user = (await t.db<IdAndOrgCode>('users').where({ org_code: w.users.agent }).first('id'))!.id;
  const campaign = (await t.db<{ id: number; code: string }>('campaigns').where({ code: w.campaigns.b2b }).first('id'))!.id;
  await t.db.raw(
    `insert into calls (unique_id, campaign_id, unique_lead_id, user_id, ou0_id, ou1_id, ou2_id, lead_phone_number,
       lead_external_key, end_cause, connected, start_time, connect_time, end_time, preview_ms, dialing_ms,
       conversation_ms, wrap_up_ms, lead_status, pre_call_lead_status, campaign_type)
     select ? || '-call-' || g, ?, 'lead-' || g, ?, ?, ?, ?, '+4512' || lpad(g::text, 6, '0'), 'KEY-' || g, 1, true,
       ?::timestamptz + g * interval '1 second',
       ?::timestamptz + g * interval '1 second' + interval '5 seconds',
       ?::timestamptz + g * interval '1 second' + interval '3 minutes',
       4000, 5000, 175000, 30000, 200, 0, 1
     from generate_series(1, ?) g`,
    [w.id, campaign, user, ou0, ou1, ou2, CALLS_FROM, CALLS_FROM, CALLS_FROM, count],
  );
}

export async function insertLeads(t: TestApp, w: World, count: number): Promise<void> {
  const campaign = (await t.db<{ id: number; code: string }>('campaigns').where({ code: w.campaigns.b2b }).first('id'))!.id;
  const [pool] = await t
    .db<{ id: number; campaign_id: number; name: string }>('lead_pools')
    .insert({ campaign_id: campaign, name: `Bulk ${w.id}` })
    .returning('id');
  await t.db.raw(
    `insert into leads (unique_id, campaign_id, pool_id, phone_number, external_key, data, upload_time, last_modified_time)
     select ? || '-lead-' || g, ?, ?, '+4512' || lpad(g::text, 6, '0'), 'KEY-' || g,
       jsonb_build_object('Name', 'Customer ' || g, 'Phone', '+4512' || lpad(g::text, 6, '0'), 'Customer', 'KEY-' || g),
       '2026-05-06T08:00:00Z'::timestamptz, '2026-05-06T08:00:00Z'::timestamptz + g * interval '1 second'
     from generate_series(1, ?) g`,
    [w.id, campaign, pool!.id, count],
  );
}
