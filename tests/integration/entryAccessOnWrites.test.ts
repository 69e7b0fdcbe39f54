import request from 'supertest';
import type { ProblemFieldError } from '../../src/http/problem';
import { basicAuth } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { ALL_RIGHTS } from '../harness/world';

interface ImportResult {
  success: boolean;
  uniqueId?: string;
  errors?: { field: string; message: string }[];
}
interface RowResult extends ImportResult {
  row: number;
}
interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

const NOT_A_FIELD = "is not a field of the campaign's lead definition";

/**
 * Entry access applies to writes as to reads (docs/decisions.md, Leads): a field above the
 * account's entry access is, on import, bulk import and change, exactly a field the lead
 * definition does not have. The world's definition has `Revenue` (Partner) and `Secret` (Full);
 * `w.accounts.b2b` is Partner, the account made here is None with every right.
 */
describe('entry access on writes', () => {
  const { t, w } = useTestWorld();
  const none = { username: '', password: 'none-writer-pass', auth: '' };
  /** A campaign whose definition requires a Full field. */
  const guarded = () => `GUARD-${w.id}`;

  beforeAll(async () => {
    none.username = `none-writer-${w.id}`;
    none.auth = basicAuth(none.username, none.password);
    await t.load(
      {
        type: 'account',
        username: none.username,
        password: none.password,
        user: w.users.agent,
        projects: ['*'],
        rights: ALL_RIGHTS,
        entryAccess: 'None',
      },
      {
        type: 'leadDefinition',
        name: `Guarded ${w.id}`,
        fields: [
          { name: 'Name', type: 'text', required: true },
          { name: 'Phone', type: 'phone', required: true },
          { name: 'Vault', type: 'text', required: true, access: 'Full' },
        ],
      },
      {
        type: 'campaign',
        code: guarded(),
        name: 'Guarded',
        project: w.projects.b2b,
        leadDefinition: `Guarded ${w.id}`,
        campaignType: 'Master',
      },
    );
  });

  const importOne = (data: Record<string, string>, auth: string, campaign = w.campaigns.b2b) =>
    request(t.app).post('/api/leads').set('Authorization', auth).send({ CampaignCode: campaign, Data: data });
  const bulk = (body: string, contentType: string, auth: string) =>
    request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b })
      .set('Authorization', auth)
      .set('Content-Type', contentType)
      .send(body);
  const planted = async (marker: string) =>
    Number(
      (
        await t
          .db('leads')
          .whereRaw(`data::text like ?`, [`%${marker}%`])
          .count<{ n: string }[]>({ n: '*' })
      )[0]!.n,
    );

  describe('POST /leads', () => {
    it('when an entry-access-None account sends a Full-only field, then it is refused as an unknown field and nothing is stored', async () => {
      const marker = `planted-${w.id}-1`;
      const res = await importOne({ company: 'X', Name: 'N', phone: '+4520999600', Secret: marker }, none.auth);
      expect(res.status).toBe(200);
      const body = res.body as ImportResult;
      expect(body.success).toBe(false);
      expect(body.errors).toContainEqual({ field: 'Secret', message: NOT_A_FIELD });
      expect(await planted(marker)).toBe(0);
    });

    it('when a None account sends a Partner field, or a Partner account a Full one, then it is refused; within their access it is stored', async () => {
      const noneRevenue = await importOne({ Name: 'N', Telefon: '+4520999601', Revenue: '10' }, none.auth);
      expect((noneRevenue.body as ImportResult).errors).toEqual([{ field: 'Revenue', message: NOT_A_FIELD }]);
      const partnerSecret = await importOne({ Name: 'P', Telefon: '+4520999602', secret: 'x' }, w.accounts.b2b.auth);
      expect((partnerSecret.body as ImportResult).errors).toEqual([{ field: 'secret', message: NOT_A_FIELD }]);
      const partnerRevenue = await importOne({ Name: 'P', Telefon: '+4520999603', Revenue: '10' }, w.accounts.b2b.auth);
      expect((partnerRevenue.body as ImportResult).success).toBe(true);
      const fullSecret = await importOne({ Name: 'F', Telefon: '+4520999604', Secret: 'ok' }, w.accounts.full.auth);
      expect((fullSecret.body as ImportResult).success).toBe(true);
    });

    it('when a required field is above the account’s access, then it is not required of that account (it cannot name it), but of a Full account it is', async () => {
      const asNone = await importOne({ Name: 'N', Phone: '+4520999605' }, none.auth, guarded());
      expect(asNone.body).toMatchObject({ success: true });
      const asFull = await importOne({ Name: 'F', Phone: '+4520999606' }, w.accounts.full.auth, guarded());
      expect((asFull.body as ImportResult).errors).toEqual([{ field: 'Vault', message: 'is required' }]);
    });
  });

  describe('POST /leads/bulk', () => {
    it('when JSON rows of a Partner account name a Full field, then those rows fail as unknown fields and the others are stored', async () => {
      const marker = `planted-${w.id}-2`;
      const res = await bulk(
        JSON.stringify([
          { Name: 'A', Telefon: '+4520999610', Secret: marker },
          { Name: 'B', Telefon: '+4520999611', Revenue: '5' },
          { Data: { Name: 'C', Telefon: '+4520999612', SECRET: marker } },
        ]),
        'application/json',
        w.accounts.b2b.auth,
      );
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([false, true, false]);
      expect(results[0]!.errors).toEqual([{ field: 'Secret', message: NOT_A_FIELD }]);
      expect(results[2]!.errors).toEqual([{ field: 'SECRET', message: NOT_A_FIELD }]);
      expect(await planted(marker)).toBe(0);
    });

    it('when a CSV header of a None account names a Partner field, then it is a 400 naming it, as for a column the definition lacks', async () => {
      const csv = 'Name;Telefon;Revenue\nA;+4520999620;5\n';
      const res = await bulk(csv, 'text/csv', none.auth);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors).toEqual([{ field: 'Revenue', message: NOT_A_FIELD }]);
      const asPartner = await bulk(csv, 'text/csv', w.accounts.b2b.auth);
      expect((asPartner.body as RowResult[]).map((r) => r.success)).toEqual([true]);
    });

    it('when NDJSON rows of a None account name a Partner field, then those rows fail', async () => {
      const ndjson = [
        { Name: 'A', Telefon: '+4520999630', Revenue: '1' },
        { Name: 'B', Telefon: '+4520999631' },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n');
      const res = await bulk(ndjson, 'application/x-ndjson', none.auth);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([false, true]);
      expect(results[0]!.errors).toEqual([{ field: 'Revenue', message: NOT_A_FIELD }]);
    });
  });
});
