import request from 'supertest';
import { importLead, ImportLeadDeps, Importer } from '../../src/ingest/importLead';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { fullAccountActor } from '../harness/world';
import { statementsDuring } from '../harness/statements';

/**
 * The single import as one database function (lcm_import_lead): what one import costs in round
 * trips, and what the function decides on its own (project, do-not-call, pool, lead, event).
 */
describe('the single import in one database call', () => {
  const { t, w } = useTestWorld();
  let deps: ImportLeadDeps;
  let importer: Importer;

  beforeAll(async () => {
    deps = { db: t.db, clock: () => new Date(), zone: 'Europe/Copenhagen' };
    importer = await fullAccountActor(t.db, w);
  });

  const data = () => ({
    Name: 'Round Trip',
    Telefon: `+45 20 ${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`,
    Customer: uniq('C-'),
  });

  it('when the campaign is known and no key is given, then an import is one statement', async () => {
    await importLead(deps, importer, { campaignCode: w.campaigns.b2b, data: data() }); // the campaign is now cached
    const statements = await statementsDuring(() => importLead(deps, importer, { campaignCode: w.campaigns.b2b, data: data() }));
    expect(statements).toHaveLength(1);
  });

  it('when the data fails the lead definition, then no statement writes', async () => {
    let outcome: unknown;
    const texts = await statementsDuring(async () => {
      outcome = await importLead(deps, importer, { campaignCode: w.campaigns.b2b, data: { Name: 'No phone' } });
    });
    expect(outcome).toMatchObject({ kind: 'answered', answer: { success: false } });
    expect(texts.filter((q) => /insert|update|delete|lcm_import_lead|begin/i.test(q))).toEqual([]);
  });

  it('when the campaign is outside the account patterns, then the function answers forbidden and writes nothing', async () => {
    const campaign = await t.db('campaigns').where({ code: w.campaigns.retail }).first<{ id: number }>('id');
    const pool = uniq('pool-');
    const { rows } = await t.db.raw<{ rows: { outcome: string; lead_id: number | null }[] }>(
      `select * from lcm_import_lead(p_campaign_id => ?, p_like_patterns => ?, p_pool_name => ?, p_unique_id => ?,
         p_phone_number => null, p_phone_e164 => null, p_external_key => null, p_data => '{}'::jsonb, p_now => now(), p_user_id => ?)`,
      [campaign.id, ['b2b-%'], pool, uniq('lead-'), importer.userId],
    );
    expect(rows).toEqual([{ outcome: 'forbidden', lead_id: null, lead_status: null, dup_unique_id: null, matched: null }]);
    expect(await t.db('lead_pools').where({ name: pool }).first()).toBeUndefined();
  });

  it('when the campaign is gone, then the function answers unknown_campaign', async () => {
    const { rows } = await t.db.raw<{ rows: { outcome: string }[] }>(
      `select outcome from lcm_import_lead(p_campaign_id => -1, p_like_patterns => array['%'], p_pool_name => 'x', p_unique_id => ?,
         p_phone_number => null, p_phone_e164 => null, p_external_key => null, p_data => '{}'::jsonb, p_now => now(), p_user_id => ?)`,
      [uniq('lead-'), importer.userId],
    );
    expect(rows).toEqual([{ outcome: 'unknown_campaign' }]);
  });

  it('when many imports create the same new pool at once, then they all land in one pool', async () => {
    const pool = uniq('Shared pool ');
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => importLead(deps, importer, { campaignCode: w.campaigns.b2b, data: data(), pool })),
    );
    for (const o of outcomes) expect(o).toMatchObject({ kind: 'answered', answer: { success: true, pool } });
    const pools = await t.db('lead_pools').where({ name: pool }).select('id');
    expect(pools).toHaveLength(1);
    const leads = await t
      .db('leads')
      .where({ pool_id: (pools[0] as { id: number }).id })
      .count<{ count: string }[]>('* as count');
    expect(Number(leads[0]!.count)).toBe(8);
  });

  it('when the number is on the global list, then the lead is GlobalDoNotCall in the same call', async () => {
    const phone = '+4520998877';
    await t.db('do_not_call_numbers').insert({ phone_number: phone, global: true, created_time: new Date(), modified_time: new Date() });
    try {
      const outcome = await importLead(deps, importer, { campaignCode: w.campaigns.b2b, data: { ...data(), Telefon: '20 99 88 77' } });
      expect(outcome).toMatchObject({ kind: 'answered', answer: { success: true, status: 'GlobalDoNotCall' } });
    } finally {
      await t.db('do_not_call_numbers').where({ phone_number: phone, global: true }).delete();
    }
  });

  it('when leads are imported through POST /api/leads, with and without an Idempotency-Key, then GET /api/events lists their lead.created events in commit order', async () => {
    const { rows } = await t.db.raw<{ rows: { p: string }[] }>('select lcm_sequence_events(true) as p');
    const after = Number(rows[0]!.p);
    const post = (key?: string) => {
      const req = request(t.app).post('/api/leads').set('Authorization', w.accounts.full.auth);
      return (key === undefined ? req : req.set('Idempotency-Key', key)).send({ CampaignCode: w.campaigns.b2b, Data: data() });
    };
    const ids: string[] = [];
    for (const res of [await post(), await post(uniq('import-key-'))]) {
      expect(res.body).toMatchObject({ success: true });
      ids.push((res.body as { uniqueId: string }).uniqueId);
    }
    const res = await request(t.app)
      .get(`/api/events?After=${after}&Campaigns=${w.campaigns.b2b}`)
      .set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(200);
    const events = (res.body as { id: number; type: string; data: { uniqueId?: string } }[]).filter((e) =>
      ids.includes(e.data.uniqueId ?? ''),
    );
    expect(events.map((e) => [e.type, e.data.uniqueId])).toEqual([
      ['lead.created', ids[0]],
      ['lead.created', ids[1]],
    ]);
    expect(events[1]!.id).toBeGreaterThan(events[0]!.id);
  });
});
