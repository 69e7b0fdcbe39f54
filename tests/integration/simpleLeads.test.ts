import request from 'supertest';
import { uniq, basicAuth } from '../harness/testApp';
import { ALL_RIGHTS, keyFieldsCampaign } from '../harness/world';
import { useTestWorld } from '../harness/useTestWorld';

/** A lead as the exports answer it: a reference is `{ orgCode }` (or `{ uniqueId, code }`), or the full object when included. */
interface ExportedLead {
  uniqueId: string;
  data: Record<string, string>;
  campaign: Record<string, unknown>;
  ownerOrgUnit?: Record<string, unknown> | null;
  uploadedByUser?: Record<string, unknown> | null;
  lastModifiedByUser?: Record<string, unknown> | null;
  firstProcessedByUser?: Record<string, unknown> | null;
}

/**
 * The world's leads, in both projects, with statuses, closures and modified times chosen for
 * the filters. Other test files write leads into the same database, so every assertion looks
 * only at this file's leads (or filters by this world's campaigns).
 */
interface Seed {
  id: string;
  campaign: 'b2b' | 'retail';
  status: string;
  closure?: string;
  modified: string;
}

const SEEDS: Seed[] = [
  { id: 'a', campaign: 'b2b', status: 'New', modified: '2026-04-01T00:00:00' },
  { id: 'b', campaign: 'b2b', status: 'RedialAutomatic', modified: '2026-04-01T12:00:00' },
  { id: 'c', campaign: 'b2b', status: 'UserProcessed', closure: 'Success', modified: '2026-04-02T00:00:00' },
  { id: 'd', campaign: 'b2b', status: 'UserProcessed', closure: 'NotInterested', modified: '2026-04-02T09:30:00.250' },
  { id: 'e', campaign: 'b2b', status: 'Unresolved', modified: '2026-04-03T08:00:00' },
  { id: 'f', campaign: 'b2b', status: 'Expired', modified: '2026-04-03T08:00:00' },
  { id: 'g', campaign: 'retail', status: 'VIPRedial', modified: '2026-04-01T06:00:00' },
  { id: 'h', campaign: 'retail', status: 'Depleted', modified: '2026-04-02T10:00:00' },
  { id: 'i', campaign: 'retail', status: 'UserProcessed', closure: 'Success', modified: '2026-04-04T00:00:00' },
];

describe('GET /api/simpleleads', () => {
  const { t, w } = useTestWorld();
  /** Seed id → lead unique id, and back. */
  const ids = new Map<string, string>();
  const seedOf = new Map<string, string>();
  let noneAuth: string;

  beforeAll(async () => {
    for (const s of SEEDS) {
      const uniqueId = `${w.id}-${s.id}`;
      ids.set(s.id, uniqueId);
      seedOf.set(uniqueId, s.id);
    }
    await t.load(
      ...SEEDS.map((s) => ({
        type: 'lead',
        uniqueId: ids.get(s.id),
        campaign: w.campaigns[s.campaign],
        pool: `Pool ${w.id}`,
        status: s.status,
        ...(s.closure ? { closure: s.closure } : {}),
        priority: 3,
        uploadTime: '2026-03-31T10:00:00',
        lastModifiedTime: s.modified,
        ...(s.id === 'c' ? { firstProcessedTime: '2026-04-01T09:00:00', firstProcessedByUser: w.users.agent } : {}),
        ownerOrgUnit: w.units.team,
        uploadedByUser: w.users.other,
        lastModifiedByUser: w.users.agent,
        data: { Name: `Lead ${s.id} æøå`, Telefon: '+45 11 22 33 44', Customer: `K-${s.id}`, Revenue: '1000', Secret: 'classified' },
      })),
      {
        type: 'account',
        username: `leads-none-${w.id}`,
        password: 'pw-none',
        user: w.users.agent,
        projects: ['*'],
        rights: ALL_RIGHTS,
        entryAccess: 'None',
      },
    );
    noneAuth = basicAuth(`leads-none-${w.id}`, 'pw-none');
  });

  const get = (query: string, auth = w.accounts.full.auth) => request(t.app).get(`/api/simpleleads?${query}`).set('Authorization', auth);
  /** This file's seeds in the answer, in answer order. */
  const seedsIn = (body: { uniqueId: string }[]) => body.map((l) => seedOf.get(l.uniqueId)).filter((s): s is string => s !== undefined);
  const both = () => `Campaigns=${encodeURIComponent(w.campaigns.b2b)},${encodeURIComponent(w.campaigns.retail)}`;

  describe('shape', () => {
    it('when a lead is exported, then it has the Lead fields with compact references and its data', async () => {
      const res = await get(`UniqueId=${ids.get('c')}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const campaign = await t.db('campaigns').where({ code: w.campaigns.b2b }).first<{ unique_id: string }>('unique_id');
      expect(res.body).toEqual([
        {
          uniqueId: ids.get('c'),
          status: 'UserProcessed',
          closure: 'Success',
          priority: 3,
          phoneNumber: '+45 11 22 33 44',
          externalKey: 'K-c',
          pool: `Pool ${w.id}`,
          campaign: { uniqueId: campaign.unique_id, code: w.campaigns.b2b },
          data: { Name: 'Lead c æøå', Phone: '+45 11 22 33 44', Customer: 'K-c', Revenue: '1000', Secret: 'classified' },
          uploadTime: '2026-03-31T10:00:00.000+02:00',
          lastModifiedTime: '2026-04-02T00:00:00.000+02:00',
          firstProcessedTime: '2026-04-01T09:00:00.000+02:00',
          ownerOrgUnit: { orgCode: w.units.team },
          uploadedByUser: { orgCode: w.users.other },
          lastModifiedByUser: { orgCode: w.users.agent },
          firstProcessedByUser: { orgCode: w.users.agent },
          closureData: [],
        },
      ]);
    });

    it('when a lead has no first processing, then those properties are absent', async () => {
      const res = await get(`UniqueId=${ids.get('a')}`);
      expect((res.body as ExportedLead[])[0]).not.toHaveProperty('firstProcessedTime');
      expect((res.body as ExportedLead[])[0]).not.toHaveProperty('firstProcessedByUser');
    });

    it('when nothing matches, then the answer is an empty array', async () => {
      const res = await get(`UniqueId=no-such-${w.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    });

    it('when leads are exported, then they are ordered by last modified time, then unique id', async () => {
      const res = await get(both());
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'g', 'b', 'c', 'd', 'h', 'e', 'f', 'i']);
    });

    it('when exporters send skip, take and PageSize, then they are ignored', async () => {
      const res = await get(`${both()}&skip=2&take=1&PageSize=1&$top=1`);
      expect(res.status).toBe(200);
      expect(seedsIn(res.body as ExportedLead[])).toHaveLength(SEEDS.length);
    });

    it('when Limit is given, then it caps the export at the first leads in order, as it does with Include', async () => {
      const res = await get(`${both()}&Limit=3`);
      expect(res.status).toBe(200);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'g', 'b']);
      const included = await get(`${both()}&Limit=2&Include=campaign`);
      expect(seedsIn(included.body as ExportedLead[])).toEqual(['a', 'g']);
    });

    it('when Limit is not a positive integer, then 400 naming it', async () => {
      const res = await get(`${both()}&Limit=0`);
      expect(res.status).toBe(400);
      expect((res.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('Limit');
    });

    it('when the client accepts only text/html, then 406', async () => {
      const res = await get(both()).set('Accept', 'text/html');
      expect(res.status).toBe(406);
    });
  });

  describe('each filter alone', () => {
    it('when Projects names one project, then only its leads come', async () => {
      const res = await get(`Projects=${encodeURIComponent(w.projects.retail)}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['g', 'h', 'i']);
    });

    it('when Projects is a case-insensitive pattern, then it matches', async () => {
      const res = await get(`Projects=${encodeURIComponent(`b2b-${w.id}*`)}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    });

    it('when Campaigns gives a code, then only that campaign comes', async () => {
      const res = await get(`Campaigns=${encodeURIComponent(w.campaigns.retail)}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['g', 'h', 'i']);
      expect(res.body).toHaveLength(3);
    });

    it('when Campaigns gives a unique id, then it is matched too', async () => {
      const c = await t.db('campaigns').where({ code: w.campaigns.retail }).first<{ unique_id: string }>('unique_id');
      const res = await get(`Campaigns=${c.unique_id}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['g', 'h', 'i']);
    });

    it('when ModifiedFrom is a date, then it is local midnight and inclusive', async () => {
      const res = await get(`${both()}&ModifiedFrom=2026-04-02`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['c', 'd', 'h', 'e', 'f', 'i']);
    });

    it('when ModifiedTo is a date, then it is local midnight and exclusive', async () => {
      const res = await get(`${both()}&ModifiedTo=2026-04-02`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'g', 'b']);
    });

    it('when ModifiedFrom is a DateTime to the millisecond, then the lead at that instant is included', async () => {
      const res = await get(`${both()}&ModifiedFrom=2026-04-02T09:30:00.250`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['d', 'h', 'e', 'f', 'i']);
    });

    it('when ModifiedTo is a DateTime with an offset, then the lead at that instant is excluded', async () => {
      const res = await get(`${both()}&ModifiedTo=${encodeURIComponent('2026-04-02T07:30:00.250Z')}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'g', 'b', 'c']);
    });

    it('when Statuses names statuses, then only those come (names case-insensitive)', async () => {
      const res = await get(`${both()}&Statuses=userprocessed,Depleted`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['c', 'd', 'h', 'i']);
    });

    it('when AllOpenStatuses=true, then New, redials and Unresolved come', async () => {
      const res = await get(`${both()}&AllOpenStatuses=true`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'g', 'b', 'e']);
    });

    it('when AllClosedStatuses=true, then every other status comes', async () => {
      const res = await get(`${both()}&AllClosedStatuses=true`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['c', 'd', 'h', 'f', 'i']);
    });

    it('when both sets are asked for, then every status comes', async () => {
      const res = await get(`${both()}&AllOpenStatuses=true&AllClosedStatuses=true`);
      expect(seedsIn(res.body as ExportedLead[])).toHaveLength(SEEDS.length);
    });

    it('when AllOpenStatuses=false, then it adds nothing and no status filter applies', async () => {
      const res = await get(`${both()}&AllOpenStatuses=false`);
      expect(seedsIn(res.body as ExportedLead[])).toHaveLength(SEEDS.length);
    });

    it('when LeadClosures names closures, then only those come', async () => {
      const res = await get(`${both()}&LeadClosures=Success`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['c', 'i']);
    });

    it('when UniqueId is repeated and comma-separated, then exactly those leads come', async () => {
      const res = await get(`UniqueId=${ids.get('a')},${ids.get('h')}&uniqueid=${ids.get('e')}`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'h', 'e']);
      expect(res.body).toHaveLength(3);
    });
  });

  describe('filters combined', () => {
    it('when a status set, a closure and a time window combine, then all must hold', async () => {
      const res = await get(`${both()}&AllClosedStatuses=true&LeadClosures=Success&ModifiedFrom=2026-04-02&ModifiedTo=2026-04-04`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['c']);
    });

    it('when Statuses and AllOpenStatuses combine, then their union applies', async () => {
      const res = await get(`Projects=${encodeURIComponent(w.projects.b2b)}&Statuses=Expired&AllOpenStatuses=true`);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'b', 'e', 'f']);
    });

    it('when Projects and Campaigns disagree, then nothing comes', async () => {
      const res = await get(`Projects=${encodeURIComponent(w.projects.b2b)}&Campaigns=${encodeURIComponent(w.campaigns.retail)}`);
      expect(res.body).toEqual([]);
    });
  });

  describe('bad parameters', () => {
    it('when a status name is unknown, then 400 naming the parameter Statuses and the value', async () => {
      const res = await get('Statuses=New,Sleeping');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'invalid_parameter',
        errors: [{ parameter: 'Statuses', message: expect.stringContaining('"Sleeping"') as jest.AsymmetricMatcher }],
      });
    });

    it('when ModifiedFrom is not a date, then 400 naming it', async () => {
      const res = await get('ModifiedFrom=yesterday');
      expect(res.status).toBe(400);
      expect((res.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('ModifiedFrom');
    });

    it('when AllOpenStatuses is not a boolean, then 400', async () => {
      const res = await get('AllOpenStatuses=yes please');
      expect(res.status).toBe(400);
    });

    it('when ModifiedTo lies before ModifiedFrom, then 400 naming ModifiedTo rather than an empty export', async () => {
      const res = await get(`${both()}&ModifiedFrom=2026-04-03&ModifiedTo=2026-04-02`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'invalid_parameter',
        errors: [{ parameter: 'ModifiedTo', message: 'must not be before ModifiedFrom' }],
      });
      const raw = await request(t.app)
        .get(`/api/rawleads?${both()}&ModifiedFrom=2026-04-03T00:00:00.001&ModifiedTo=2026-04-03`)
        .set('Authorization', w.accounts.full.auth);
      expect(raw.status).toBe(400);
      expect((raw.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('ModifiedTo');
    });

    it('when ModifiedTo equals ModifiedFrom, then the window is empty, not an error', async () => {
      const res = await get(`${both()}&ModifiedFrom=2026-04-02&ModifiedTo=2026-04-02`);
      expect(res.status).toBe(200);
      expect(seedsIn(res.body as ExportedLead[])).toEqual([]);
    });
  });

  describe('entry access', () => {
    it('when the account has Partner access, then Full fields are hidden', async () => {
      const res = await get(`UniqueId=${ids.get('c')}`, w.accounts.b2b.auth);
      expect((res.body as ExportedLead[])[0]!.data).toEqual({
        Name: 'Lead c æøå',
        Phone: '+45 11 22 33 44',
        Customer: 'K-c',
        Revenue: '1000',
      });
    });

    it('when a field was removed from the lead definition, then its stored value is no longer exported', async () => {
      const def = `Shrinking ${w.id}`;
      const code = `SHRINK-${w.id}`;
      const lead = `${w.id}-shrink`;
      await t.load(
        {
          type: 'leadDefinition',
          name: def,
          fields: [
            { name: 'Name', type: 'text' },
            { name: 'Old', type: 'text' },
          ],
        },
        { type: 'campaign', code, name: 'Shrinking', project: w.projects.b2b, leadDefinition: def, campaignType: 'Master' },
        { type: 'lead', uniqueId: lead, campaign: code, data: { Name: 'n', Old: 'stale' } },
      );
      expect(((await get(`UniqueId=${lead}`)).body as ExportedLead[])[0]!.data).toEqual({ Name: 'n', Old: 'stale' });
      await t.load({ type: 'leadDefinition', name: def, fields: [{ name: 'Name', type: 'text' }] });
      expect(((await get(`UniqueId=${lead}`)).body as ExportedLead[])[0]!.data).toEqual({ Name: 'n' });
      expect(((await get(`UniqueId=${lead}&Include=campaign`)).body as ExportedLead[])[0]!.data).toEqual({ Name: 'n' });
    });

    it('when the account has None access, then Partner and Full fields are hidden', async () => {
      const res = await get(`UniqueId=${ids.get('c')}`, noneAuth);
      expect((res.body as ExportedLead[])[0]!.data).toEqual({ Name: 'Lead c æøå', Phone: '+45 11 22 33 44', Customer: 'K-c' });
    });

    describe('phoneNumber and externalKey', () => {
      // Their fields above None: the phone field Full, the external-key field Partner.
      const lead = () => `${w.id}-keys`;
      beforeAll(async () => {
        const { code, records } = keyFieldsCampaign(w);
        await t.load(...records, {
          type: 'lead',
          uniqueId: lead(),
          campaign: code,
          data: { Name: 'n', Mobile: '+45 20 30 40 50', Ref: 'REF-0417' },
        });
      });
      const keysOf = (body: unknown) => {
        const l = (body as (ExportedLead & { phoneNumber?: string; externalKey?: string })[])[0]!;
        return { phoneNumber: l.phoneNumber, externalKey: l.externalKey, data: l.data };
      };

      it.each([
        ['the transcoded export', ''],
        ['the cursor export (Include)', '&Include=campaign'],
      ])('when %s is read, then each is there only for an account that sees its field, as in data', async (_, include) => {
        const query = `UniqueId=${lead()}${include}`;
        expect(keysOf((await get(query)).body)).toEqual({
          phoneNumber: '+45 20 30 40 50',
          externalKey: 'REF-0417',
          data: { Name: 'n', Mobile: '+45 20 30 40 50', Ref: 'REF-0417' },
        });
        expect(keysOf((await get(query, w.accounts.b2b.auth)).body)).toEqual({
          phoneNumber: undefined,
          externalKey: 'REF-0417',
          data: { Name: 'n', Ref: 'REF-0417' },
        });
        const none = (await get(query, noneAuth)).body as Record<string, unknown>[];
        expect(none[0]).not.toHaveProperty('phoneNumber');
        expect(none[0]).not.toHaveProperty('externalKey');
        expect(none[0]!.data).toEqual({ Name: 'n' });
      });

      it('when the lead is read alone, as JSON or as HTML, then the same holds', async () => {
        const one = (auth: string, accept = 'application/json') =>
          request(t.app)
            .get(`/api/leads/${encodeURIComponent(lead())}`)
            .set('Authorization', auth)
            .set('Accept', accept);
        expect((await one(w.accounts.full.auth)).body).toMatchObject({ phoneNumber: '+45 20 30 40 50', externalKey: 'REF-0417' });
        const partner = (await one(w.accounts.b2b.auth)).body as Record<string, unknown>;
        expect(partner).not.toHaveProperty('phoneNumber');
        expect(partner.externalKey).toBe('REF-0417');
        const none = (await one(noneAuth)).body as Record<string, unknown>;
        expect(none).not.toHaveProperty('phoneNumber');
        expect(none).not.toHaveProperty('externalKey');
        const html = await one(noneAuth, 'text/html');
        expect(html.status).toBe(200);
        expect(html.text).toContain(lead());
        expect(html.text).not.toContain('20 30 40 50');
        expect(html.text).not.toContain('REF-0417');
      });

      it('when the definition changes so the stored number and key came from other fields, then no account gets them, as data no longer shows them under those fields', async () => {
        const def = `Moved keys ${w.id}`;
        const code = `MOVED-${w.id}`;
        const moved = `${w.id}-moved`;
        const definition = (first: string, second: string, key: string) => ({
          type: 'leadDefinition',
          name: def,
          fields: [
            { name: 'Name', type: 'text', sortOrder: 0 },
            { name: first, type: 'phone', access: first === 'Private' ? 'Full' : 'None', sortOrder: 1 },
            { name: second, type: 'phone', access: second === 'Private' ? 'Full' : 'None', sortOrder: 2 },
            { name: 'SecretKey', type: 'text', access: 'Full', externalKey: key === 'SecretKey' },
            { name: 'PublicKey', type: 'text', externalKey: key === 'PublicKey' },
          ],
        });
        await t.load(
          definition('Private', 'Public', 'SecretKey'),
          { type: 'campaign', code, name: 'Moved', project: w.projects.b2b, leadDefinition: def, campaignType: 'Master' },
          {
            type: 'lead',
            uniqueId: moved,
            campaign: code,
            data: { Name: 'm', Private: '+45 87 65 43 66', Public: '+45 40 00 00 66', SecretKey: 'SECRET-6', PublicKey: 'PUB-6' },
          },
        );
        const one = async (auth: string) =>
          (
            await request(t.app)
              .get(`/api/leads/${encodeURIComponent(moved)}`)
              .set('Authorization', auth)
          ).body as Record<string, unknown>;
        expect(await one(w.accounts.full.auth)).toMatchObject({ phoneNumber: '+45 87 65 43 66', externalKey: 'SECRET-6' });
        expect(await one(noneAuth)).not.toHaveProperty('phoneNumber');

        // The public phone field comes first now, and the key is the public one.
        await t.load(definition('Public', 'Private', 'PublicKey'));
        for (const auth of [noneAuth, w.accounts.full.auth]) {
          for (const read of [await one(auth), ...((await get(`UniqueId=${moved}`, auth)).body as Record<string, unknown>[])]) {
            expect(read).not.toHaveProperty('phoneNumber');
            expect(read).not.toHaveProperty('externalKey');
          }
        }
        expect((await one(noneAuth)).data).toEqual({ Name: 'm', Public: '+45 40 00 00 66', PublicKey: 'PUB-6' });
        expect(((await get(`UniqueId=${moved}&Include=campaign`, noneAuth)).body as Record<string, unknown>[])[0]).not.toHaveProperty(
          'phoneNumber',
        );
      });
    });
  });

  describe('project isolation', () => {
    it('when a B2B-limited account exports everything, then it never sees Retail leads', async () => {
      const res = await get(both(), w.accounts.b2b.auth);
      expect(seedsIn(res.body as ExportedLead[])).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    });

    it('when a B2B-limited account asks for the Retail project, then nothing comes', async () => {
      const res = await get(`Projects=${encodeURIComponent(w.projects.retail)}`, w.accounts.b2b.auth);
      expect(res.body).toEqual([]);
    });

    it('when the account lacks SimpleLeads: Get, then 403', async () => {
      const res = await get(both(), w.accounts.none.auth);
      expect(res.status).toBe(403);
    });
  });

  describe('Include', () => {
    it('when every reference is included, then they are full objects', async () => {
      const res = await get(`UniqueId=${ids.get('c')}&Include=campaign,ownerOrgUnit&include=uploadedByUser,firstProcessedByUser`);
      const lead = (res.body as ExportedLead[])[0]!;
      expect(lead.campaign).toMatchObject({
        code: w.campaigns.b2b,
        name: 'B2B campaign',
        project: w.projects.b2b,
        leadDefinitionUniqueId: expect.any(String) as jest.AsymmetricMatcher,
      });
      expect(lead.ownerOrgUnit).toMatchObject({ orgCode: w.units.team, name: 'Team Tryg', level: 2 });
      expect(lead.ownerOrgUnit).not.toHaveProperty('parent');
      expect(lead.uploadedByUser).toMatchObject({ orgCode: w.users.other, name: 'Other Agent', username: `other-${w.id}` });
      expect(lead.firstProcessedByUser).toMatchObject({ orgCode: w.users.agent, name: 'Agent Ærø' });
      // Not named: stays a compact reference.
      expect(lead.lastModifiedByUser).toEqual({ orgCode: w.users.agent });
    });

    it('when the same user is included twice, then the second stays a compact reference', async () => {
      const res = await get(`UniqueId=${ids.get('c')}&Include=lastModifiedByUser,firstProcessedByUser`);
      const lead = (res.body as ExportedLead[])[0]!;
      expect(lead.lastModifiedByUser).toMatchObject({ orgCode: w.users.agent, name: 'Agent Ærø' });
      expect(lead.firstProcessedByUser).toEqual({ orgCode: w.users.agent });
    });

    it('when a nested name is listed with its path, then it is expanded; alone it is ignored', async () => {
      const withPath = await get(`UniqueId=${ids.get('c')}&Include=uploadedByUser,parent`);
      expect((withPath.body as ExportedLead[])[0]!.uploadedByUser!.parent).toMatchObject({ orgCode: w.units.sales });
      const alone = await get(`UniqueId=${ids.get('c')}&Include=parent,unknownThing`);
      expect((alone.body as ExportedLead[])[0]!.uploadedByUser).toEqual({ orgCode: w.users.other });
    });

    it('when an included reference is not set, then it is null', async () => {
      const res = await get(`UniqueId=${ids.get('a')}&Include=firstProcessedByUser`);
      expect((res.body as ExportedLead[])[0]!.firstProcessedByUser).toBeNull();
    });
  });
});

describe('GET /api/leads/{UniqueId}', () => {
  const { t, w } = useTestWorld();
  const b2bLead = uniq('lead-');
  const retailLead = uniq('lead-');

  beforeAll(async () => {
    const lead = (uniqueId: string, campaign: string) => ({
      type: 'lead',
      uniqueId,
      campaign,
      data: { Name: 'One', Telefon: '12345678', Secret: 's', Revenue: '7' },
    });
    await t.load(lead(b2bLead, w.campaigns.b2b), lead(retailLead, w.campaigns.retail));
  });

  const get = (id: string, auth = w.accounts.full.auth, query = '') =>
    request(t.app)
      .get(`/api/leads/${encodeURIComponent(id)}${query}`)
      .set('Authorization', auth);

  it('when the lead exists, then it comes in the export shape', async () => {
    const res = await get(b2bLead);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uniqueId: b2bLead, status: 'New', closure: 'NotSet', data: { Name: 'One', Secret: 's' } });
  });

  it('when the account has Partner access, then Full fields are hidden', async () => {
    const res = await get(b2bLead, w.accounts.b2b.auth);
    expect((res.body as ExportedLead).data).toEqual({ Name: 'One', Phone: '12345678', Revenue: '7' });
  });

  it('when Include=campaign is given, then the campaign is a full object', async () => {
    const res = await get(b2bLead, w.accounts.full.auth, '?include=campaign');
    expect((res.body as ExportedLead).campaign).toMatchObject({ code: w.campaigns.b2b, name: 'B2B campaign' });
  });

  it("when the lead is outside the account's projects, then 404", async () => {
    const res = await get(retailLead, w.accounts.b2b.auth);
    expect(res.status).toBe(404);
    expect((res.body as { code: string }).code).toBe('not_found');
  });

  it('when the lead does not exist, then 404', async () => {
    const res = await get(`missing-${w.id}`);
    expect(res.status).toBe(404);
  });

  it('when the client asks for HTML, then a page comes', async () => {
    const res = await get(b2bLead).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});
