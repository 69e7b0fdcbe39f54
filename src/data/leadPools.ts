import type { Knex } from 'knex';

/** Leads imported without a pool name go to `(auto) yyyy-MM-dd` (platform date). */
export function autoPoolName(localDate: string): string {
  return `(auto) ${localDate}`;
}

/** The id of the campaign's pool with this name, created when missing (race-safe). */
export async function ensurePool(db: Knex | Knex.Transaction, campaignId: number, name: string): Promise<number> {
  const { rows } = await db.raw<{ rows: { id: number }[] }>(
    `with ins as (
       insert into lead_pools (campaign_id, name) values (?, ?)
       on conflict (campaign_id, name) do nothing
       returning id)
     select id from ins
     union all
     select id from lead_pools where campaign_id = ? and name = ?
     limit 1`,
    [campaignId, name, campaignId, name],
  );
  if (rows.length > 0) return rows[0]!.id;
  // A concurrent insert committed between our statement's snapshot and now.
  const row = await db<{ id: number; campaign_id: number; name: string }>('lead_pools')
    .where({ campaign_id: campaignId, name })
    .first('id');
  return row!.id;
}
