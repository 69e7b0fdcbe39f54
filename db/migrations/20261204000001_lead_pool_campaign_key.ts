import type { Knex } from 'knex';

/**
 * A lead's pool and campaign in one foreign key: (pool_id, campaign_id) must be a pool of that
 * campaign. Stronger than the two keys it replaces (a lead could point at another campaign's
 * pool before) and one check per inserted row instead of two, which a bulk import of a
 * million leads pays a million times (docs/decisions.md, Bulk import). The campaign stays
 * guarded: a pool references its campaign.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE lead_pools ADD CONSTRAINT lead_pools_id_campaign_key UNIQUE (id, campaign_id);
    ALTER TABLE leads ADD CONSTRAINT leads_pool_campaign_fkey
      FOREIGN KEY (pool_id, campaign_id) REFERENCES lead_pools (id, campaign_id) NOT VALID;
    ALTER TABLE leads VALIDATE CONSTRAINT leads_pool_campaign_fkey;
    ALTER TABLE leads DROP CONSTRAINT leads_pool_id_fkey, DROP CONSTRAINT leads_campaign_id_fkey;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE leads ADD CONSTRAINT leads_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns (id);
    ALTER TABLE leads ADD CONSTRAINT leads_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES lead_pools (id);
    ALTER TABLE leads DROP CONSTRAINT leads_pool_campaign_fkey;
    ALTER TABLE lead_pools DROP CONSTRAINT lead_pools_id_campaign_key;
  `);
}
