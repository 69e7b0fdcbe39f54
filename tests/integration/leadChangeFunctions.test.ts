import request from 'supertest';
import { importLead, Importer } from '../../src/ingest/importLead';
import { anonymizeLead, LeadChangeDeps, LeadChanger, patchLead } from '../../src/ingest/leadChanges';
import * as leadChangeRepository from '../../src/data/leadChangeRepository';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { fullAccountActor } from '../harness/world';
import { statementsDuring } from '../harness/statements';

interface Problem {
  code: string;
}

/**
 * PATCH and anonymize as one database function each (lcm_patch_lead, lcm_anonymize_lead): what
 * a change costs in statements, and the guarantees the function must keep on its own — If-Match
 * under concurrency, patches of other fields kept, the event written by the change's transaction,
 * nothing written when it refuses — and that the answer rendered from its snapshot is what GET
 * answers.
 */
describe('lead changes in one database call', () => {
  const { t, w } = useTestWorld();
  let deps: LeadChangeDeps;
  let actor: Importer;
  let changer: LeadChanger;
  let userId: number;

  beforeAll(async () => {
    deps = { db: t.db, clock: () => new Date(), zone: 'Europe/Copenhagen' };
    actor = await fullAccountActor(t.db, w);
    changer = actor;
    userId = actor.userId;
  });

  let phoneSeq = 0;
  /** A new lead of the B2B campaign with a number no other test uses (`+45 5x xx xx xx`) and a secret. */
  async function newLead(): Promise<string> {
    const phone = `+455${String(Date.now() % 1000).padStart(3, '0')}${String(++phoneSeq).padStart(4, '0')}`;
    const outcome = await importLead({ db: t.db, clock: () => new Date(), zone: 'Europe/Copenhagen' }, actor, {
      campaignCode: w.campaigns.b2b,
      data: { Name: 'Tove Ditlevsen', Telefon: phone, Customer: uniq('C-'), Secret: 'hush' },
    });
    if (outcome.kind !== 'answered' || !outcome.answer.success) throw new Error('the import failed');
    return outcome.answer.uniqueId;
  }

  const leadRow = (id: string) =>
    t
      .db('leads')
      .where({ unique_id: id })
      .first<{ version: string; data: Record<string, string>; priority: number; status: number }>(
        t.db.raw('xmin::text as version'),
        'data',
        'priority',
        'status',
      );
  const eventCount = async (id: string) =>
    Number((await t.db('hook_events').where({ resource_id: id }).count<{ count: string }[]>('* as count'))[0]!.count);
  const get = (id: string, auth = w.accounts.full.auth) => request(t.app).get(`/api/leads/${id}`).set('Authorization', auth);
  const patch = (id: string, body: unknown, auth = w.accounts.full.auth) =>
    request(t.app)
      .patch(`/api/leads/${id}`)
      .set('Authorization', auth)
      .set('Content-Type', 'application/merge-patch+json')
      .send(body as object);

  it('when a patch names data, then it is one read and one statement; a patch without data is the statement alone', async () => {
    const id = await newLead();
    const withData = await statementsDuring(() => patchLead(deps, changer, id, { data: { Email: 'tove@example.com' }, priority: 3 }));
    expect(withData).toHaveLength(2);
    expect(withData[1]).toMatch(/lcm_patch_lead/);
    const withoutData = await statementsDuring(() => patchLead(deps, changer, id, { priority: 4, status: 'Removed' }));
    expect(withoutData).toHaveLength(1);
    const row = await leadRow(id);
    expect(row).toMatchObject({ priority: 4, status: 600 });
    expect(row.data.Email).toBe('tove@example.com');
  });

  it('when the data fails the lead definition, then the answer costs one read and nothing is written', async () => {
    const id = await newLead();
    const before = await leadRow(id);
    let outcome: unknown;
    const statements = await statementsDuring(async () => {
      outcome = await patchLead(deps, changer, id, { data: { Email: 'not-an-address' }, priority: 9 });
    });
    expect(outcome).toEqual({ kind: 'invalid', errors: [{ field: 'data.Email', message: 'must be an e-mail address' }] });
    expect(statements).toHaveLength(1);
    expect(statements.filter((q) => /insert|update|delete|lcm_patch_lead|begin/i.test(q))).toEqual([]);
    expect(await leadRow(id)).toEqual(before);
  });

  it('when a lead is anonymized, then it is the function and one statement for its calendar events, in one transaction', async () => {
    const id = await newLead();
    const statements = await statementsDuring(() => anonymizeLead(deps, changer, id));
    expect(statements.map((q) => q.trim().split(/\s/)[0]!.toLowerCase())).toEqual(['begin;', 'select', 'with', 'commit;']);
    expect(statements[1]).toMatch(/lcm_anonymize_lead/);
    expect(await leadRow(id)).toMatchObject({ status: 610, data: {} });
  });

  it('when many PATCHes carry the same If-Match at once, then exactly one is applied and the others are 412', async () => {
    const id = await newLead();
    const etag = (await get(id)).headers.etag as string;
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => patch(id, { priority: 10 + i }).set('If-Match', etag)));
    const applied = answers.filter((r) => r.status === 200);
    expect(applied).toHaveLength(1);
    for (const r of answers.filter((a) => a.status !== 200)) {
      expect(r.status).toBe(412);
      expect((r.body as Problem).code).toBe('precondition_failed');
    }
    const now = await get(id);
    expect((now.body as { priority: number }).priority).toBe((applied[0]!.body as { priority: number }).priority);
    expect(now.headers.etag).toBe(applied[0]!.headers.etag);
  });

  it('when patches of different fields of one lead run at once, then every field keeps a value one of them sent', async () => {
    const id = await newLead();
    const emails = Array.from({ length: 6 }, (_, i) => `mail${i}@example.com`);
    const names = Array.from({ length: 6 }, (_, i) => `Name ${i}`);
    const answers = await Promise.all(
      emails.flatMap((email, i) => [
        patchLead(deps, changer, id, { data: { Email: email } }),
        patchLead(deps, changer, id, { data: { Name: names[i]! } }),
      ]),
    );
    for (const a of answers) expect(a.kind).toBe('changed');
    const { data } = await leadRow(id);
    expect(emails).toContain(data.Email);
    expect(names).toContain(data.Name);
    expect(data.Secret).toBe('hush');
  });

  it('when the status changes, then its lead.statusChanged is written by the transaction of the change', async () => {
    const id = await newLead();
    expect(await patchLead(deps, changer, id, { status: 'Removed' })).toMatchObject({ kind: 'changed' });
    const { rows } = await t.db.raw<{ rows: { same: boolean; previous_status: number }[] }>(
      `select h.xmin::text = l.xmin::text as same, h.previous_status
         from hook_events h join leads l on l.unique_id = h.resource_id
        where h.resource_id = ? and h.type = 'lead.statusChanged'`,
      [id],
    );
    expect(rows).toEqual([{ same: true, previous_status: 0 }]);
  });

  it('when the function refuses (another version, another campaign, outside the patterns, Anonymized), then it writes nothing', async () => {
    const id = await newLead();
    const anonymized = await newLead();
    await anonymizeLead(deps, changer, anonymized);
    const call = (uniqueId: string, args: string) =>
      t.db.raw<{ rows: { outcome: string; version: string | null }[] }>(
        `select outcome, version from lcm_patch_lead(p_unique_id => ?, p_like_patterns => array['%'], p_now => now(), p_user_id => ?,
           p_open_statuses => array[0]::smallint[], p_priority => 77, p_status => 600::smallint ${args})`,
        [uniqueId, userId],
      );
    const before = await leadRow(id);
    const events = await eventCount(id);
    expect((await call(id, ", p_version => 'not-the-version'")).rows).toEqual([{ outcome: 'precondition_failed', version: null }]);
    expect((await call(id, ', p_campaign_id => -1')).rows).toEqual([{ outcome: 'moved', version: null }]);
    const outside = await t.db.raw<{ rows: { outcome: string }[] }>(
      `select outcome from lcm_patch_lead(p_unique_id => ?, p_like_patterns => array['no-such-project%'], p_now => now(), p_user_id => ?,
         p_open_statuses => array[0]::smallint[], p_priority => 77)`,
      [id, userId],
    );
    expect(outside.rows).toEqual([{ outcome: 'not_found' }]);
    expect(await leadRow(id)).toEqual(before);
    expect(await eventCount(id)).toBe(events);

    const anonymizedBefore = await leadRow(anonymized);
    const anonymizedEvents = await eventCount(anonymized);
    expect((await call(anonymized, '')).rows).toEqual([{ outcome: 'anonymized', version: null }]);
    expect(await leadRow(anonymized)).toEqual(anonymizedBefore);
    expect(await eventCount(anonymized)).toBe(anonymizedEvents);
  });

  it('when the lead moves to another campaign between the check and the change, then the patch is checked again against its new definition', async () => {
    const definition = `Moved ${w.id}`;
    const campaign = `MOVED-${w.id}`;
    await t.load(
      { type: 'leadDefinition', name: definition, fields: [{ name: 'Name', type: 'text', required: true }] },
      { type: 'campaign', code: campaign, name: 'Moved', project: w.projects.b2b, leadDefinition: definition, campaignType: 'Master' },
    );
    const moved = await t.db('campaigns').where({ code: campaign }).first<{ id: number }>('id');
    const [pool] = await t.db('lead_pools').insert({ campaign_id: moved.id, name: 'Moved here' }).returning<{ id: number }[]>('id');
    const id = await newLead();
    const read = leadChangeRepository.readLeadForChange;
    const spy = jest.spyOn(leadChangeRepository, 'readLeadForChange').mockImplementationOnce(async (...args) => {
      const lead = await read(...args);
      await t.db('leads').where({ unique_id: id }).update({ campaign_id: moved.id, pool_id: pool!.id });
      return lead;
    });
    try {
      const outcome = await patchLead(deps, changer, id, { data: { Email: 'moved@example.com' } });
      expect(outcome).toEqual({
        kind: 'invalid',
        errors: [{ field: 'data.Email', message: "is not a field of the campaign's lead definition" }],
      });
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
    expect((await leadRow(id)).data.Email).toBeUndefined();
  });

  it('when an account with less entry access patches or anonymizes a lead, then the answers are what its GET answers', async () => {
    const id = await newLead();
    const local = { Prefer: 'datetime=local' };
    const patched = await patch(id, { priority: 5 }, w.accounts.b2b.auth).set(local);
    expect(patched.status).toBe(200);
    expect((patched.body as { data: Record<string, string> }).data.Secret).toBeUndefined();
    const read = await get(id, w.accounts.b2b.auth).set(local);
    expect(patched.body).toEqual(read.body);
    expect(patched.headers.etag).toBe(read.headers.etag);
    expect((patched.body as { lastModifiedTime: string }).lastModifiedTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}$/);

    const anonymized = await request(t.app).post(`/api/leads/${id}/anonymize`).set('Authorization', w.accounts.b2b.auth).set(local);
    expect(anonymized.status).toBe(200);
    const after = await get(id, w.accounts.b2b.auth).set(local);
    expect(anonymized.body).toEqual(after.body);
    expect(anonymized.headers.etag).toBe(after.headers.etag);
  });
});
