import request from 'supertest';
import { keyFieldsCampaign } from '../harness/world';
import iconv from 'iconv-lite';
import type { z } from 'zod';
import type { ProblemFieldError } from '../../src/http/problem';
import type { leadOut } from '../../src/http/schemas/leads';
import { useTestWorld } from '../harness/useTestWorld';

type Lead = z.infer<typeof leadOut>;

interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

/** Collects a response body as raw bytes (supertest would decode text). */
function binary(res: request.Response, callback: (err: Error | null, body: Buffer) => void): void {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => callback(null, Buffer.concat(chunks)));
}

describe('saved searches', () => {
  const { t, w } = useTestWorld();
  const lead = (suffix: string) => `${suffixBase}-${suffix}`;
  let suffixBase: string;
  /** A second campaign in the B2B project, so the project override has something to add. */
  let b2bSecond: string;
  const names = { open: '', closedSuccess: '', everything: '', otherUsers: '', b2bOnly: '', slashed: '' };

  beforeAll(async () => {
    suffixBase = w.id;
    b2bSecond = `B2B2-${w.id}`;
    for (const k of Object.keys(names) as (keyof typeof names)[]) names[k] = `${k} ${w.id}`;
    names.slashed = `Kunder A/S ${w.id} ø`;
    const data = (name: string) => ({ Name: name, Telefon: '+45 11 22 33 44', Revenue: '5', Secret: 'hush' });
    await t.load(
      {
        type: 'campaign',
        code: b2bSecond,
        name: 'B2B second',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
      },
      {
        type: 'lead',
        uniqueId: lead('new'),
        campaign: w.campaigns.b2b,
        status: 'New',
        uploadTime: '2026-04-30T08:00:00',
        lastModifiedTime: '2026-05-01T10:00:00',
        data: data('Åse Ærø; "the first"'),
      },
      {
        type: 'lead',
        uniqueId: lead('won'),
        campaign: w.campaigns.b2b,
        status: 'UserProcessed',
        closure: 'Success',
        lastModifiedTime: '2026-05-02T10:00:00',
        data: data('Won'),
      },
      {
        type: 'lead',
        uniqueId: lead('old'),
        campaign: w.campaigns.b2b,
        status: 'New',
        lastModifiedTime: '2026-04-01T10:00:00',
        data: data('Old'),
      },
      {
        type: 'lead',
        uniqueId: lead('second'),
        campaign: b2bSecond,
        status: 'RedialAutomatic',
        lastModifiedTime: '2026-05-03T10:00:00',
        data: data('Second'),
      },
      {
        type: 'lead',
        uniqueId: lead('retail'),
        campaign: w.campaigns.retail,
        status: 'New',
        lastModifiedTime: '2026-05-04T10:00:00',
        data: data('Retail'),
      },
      {
        type: 'savedSearch',
        user: w.users.agent,
        name: names.open,
        campaigns: [w.campaigns.b2b, w.campaigns.retail],
        allOpenStatuses: true,
      },
      {
        type: 'savedSearch',
        user: w.users.agent,
        name: names.closedSuccess,
        campaigns: [w.campaigns.b2b],
        allClosedStatuses: true,
        leadClosures: ['Success'],
      },
      { type: 'savedSearch', user: w.users.agent, name: names.everything, projects: [`*-${w.id}*`] },
      { type: 'savedSearch', user: w.users.agent, name: names.b2bOnly, projects: [w.projects.b2b], statuses: ['New', 'RedialAutomatic'] },
      { type: 'savedSearch', user: w.users.other, name: names.otherUsers, campaigns: [w.campaigns.b2b] },
      { type: 'savedSearch', user: w.users.agent, name: names.slashed, campaigns: [w.campaigns.b2b] },
    );
  });

  const ids = (body: { uniqueId: string }[]) => body.map((l) => l.uniqueId);

  describe('GET /api/leads', () => {
    const run = (query: Record<string, string>, auth = w.accounts.full.auth) =>
      request(t.app).get('/api/leads').query(query).set('Authorization', auth);

    it("when the linked user's search runs, then its campaigns and status set apply from modifiedFrom", async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-05-01' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(ids(res.body as Lead[])).toEqual([lead('new'), lead('retail')]);
      expect((res.body as Lead[])[0]).toMatchObject({ status: 'New', data: { Name: 'Åse Ærø; "the first"', Secret: 'hush' } });
    });

    it('when modifiedFrom is a DateTime, then it is inclusive to the instant', async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-05-01T10:00:00.001' });
      expect(ids(res.body as Lead[])).toEqual([lead('retail')]);
    });

    it('when modifiedTo is given, then leads modified at or after it are left out (exclusive, platform time)', async () => {
      const res = await run({ searchName: names.everything, modifiedFrom: '2026-05-01', modifiedTo: '2026-05-03' });
      expect(res.status).toBe(200);
      expect(ids(res.body as Lead[])).toEqual([lead('new'), lead('won')]);
      const instant = await run({ searchName: names.everything, modifiedFrom: '2026-05-01', modifiedTo: '2026-05-02T10:00:00' });
      expect(ids(instant.body as Lead[])).toEqual([lead('new')]);
    });

    it('when a search has closed statuses and a closure, then both apply', async () => {
      const res = await run({ searchName: names.closedSuccess, modifiedFrom: '2026-01-01' });
      expect(ids(res.body as Lead[])).toEqual([lead('won')]);
    });

    it('when a search selects projects by pattern, then every campaign of them is searched', async () => {
      const res = await run({ searchName: names.everything, modifiedFrom: '2026-01-01' });
      expect(ids(res.body as Lead[])).toEqual([lead('old'), lead('new'), lead('won'), lead('second'), lead('retail')]);
    });

    it("when project is given, then it replaces the search's campaign selection by that project's campaigns", async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-01-01', project: w.projects.b2b });
      // The search named b2b and retail campaigns; the project brings both B2B campaigns instead.
      expect(ids(res.body as Lead[])).toEqual([lead('old'), lead('new'), lead('second')]);
    });

    it("when project is given, then the search's status filters still apply", async () => {
      const res = await run({ searchName: names.closedSuccess, modifiedFrom: '2026-01-01', project: w.projects.retail });
      expect(ids(res.body as Lead[])).toEqual([]);
    });

    it('when the account is limited to B2B, then a search over both projects shows only B2B leads', async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-01-01' }, w.accounts.b2b.auth);
      expect(ids(res.body as Lead[])).toEqual([lead('old'), lead('new')]);
      expect((res.body as Lead[])[0]!.data).not.toHaveProperty('Secret');
      expect((res.body as Lead[])[0]!.data).toHaveProperty('Revenue');
    });

    it('when a B2B-limited account overrides the project with Retail, then nothing comes', async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-01-01', project: w.projects.retail }, w.accounts.b2b.auth);
      expect(res.body).toEqual([]);
    });

    it('when the search belongs to another user, then 404', async () => {
      const res = await run({ searchName: names.otherUsers, modifiedFrom: '2026-01-01' });
      expect(res.status).toBe(404);
      expect((res.body as Problem).code).toBe('not_found');
    });

    it('when no search has that name, then 404', async () => {
      const res = await run({ searchName: `nothing ${w.id}`, modifiedFrom: '2026-01-01' });
      expect(res.status).toBe(404);
    });

    it('when the parameter names are in another casing, then they are recognised', async () => {
      const res = await run({ SearchName: names.open, ModifiedFrom: '2026-05-01' });
      expect(ids(res.body as Lead[])).toEqual([lead('new'), lead('retail')]);
    });

    it('when modifiedFrom is missing, then 400 naming it', async () => {
      const res = await run({ searchName: names.open });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'missing_parameter', errors: [{ parameter: 'modifiedFrom' }] });
    });

    it('when modifiedTo lies before modifiedFrom, then 400 naming modifiedTo, as JSON and as CSV', async () => {
      const res = await run({ searchName: names.everything, modifiedFrom: '2026-05-03', modifiedTo: '2026-05-01' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 'invalid_parameter',
        errors: [{ parameter: 'modifiedTo', message: 'must not be before modifiedFrom' }],
      });
      const csv = await request(t.app)
        .get('/api/leads/csv')
        .query({ searchName: names.everything, modifiedFrom: '2026-05-03', modifiedTo: '2026-05-01' })
        .set('Authorization', w.accounts.full.auth);
      expect(csv.status).toBe(400);
      expect((csv.body as Problem).errors[0]!.parameter).toBe('modifiedTo');
    });

    it('when searchName is missing, then 400 naming it', async () => {
      const res = await run({ modifiedFrom: '2026-01-01' });
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.parameter).toBe('searchName');
    });

    it('when the account lacks Leads: Get, then 403', async () => {
      const res = await run({ searchName: names.open, modifiedFrom: '2026-01-01' }, w.accounts.none.auth);
      expect(res.status).toBe(403);
    });

    it('when Include=campaign is given, then the campaign is expanded', async () => {
      const res = await run({ searchName: names.closedSuccess, modifiedFrom: '2026-01-01', Include: 'campaign' });
      expect((res.body as Lead[])[0]!.campaign).toMatchObject({ code: w.campaigns.b2b, name: 'B2B campaign', project: w.projects.b2b });
    });
  });

  describe('GET /api/leads/csv', () => {
    const csv = (query: Record<string, string>, auth = w.accounts.full.auth) =>
      request(t.app).get('/api/leads/csv').query(query).set('Authorization', auth).buffer(true).parse(binary);
    const LEAD_HEADER =
      'uniqueId;status;closure;priority;phoneNumber;externalKey;pool;campaignUniqueId;campaignCode;uploadTime;lastModifiedTime;firstProcessedTime;' +
      'ownerOrgUnitOrgCode;uploadedByUserOrgCode;lastModifiedByUserOrgCode;firstProcessedByUserOrgCode';

    it('when the search runs as CSV, then the lead columns come, then every visible data field in sort order', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2026-05-01' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="Leads-open .+-\d{14}\.csv"/);
      const lines = (res.body as Buffer).toString('utf8').split('\r\n');
      expect(lines[0]).toBe(`${LEAD_HEADER};Name;Phone;Email;Customer;Revenue;Secret`);
      expect(lines).toHaveLength(4); // header, two leads, and the empty string after the last CRLF
      const campaign = await t.db('campaigns').where({ code: w.campaigns.b2b }).first<{ unique_id: string }>('unique_id');
      const pool = await t
        .db('leads as l')
        .join('lead_pools as p', 'p.id', 'l.pool_id')
        .where('l.unique_id', lead('new'))
        .first<{ name: string }>('p.name');
      expect(lines[1]).toBe(
        `${lead('new')};New;NotSet;0;+45 11 22 33 44;;${pool.name};${campaign.unique_id};${w.campaigns.b2b};` +
          `2026-04-30T08:00:00.000+02:00;2026-05-01T10:00:00.000+02:00;;;;;;` +
          `"Åse Ærø; ""the first""";+45 11 22 33 44;;;5;hush`,
      );
      expect(lines[3]).toBe('');
    });

    it('when the search name holds a slash and æøå, then the attachment is Leads-{searchName}-{now}.csv with the slash made _', async () => {
      t.setNow(new Date('2026-05-06T08:00:00Z'));
      const res = await csv({ searchName: names.slashed, modifiedFrom: '2026-05-01' });
      expect(res.status).toBe(200);
      const safe = `Leads-Kunder A_S ${w.id} ø-20260506100000.csv`;
      const disposition = res.headers['content-disposition'] as string;
      expect(disposition).toContain(`filename="${safe.replace('ø', 'o')}"`);
      expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(safe)}`);
    });

    it('when the account has Partner access, then the Full field has no column', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2026-05-01' }, w.accounts.b2b.auth);
      const header = (res.body as Buffer).toString('utf8').split('\r\n')[0];
      expect(header).toBe(`${LEAD_HEADER};Name;Phone;Email;Customer;Revenue`);
    });

    it('when Encoding is windows-1252, then the bytes are windows-1252', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2026-05-01', Encoding: 'windows-1252' });
      expect(res.headers['content-type']).toBe('text/csv; charset=windows-1252');
      const body = res.body as Buffer;
      // Å = C5, s, e, space, Æ = C6, r, ø = F8
      expect(body.includes(Buffer.from([0x22, 0xc5, 0x73, 0x65, 0x20, 0xc6, 0x72, 0xf8]))).toBe(true);
      expect(body.includes(Buffer.from('Ærø', 'utf8'))).toBe(false);
      expect(iconv.decode(body, 'windows-1252')).toContain('"Åse Ærø; ""the first"""');
    });

    it('when CsvFieldSeparator is a comma, then fields are separated by commas and quoted where needed', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2026-05-01', CsvFieldSeparator: ',' });
      const lines = (res.body as Buffer).toString('utf8').split('\r\n');
      expect(lines[0]!.startsWith('uniqueId,status,closure,')).toBe(true);
      expect(lines[1]).toContain(',"Åse Ærø; ""the first""",');
    });

    it('when nothing matches, then the header row still comes', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2030-01-01' });
      expect((res.body as Buffer).toString('utf8')).toBe(`${LEAD_HEADER};Name;Phone;Email;Customer;Revenue;Secret\r\n`);
    });

    it('when modifiedTo is given, then the CSV ends there too', async () => {
      const res = await csv({ searchName: names.everything, modifiedFrom: '2026-04-01', modifiedTo: '2026-05-02' });
      const rows = (res.body as Buffer).toString('utf8').split('\r\n').slice(1, -1);
      expect(rows.map((l) => l.split(';')[0])).toEqual([lead('old'), lead('new')]);
    });

    it('when the project override is given, then it applies to the CSV too', async () => {
      const res = await csv({ searchName: names.open, modifiedFrom: '2026-01-01', project: w.projects.b2b });
      const lines = (res.body as Buffer)
        .toString('utf8')
        .split('\r\n')
        .filter((l) => l !== '');
      expect(lines.slice(1).map((l) => l.split(';')[0])).toEqual([lead('old'), lead('new'), lead('second')]);
    });

    it('when the search belongs to another user, then 404', async () => {
      const res = await request(t.app)
        .get('/api/leads/csv')
        .query({ searchName: names.otherUsers, modifiedFrom: '2026-01-01' })
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(404);
    });

    it('when the encoding is unknown, then 400 naming Encoding', async () => {
      const res = await request(t.app)
        .get('/api/leads/csv')
        .query({ searchName: names.open, modifiedFrom: '2026-01-01', Encoding: 'klingon-8' })
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.parameter).toBe('Encoding');
    });

    it('when the client accepts only JSON (its HTTP stack’s default), then the path’s CSV comes; only HTML is a 406', async () => {
      const asked = (accept: string) =>
        request(t.app)
          .get('/api/leads/csv')
          .query({ searchName: names.open, modifiedFrom: '2026-01-01' })
          .set('Authorization', w.accounts.full.auth)
          .set('Accept', accept);
      const res = await asked('application/json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/csv/);
      expect((await asked('text/html')).status).toBe(406);
    });
  });

  describe('phoneNumber and externalKey', () => {
    // The phone field is Full, the external-key field Partner: the Partner account sees the key only.
    const search = () => `keys ${w.id}`;
    const keysLead = () => lead('keys');
    beforeAll(async () => {
      const { code, records } = keyFieldsCampaign(w);
      await t.load(
        ...records,
        {
          type: 'lead',
          uniqueId: keysLead(),
          campaign: code,
          lastModifiedTime: '2026-05-05T10:00:00',
          data: { Name: 'n', Mobile: '+45 20 30 40 50', Ref: 'REF-0417' },
        },
        { type: 'savedSearch', user: w.users.agent, name: search(), campaigns: [code] },
      );
    });
    const query = () => ({ searchName: search(), modifiedFrom: '2026-05-01' });

    it('when the search runs as JSON, then phoneNumber and externalKey come only where the account sees their fields', async () => {
      const full = await request(t.app).get('/api/leads').query(query()).set('Authorization', w.accounts.full.auth);
      expect(full.body).toMatchObject([{ uniqueId: keysLead(), phoneNumber: '+45 20 30 40 50', externalKey: 'REF-0417' }]);
      const partner = await request(t.app).get('/api/leads').query(query()).set('Authorization', w.accounts.b2b.auth);
      const [seen] = partner.body as Lead[];
      expect(seen).not.toHaveProperty('phoneNumber');
      expect(seen).toMatchObject({ uniqueId: keysLead(), externalKey: 'REF-0417', data: { Name: 'n', Ref: 'REF-0417' } });
    });

    it('when the search runs as CSV, then a phone number or key the account may not see is an empty cell, as an absent one', async () => {
      const lines = async (auth: string) => {
        const res = await request(t.app).get('/api/leads/csv').query(query()).set('Authorization', auth).buffer(true).parse(binary);
        const [header, row] = (res.body as Buffer)
          .toString('utf8')
          .split('\r\n')
          .map((l) => l.split(';'));
        const cell = (name: string) => row![header!.indexOf(name)];
        return { id: cell('uniqueId'), phone: cell('phoneNumber'), key: cell('externalKey'), data: header!.slice(16) };
      };
      expect(await lines(w.accounts.full.auth)).toEqual({
        id: keysLead(),
        phone: '+45 20 30 40 50',
        key: 'REF-0417',
        data: ['Name', 'Mobile', 'Ref'],
      });
      expect(await lines(w.accounts.b2b.auth)).toEqual({ id: keysLead(), phone: '', key: 'REF-0417', data: ['Name', 'Ref'] });
    });
  });
});
