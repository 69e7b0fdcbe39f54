import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { anonymizeLeadRows } from '../../src/data/leadChangeRepository';
import { projectScope } from '../../src/data/projectScope';

/**
 * Duplicates on import (docs/decisions.md, Duplicates on import): POST /leads with the
 * duplicate parameters, against the real database function.
 */
describe('duplicates on POST /leads', () => {
  const { t, w } = useTestWorld();
  /** A second campaign in the B2B project, and its code. */
  let sibling: string;

  beforeAll(async () => {
    sibling = `SIB-${w.id}`;
    await t.load({
      type: 'campaign',
      code: sibling,
      name: 'Sibling',
      project: w.projects.b2b,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
    });
  });

  let counter = 0;
  /** A phone number of its own per call, as `+45 2x xx xx xx`, and the same number written nationally. */
  function phone(): { international: string; national: string; e164: string } {
    const digits = `2${String(process.pid % 1000).padStart(3, '0')}${String(counter++ % 10000).padStart(4, '0')}`;
    return {
      international: `+45 ${digits.slice(0, 2)} ${digits.slice(2, 4)} ${digits.slice(4, 6)} ${digits.slice(6)}`,
      national: digits,
      e164: `+45${digits}`,
    };
  }

  /** An import answer, or a problem's errors. */
  interface Answer {
    success: boolean;
    uniqueId: string;
    pool?: string;
    duplicateOf?: string;
    duplicate?: boolean;
    updated?: boolean;
    errors?: { field?: string; parameter?: string; message: string }[];
  }

  async function importLead(body: Record<string, unknown>, query = '', auth = w.accounts.full.auth) {
    const res = await request(t.app)
      .post(`/api/leads${query}`)
      .set('Authorization', auth)
      .send({ CampaignCode: w.campaigns.b2b, ...body });
    return { status: res.status, contentType: res.headers['content-type'], body: res.body as Answer };
  }

  /** Leads of this file's campaigns with the number. */
  const leadsWithPhone = async (e164: string) =>
    Number(
      (
        await t
          .db('leads')
          .where({ phone_e164: e164 })
          .whereIn('campaign_id', t.db('campaigns').select('id').whereIn('code', [w.campaigns.b2b, w.campaigns.retail, sibling]))
          .count<{ count: string }[]>('*')
      )[0]!.count,
    );

  it('when no DuplicateCheck is given, then a second import of the same number stores a second lead', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const b = await importLead({ Data: { Name: 'B', Telefon: p.international } });
    expect(a.body).toMatchObject({ success: true });
    expect(b.body).toMatchObject({ success: true });
    expect(b.body.uniqueId).not.toBe(a.body.uniqueId);
    expect(await leadsWithPhone(p.e164)).toBe(2);
  });

  it('when DuplicateCheck=Campaign finds the number written another way, then the import is rejected naming the stored lead', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const b = await importLead({ Data: { Name: 'B', Telefon: p.national } }, '?duplicatecheck=campaign');
    expect(b.status).toBe(200);
    expect(b.body).toEqual({
      success: false,
      duplicateOf: a.body.uniqueId,
      errors: [{ field: 'Phone', message: `duplicate of lead ${a.body.uniqueId}` }],
    });
    expect(await leadsWithPhone(p.e164)).toBe(1);
  });

  it('when the parameters come in the body with other casing, then they apply as in the query', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const b = await importLead({ Data: { Name: 'B', Telefon: p.international }, duplicateCHECK: 'Campaign', onduplicate: 'skip' });
    expect(b.body).toEqual({ success: true, uniqueId: a.body.uniqueId, duplicate: true });
    expect(await leadsWithPhone(p.e164)).toBe(1);
  });

  it('when the body carries the duplicate parameters as null, then they are not given and the query or the default applies', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const unset = { DuplicateCheck: null, DuplicateKey: null, DuplicateWindow: null, DuplicateStatuses: null, OnDuplicate: null };
    const b = await importLead({ Data: { Name: 'B', Telefon: p.national }, ...unset }, '?DuplicateCheck=Campaign&OnDuplicate=Skip');
    expect(b.status).toBe(200);
    expect(b.body).toEqual({ success: true, uniqueId: a.body.uniqueId, duplicate: true });
    const c = await importLead({ Data: { Name: 'C', Telefon: p.national }, ...unset });
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ success: true });
    expect(c.body.uniqueId).not.toBe(a.body.uniqueId);
  });

  it('when the stored lead is in another campaign, then Campaign does not count it and Project does', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const inSibling = await importLead(
      { CampaignCode: sibling, Data: { Name: 'B', Telefon: p.international } },
      '?DuplicateCheck=Campaign',
    );
    expect(inSibling.body).toMatchObject({ success: true, pool: expect.any(String) as string });
    const p2 = phone();
    const c = await importLead({ Data: { Name: 'C', Telefon: p2.international } });
    const project = await importLead({ CampaignCode: sibling, Data: { Name: 'D', Telefon: p2.international } }, '?DuplicateCheck=Project');
    expect(project.body).toMatchObject({ success: false, duplicateOf: c.body.uniqueId });
    expect(a.body.uniqueId).not.toBe(c.body.uniqueId);
  });

  it('when the stored lead is in another project, then Account counts it only for an account whose rights reach that project', async () => {
    const p = phone();
    const retail = await importLead({ CampaignCode: w.campaigns.retail, Data: { Name: 'R', Telefon: p.international } });
    const projectOnly = await importLead({ Data: { Name: 'B', Telefon: p.international } }, '?DuplicateCheck=Project');
    expect(projectOnly.body).toMatchObject({ success: true, pool: expect.any(String) as string });
    const full = await importLead({ Data: { Name: 'C', Telefon: p.international } }, '?DuplicateCheck=Account');
    // The B2B lead just stored is the latest duplicate now; it is in the account's projects too.
    expect(full.body).toMatchObject({ success: false, duplicateOf: projectOnly.body.uniqueId });

    const p2 = phone();
    const retail2 = await importLead({ CampaignCode: w.campaigns.retail, Data: { Name: 'R', Telefon: p2.international } });
    const b2bAccount = await importLead({ Data: { Name: 'B', Telefon: p2.international } }, '?DuplicateCheck=Account', w.accounts.b2b.auth);
    expect(b2bAccount.body).toMatchObject({ success: true, pool: expect.any(String) as string });
    const p3 = phone();
    const retail3 = await importLead({ CampaignCode: w.campaigns.retail, Data: { Name: 'R', Telefon: p3.international } });
    const fullAccount = await importLead({ Data: { Name: 'B', Telefon: p3.international } }, '?DuplicateCheck=Account');
    expect(fullAccount.body).toMatchObject({ success: false, duplicateOf: retail3.body.uniqueId });
    expect(retail.body.success && retail2.body.success).toBe(true);
  });

  it('when DuplicateKey=ExternalKey, then the external key decides and the number does not', async () => {
    const customer = uniq('C-');
    const a = await importLead({ Data: { Name: 'A', Telefon: phone().international, Customer: customer } });
    const samePhone = phone();
    await importLead({ Data: { Name: 'X', Telefon: samePhone.international, Customer: uniq('C-') } });
    const byKey = await importLead(
      { Data: { Name: 'B', Telefon: phone().international, Customer: customer } },
      '?DuplicateCheck=Campaign&DuplicateKey=ExternalKey',
    );
    expect(byKey.body).toEqual({
      success: false,
      duplicateOf: a.body.uniqueId,
      errors: [{ field: 'ExternalKey', message: `duplicate of lead ${a.body.uniqueId}` }],
    });
    const byKeyOnly = await importLead(
      { Data: { Name: 'C', Telefon: samePhone.international, Customer: uniq('C-') } },
      '?DuplicateCheck=Campaign&DuplicateKey=ExternalKey',
    );
    expect(byKeyOnly.body).toMatchObject({ success: true, pool: expect.any(String) as string });
  });

  it('when DuplicateKey=PhoneOrExternalKey, then either key makes a duplicate', async () => {
    const customer = uniq('C-');
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international, Customer: customer } });
    const q = '?DuplicateCheck=Campaign&DuplicateKey=PhoneOrExternalKey';
    const byPhone = await importLead({ Data: { Name: 'B', Telefon: p.national, Customer: uniq('C-') } }, q);
    const byKey = await importLead({ Data: { Name: 'C', Telefon: phone().international, Customer: customer } }, q);
    const neither = await importLead({ Data: { Name: 'D', Telefon: phone().international, Customer: uniq('C-') } }, q);
    expect(byPhone.body).toMatchObject({ success: false, duplicateOf: a.body.uniqueId });
    expect(byKey.body).toMatchObject({ success: false, duplicateOf: a.body.uniqueId });
    expect(neither.body).toMatchObject({ success: true, pool: expect.any(String) as string });
  });

  it('when the stored lead was uploaded before the DuplicateWindow, then it does not count', async () => {
    const p = phone();
    t.setNow(new Date(Date.now() - 3 * 86_400_000));
    const old = await importLead({ Data: { Name: 'Old', Telefon: p.international } });
    t.setNow(new Date());
    const within2Days = await importLead({ Data: { Name: 'B', Telefon: p.international } }, '?DuplicateCheck=Campaign&DuplicateWindow=P2D');
    expect(within2Days.body).toMatchObject({ success: true, pool: expect.any(String) as string });
    const p2 = phone();
    t.setNow(new Date(Date.now() - 3 * 86_400_000));
    const old2 = await importLead({ Data: { Name: 'Old', Telefon: p2.international } });
    t.setNow(new Date());
    const within4Days = await importLead(
      { Data: { Name: 'B', Telefon: p2.international } },
      '?DuplicateCheck=Campaign&DuplicateWindow=P4D',
    );
    expect(within4Days.body).toMatchObject({ success: false, duplicateOf: old2.body.uniqueId });
    expect(old.body.success).toBe(true);
  });

  async function bulk(rows: Record<string, string>[], query: Record<string, string>) {
    const res = await request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b, ...query })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(rows));
    expect(res.status).toBe(200);
    return res.body as (Answer & { row: number })[];
  }

  it.each(['P999999999Y', '10675199.02:48:05.4775807'])(
    'when the DuplicateWindow %s reaches back before any DateTime, then every stored lead counts (not a 500)',
    async (window) => {
      const p = phone();
      const stored = await importLead({ Data: { Name: 'Stored', Telefon: p.international } });
      const again = await importLead(
        { Data: { Name: 'Again', Telefon: p.national } },
        `?DuplicateCheck=Campaign&DuplicateWindow=${encodeURIComponent(window)}`,
      );
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ success: false, duplicateOf: stored.body.uniqueId });
      const rows = await bulk([{ Name: 'Bulk again', Telefon: p.international }], { DuplicateCheck: 'Campaign', DuplicateWindow: window });
      expect(rows).toEqual([expect.objectContaining({ row: 1, success: false, duplicateOf: stored.body.uniqueId })]);
    },
  );

  it('when the stored lead is closed, then it counts only with DuplicateStatuses=All', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'A', Telefon: p.international } });
    const removed = await request(t.app)
      .patch(`/api/leads/${a.body.uniqueId}`)
      .set('Authorization', w.accounts.full.auth)
      .send({ status: 'Removed' });
    expect(removed.status).toBe(200);
    const open = await importLead({ Data: { Name: 'B', Telefon: p.international } }, '?DuplicateCheck=Campaign&OnDuplicate=Skip');
    expect(open.body).toMatchObject({ success: true, pool: expect.any(String) as string });
    await t.db('leads').where({ unique_id: open.body.uniqueId }).update({ status: 600 });
    const all = await importLead(
      { Data: { Name: 'C', Telefon: p.international } },
      '?DuplicateCheck=Campaign&OnDuplicate=Skip&DuplicateStatuses=all',
    );
    expect(all.body).toMatchObject({ success: true, duplicate: true });
    expect([a.body.uniqueId, open.body.uniqueId]).toContain(all.body.uniqueId);
  });

  it('when OnDuplicate=Update, then the stored lead takes the new values of its editable fields and keeps the others', async () => {
    const p = phone();
    const a = await importLead({ Data: { Name: 'Before', Telefon: p.international, Email: 'before@example.com', Secret: 's1' } });
    const b = await importLead(
      { Data: { Name: 'After', Telefon: p.national, Revenue: '42' } },
      '?DuplicateCheck=Campaign&OnDuplicate=Update',
    );
    expect(b.body).toEqual({ success: true, uniqueId: a.body.uniqueId, updated: true });
    const lead = await request(t.app).get(`/api/leads/${a.body.uniqueId}`).set('Authorization', w.accounts.full.auth);
    expect((lead.body as { data: Record<string, string> }).data).toMatchObject({
      Name: 'After',
      Email: 'before@example.com',
      Secret: 's1',
      Revenue: '42',
    });
    expect(await leadsWithPhone(p.e164)).toBe(1);
  });

  describe('OnDuplicate=Update into a lead of another lead definition', () => {
    /** A campaign in the B2B project whose definition shares some of the import's field names, with other types, rights and keys. */
    let other: string;
    beforeAll(async () => {
      other = `OTH-${w.id}`;
      await t.load(
        {
          type: 'leadDefinition',
          name: `Other-${w.id}`,
          fields: [
            { name: 'Name', type: 'text', required: true },
            { name: 'Phone', type: 'phone', required: true },
            { name: 'Email', type: 'text' },
            { name: 'Customer', type: 'text' },
            { name: 'Revenue', type: 'number', access: 'Full' },
            { name: 'Secret', type: 'text', editable: false },
            { name: 'Segment', type: 'text' },
            { name: 'CustomerNo', type: 'text', externalKey: true },
          ],
        },
        {
          type: 'campaign',
          code: other,
          name: 'Other',
          project: w.projects.b2b,
          leadDefinition: `Other-${w.id}`,
          campaignType: 'PowerDialer',
        },
      );
    });

    async function storedLead(p: { international: string }) {
      const a = await importLead({
        CampaignCode: other,
        Data: {
          Name: 'Stored',
          Phone: p.international,
          Email: 'kept',
          Customer: 'C1',
          Revenue: '1',
          Secret: 's1',
          Segment: 'seg',
          CustomerNo: 'K1',
        },
      });
      expect(a.body.success).toBe(true);
      return a.body.uniqueId;
    }
    const row = (uniqueId: string) =>
      t.db('leads').where({ unique_id: uniqueId }).first<{ data: Record<string, string>; external_key: string; phone_e164: string }>();

    it('when a single import updates it, then only the fields that definition has by name and type, lets change and the importer reaches change', async () => {
      const p = phone();
      const stored = await storedLead(p);
      const full = await importLead(
        { Data: { Name: 'New', Telefon: p.national, Email: 'new@example.com', Customer: 'C2', Revenue: '2', Secret: 's2' } },
        '?DuplicateCheck=Project&OnDuplicate=Update',
      );
      expect(full.body).toEqual({ success: true, uniqueId: stored, updated: true });
      const after = await row(stored);
      // Email is another type there, Secret may not change there; no name of the import's definition alone is added.
      expect(after.data).toEqual({
        Name: 'New',
        Phone: p.national,
        Email: 'kept',
        Customer: 'C2',
        Revenue: '2',
        Secret: 's1',
        Segment: 'seg',
        CustomerNo: 'K1',
      });
      // Its external key field is not the import's: the key stays.
      expect(after).toMatchObject({ external_key: 'K1', phone_e164: p.e164 });
      // A Partner importer does not reach Revenue in that definition (it does in its own).
      const partner = await importLead(
        { Data: { Name: 'Partner', Telefon: p.national, Revenue: '3' } },
        '?DuplicateCheck=Project&OnDuplicate=Update',
        w.accounts.b2b.auth,
      );
      expect(partner.body).toEqual({ success: true, uniqueId: stored, updated: true });
      expect((await row(stored)).data).toMatchObject({ Name: 'Partner', Revenue: '2' });
    });

    it('when a bulk import updates it, then the same fields change as with a single import', async () => {
      const p = phone();
      const stored = await storedLead(p);
      const answer = await bulk([{ Name: 'Bulk', Telefon: p.national, Email: 'bulk@example.com', Secret: 's3', Customer: 'C3' }], {
        DuplicateCheck: 'Project',
        OnDuplicate: 'Update',
      });
      expect(answer).toEqual([{ row: 1, success: true, uniqueId: stored, updated: true }]);
      expect((await row(stored)).data).toEqual({
        Name: 'Bulk',
        Phone: p.national,
        Email: 'kept',
        Customer: 'C3',
        Revenue: '1',
        Secret: 's1',
        Segment: 'seg',
        CustomerNo: 'K1',
      });
    });
  });

  it("when the campaign carries defaults, then GET /campaigns/{Code} shows them, an import follows them and the request's parameters override them", async () => {
    const code = `DEF-${w.id}`;
    await t.load({
      type: 'campaign',
      code,
      name: 'Defaults',
      project: w.projects.b2b,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
      duplicateCheck: 'campaign',
      duplicateWindow: 'P7D',
      onDuplicate: 'Skip',
    });
    const shown = await request(t.app).get(`/api/campaigns/${code}`).set('Authorization', w.accounts.full.auth);
    expect(shown.body).toMatchObject({ duplicateCheck: 'Campaign', duplicateKey: 'Phone', duplicateWindow: 'P7D', onDuplicate: 'Skip' });
    const plain = await request(t.app).get(`/api/campaigns/${w.campaigns.b2b}`).set('Authorization', w.accounts.full.auth);
    expect(plain.body).toMatchObject({ duplicateCheck: 'None', duplicateKey: 'Phone', duplicateWindow: null, onDuplicate: 'Reject' });

    const p = phone();
    const a = await importLead({ CampaignCode: code, Data: { Name: 'A', Telefon: p.international } });
    const skipped = await importLead({ CampaignCode: code, Data: { Name: 'B', Telefon: p.international } });
    expect(skipped.body).toEqual({ success: true, uniqueId: a.body.uniqueId, duplicate: true });
    const rejected = await importLead({ CampaignCode: code, Data: { Name: 'C', Telefon: p.international } }, '?OnDuplicate=Reject');
    expect(rejected.body).toMatchObject({ success: false, duplicateOf: a.body.uniqueId });
    const unchecked = await importLead({ CampaignCode: code, Data: { Name: 'D', Telefon: p.international }, DuplicateCheck: 'None' });
    expect(unchecked.body).toMatchObject({ success: true, pool: expect.any(String) as string });
  });

  it('when 12 imports of one new number arrive at once over real sockets, then one lead is stored and the others name it', async () => {
    const p = phone();
    const app = await t.listen();
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const res = await fetch(`${app.url}/api/leads?DuplicateCheck=Campaign`, {
          method: 'POST',
          headers: { Authorization: w.accounts.full.auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: `N${i}`, Telefon: i % 2 ? p.international : p.national } }),
        });
        expect(res.status).toBe(200);
        return (await res.json()) as { success: boolean; uniqueId?: string; duplicateOf?: string };
      }),
    );
    const stored = answers.filter((a) => a.success);
    expect(stored).toHaveLength(1);
    expect(answers.filter((a) => a.duplicateOf === stored[0]!.uniqueId)).toHaveLength(11);
    expect(await leadsWithPhone(p.e164)).toBe(1);
  });

  it('when a bulk import holds a stored duplicate and a duplicate of an earlier row, then each is answered and neither is stored', async () => {
    const storedPhone = phone();
    const a = await importLead({ Data: { Name: 'Stored', Telefon: storedPhone.international } });
    const twice = phone();
    const answers = await bulk(
      [
        { Name: 'Dup of stored', Telefon: storedPhone.national },
        { Name: 'First', Telefon: twice.international },
        { Name: 'Second', Telefon: twice.national },
        { Name: 'Bad' },
      ],
      { DuplicateCheck: 'Campaign' },
    );
    expect(answers[0]).toEqual({
      row: 1,
      success: false,
      duplicateOf: a.body.uniqueId,
      errors: [{ field: 'Phone', message: `duplicate of lead ${a.body.uniqueId}` }],
    });
    expect(answers[1]).toMatchObject({ row: 2, success: true, status: 'New' });
    expect(answers[2]).toMatchObject({ row: 3, success: false, duplicateOf: answers[1]!.uniqueId });
    expect(answers[3]).toMatchObject({ row: 4, success: false });
    expect(await leadsWithPhone(storedPhone.e164)).toBe(1);
    expect(await leadsWithPhone(twice.e164)).toBe(1);
  });

  it('when a bulk import says Skip or Update, then rows answer the lead they duplicate and Update merges their values', async () => {
    const storedPhone = phone();
    const a = await importLead({ Data: { Name: 'Stored', Telefon: storedPhone.international, Email: 'old@example.com' } });
    const skipped = await bulk([{ Name: 'X', Telefon: storedPhone.international }], { DuplicateCheck: 'Campaign', OnDuplicate: 'Skip' });
    expect(skipped).toEqual([{ row: 1, success: true, uniqueId: a.body.uniqueId, duplicate: true }]);
    const twice = phone();
    const updated = await bulk(
      [
        { Name: 'Stored, new name', Telefon: storedPhone.national },
        { Name: 'First', Telefon: twice.international, Email: 'first@example.com' },
        { Name: 'Second', Telefon: twice.national },
      ],
      { DuplicateCheck: 'Campaign', OnDuplicate: 'Update' },
    );
    expect(updated[0]).toEqual({ row: 1, success: true, uniqueId: a.body.uniqueId, updated: true });
    expect(updated[2]).toEqual({ row: 3, success: true, uniqueId: updated[1]!.uniqueId, updated: true });
    const stored = await request(t.app).get(`/api/leads/${a.body.uniqueId}`).set('Authorization', w.accounts.full.auth);
    expect((stored.body as { data: Record<string, string> }).data).toMatchObject({ Name: 'Stored, new name', Email: 'old@example.com' });
    const first = await request(t.app).get(`/api/leads/${updated[1]!.uniqueId}`).set('Authorization', w.accounts.full.auth);
    expect((first.body as { data: Record<string, string> }).data).toMatchObject({ Name: 'Second', Email: 'first@example.com' });
    expect(await leadsWithPhone(twice.e164)).toBe(1);
  });

  it('when the duplicate is being anonymized as an Update import finds it, then the import waits and stores a new lead; the anonymized lead stays empty', async () => {
    const p = phone();
    const stored = await importLead({ Data: { Name: 'Forget me', Telefon: p.international, Email: 'forget@example.com' } });
    const { id: userId } = await t.db('users').where({ org_code: w.users.agent }).first<{ id: number }>('id');
    const trx = await t.db.transaction();
    let single: Promise<Awaited<ReturnType<typeof importLead>>>;
    let bulkRows: Promise<(Answer & { row: number })[]>;
    try {
      // The anonymize holds the lead (its lock) while both imports look for the duplicate.
      await anonymizeLeadRows(trx, stored.body.uniqueId, projectScope(['*']), { now: new Date(), userId });
      single = importLead({ Data: { Name: 'Single', Telefon: p.national } }, '?DuplicateCheck=Campaign&OnDuplicate=Update');
      bulkRows = bulk([{ Name: 'Bulk', Telefon: p.international }], { DuplicateCheck: 'Campaign', OnDuplicate: 'Update' });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await trx.commit();
    } catch (err) {
      await trx.rollback();
      throw err;
    }
    const [one, many] = await Promise.all([single, bulkRows]);
    expect(one.body).toMatchObject({ success: true });
    expect(one.body.updated).toBeUndefined();
    expect(one.body.uniqueId).not.toBe(stored.body.uniqueId);
    expect(many[0]).toMatchObject({ row: 1, success: true });
    expect(many[0]!.uniqueId).not.toBe(stored.body.uniqueId);
    const forgotten = await t
      .db('leads')
      .where({ unique_id: stored.body.uniqueId })
      .first<{ status: number; data: object; phone_number: string | null }>();
    expect(forgotten).toMatchObject({ status: 610, data: {}, phone_number: null });
  });

  it('when a bulk import names a bad duplicate parameter, then it is a 400 before the body is read', async () => {
    const res = await request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b, OnDuplicate: 'Merge' })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/json')
      .send('[]');
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('OnDuplicate');
  });

  it.each([
    ['?DuplicateCheck=Everywhere', {}, 'DuplicateCheck'],
    ['?DuplicateKey=Email', {}, 'DuplicateKey'],
    ['?DuplicateWindow=30days', {}, 'DuplicateWindow'],
    ['?DuplicateWindow=-P1D', {}, 'DuplicateWindow'],
    ['?DuplicateStatuses=Closed', {}, 'DuplicateStatuses'],
    ['', { OnDuplicate: 'Merge' }, 'OnDuplicate'],
    ['', { DuplicateCheck: 3 }, 'DuplicateCheck'],
  ])('when %s %j, then the answer is a 400 problem naming %s', async (query, body, name) => {
    const res = await importLead({ Data: { Name: 'X', Telefon: phone().international }, ...body }, query);
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(JSON.stringify(res.body.errors)).toContain(name);
  });
});
