import iconv from 'iconv-lite';
import request from 'supertest';
import type { ProblemFieldError } from '../../src/http/problem';
import { useTestWorld } from '../harness/useTestWorld';

interface Problem {
  code: string;
  detail: string;
  errors: ProblemFieldError[];
}

/**
 * Hostile input is a 4xx, never a 5xx (docs/decisions.md, Wire conventions): values that would
 * reach a header or Postgres are checked to their real alphabet, credentials holding NUL are a
 * 401, bodies are walked without recursion, integers are decimal, a calendar event may only
 * point at a lead the account can see, and pages carry security headers.
 */
describe('input hardening', () => {
  const { t, w } = useTestWorld();
  const calendar = () => `harden-cal-${w.id}`;
  const ownLead = () => `harden-b2b-${w.id}`;
  const foreignLead = () => `harden-ret-${w.id}`;
  const window = () => `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT1H`;
  /** The Name stored for the lead an import answered. */
  const storedName = async (res: request.Response) => {
    const stored = await t
      .db('leads')
      .where({ unique_id: (res.body as { uniqueId: string }).uniqueId })
      .first<{ data: { Name: string } }>('data');
    return stored.data.Name;
  };
  /** A bulk import of NDJSON rows into the B2B campaign: its answer, one result per row. */
  const bulkRows = async (rows: string) => {
    const res = await request(t.app)
      .post(`/api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)}`)
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/x-ndjson')
      .send(rows);
    expect(res.status).toBe(200);
    return JSON.parse(res.text) as { row: number; success: boolean; errors?: { field: string; message: string }[] }[];
  };

  beforeAll(async () => {
    await t.load(
      { type: 'calendar', code: calendar(), project: w.projects.b2b },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: ownLead(), data: { name: 'Own', telefon: '+45 12 34 56 78' } },
      { type: 'lead', campaign: w.campaigns.retail, uniqueId: foreignLead(), data: { Name: 'Foreign', Phone: '12345678' } },
    );
  });

  describe('Encoding', () => {
    it.each([
      ['a quote after a known name', 'utf-8"'],
      ['CR LF and a header', 'utf-8\r\nX-Evil: 1'],
      ['a character above U+00FF', 'utf-8€'],
      ['a character of Latin-1', 'utf-8ÿ'],
      ['a space inside', 'utf 8'],
    ])('when it holds %s, then the CSV export is a 400 naming Encoding', async (_name, value) => {
      const res = await request(t.app)
        .get(`/api/calls/csv?${window()}&Encoding=${encodeURIComponent(value)}`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.parameter).toBe('Encoding');
      expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
    });

    it('when it is a known name, then the export answers in it', async () => {
      const res = await request(t.app).get(`/api/calls/csv?${window()}&Encoding=windows-1252`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=windows-1252');
    });
  });

  describe('CsvFieldSeparator and Encoding of every CSV export', () => {
    const exports: [string, () => string, Record<string, string>][] = [
      ['/api/calls/csv', window, {}],
      ['/api/rawleads/csv', () => `Campaigns=${encodeURIComponent(w.campaigns.b2b)}`, {}],
      ['/api/leads/csv', () => 'searchName=none&modifiedFrom=2026-01-01', {}],
      ['/api/myaccount/requests', () => 'FromTime=2026-05-06T08:00:00Z&TimeSpan=PT1H', { Accept: 'text/csv' }],
    ];
    it.each(exports)(
      'when %s has a separator the Encoding cannot write (U+FFFD included), or `?` in an Encoding that writes `?` for what it lacks, then it is a 400 naming the separator',
      async (path, query, headers) => {
        for (const [separator, encoding] of [
          ['😀', 'windows-1252'],
          ['?', 'windows-1252'],
          ['?', 'ascii'],
          // What windows-1252 writes as `?` too, though iconv-lite alone would write it as a byte.
          ['\uFFFD', 'windows-1252'],
        ]) {
          const res = await request(t.app)
            .get(`${path}?${query()}&CsvFieldSeparator=${encodeURIComponent(separator!)}&Encoding=${encoding!}`)
            .set(headers)
            .set('Authorization', w.accounts.full.auth);
          expect(res.status).toBe(400);
          expect((res.body as Problem).errors.map((e) => e.parameter)).toContain('CsvFieldSeparator');
        }
      },
    );

    it('when `?` is the separator of an Encoding that writes every character, then the export answers', async () => {
      for (const encoding of ['utf-8', 'utf-16le']) {
        const res = await request(t.app)
          .get(`/api/calls/csv?${window()}&CsvFieldSeparator=%3F&Encoding=${encoding}`)
          .set('Authorization', w.accounts.full.auth);
        expect(res.status).toBe(200);
      }
    });
  });

  describe('credentials', () => {
    // The pairs are built inside the test: the table is read when the file is collected, before
    // the world exists. The password case uses a real account with its real password and a NUL
    // after it, so a check that cut the password at the NUL would let it in.
    it.each([
      ['a NUL in the username', () => 'ad\u0000min:x'],
      ['a NUL in the password', () => `${w.accounts.full.username}:${w.accounts.full.password}\u0000`],
      ['a NUL only', () => '\u0000:\u0000'],
    ])('when Basic credentials hold %s, then every endpoint answers 401', async (_name, pair) => {
      const auth = 'Basic ' + Buffer.from(pair(), 'utf8').toString('base64');
      for (const path of ['/api/myaccount', `/api/calls?${window()}`, '/api/campaigns']) {
        const res = await request(t.app).get(path).set('Authorization', auth);
        expect({ path, status: res.status }).toEqual({ path, status: 401 });
        expect(res.headers['www-authenticate']).toMatch(/^Basic /);
      }
    });

    it('when the account of the NUL case sends its password without the NUL, then it is served', async () => {
      const auth = 'Basic ' + Buffer.from(`${w.accounts.full.username}:${w.accounts.full.password}`, 'utf8').toString('base64');
      expect((await request(t.app).get('/api/myaccount').set('Authorization', auth)).status).toBe(200);
    });
  });

  describe('JSON bodies', () => {
    const importLead = (body: string) =>
      request(t.app).post('/api/leads').set('Authorization', w.accounts.full.auth).set('Content-Type', 'application/json').send(body);

    it('when a body nests ten thousand levels deep, then it is a 400 and the server keeps answering', async () => {
      const deep = '['.repeat(10_000) + ']'.repeat(10_000);
      const res = await importLead(`{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":${deep}}}`);
      expect(res.status).toBe(400);
      expect((res.body as Problem).code).toBe('invalid_body');
      expect((res.body as Problem).errors[0]!.message).toMatch(/nested deeper than \d+ levels/);
      expect((await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth)).status).toBe(200);
    });

    it('when a body nests just within the limit, then depth is not what is refused', async () => {
      const res = await importLead(`{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":${'['.repeat(5)}${']'.repeat(5)}}}`);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.message).not.toMatch(/nested deeper/);
    });

    it.each([
      ['a lone high surrogate', '"\\ud800"'],
      ['a lone low surrogate', '"x\\udc00y"'],
      ['a NUL', '"a\\u0000b"'],
    ])('when lead data holds %s, then it is a 400 naming the field and nothing is stored', async (_name, json) => {
      const campaignLeads = async () =>
        Number(
          (await t
            .db('leads')
            .join('campaigns', 'campaigns.id', 'leads.campaign_id')
            .where('campaigns.code', w.campaigns.b2b)
            .count({ n: '*' })
            .first())!.n,
        );
      const before = await campaignLeads();
      const res = await importLead(
        `{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":${json},"telefon":"+45 12 34 56 78"}}`,
      );
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.field).toBe('Data.name');
      expect(await campaignLeads()).toBe(before);
    });

    it('when a body said to be UTF-8 holds bytes that are not UTF-8, then it is a 400 and nothing is stored; the same text in UTF-16 is read', async () => {
      const name = `bytes-${w.id}`;
      const stored = async () =>
        Number(
          (await t
            .db('leads')
            .whereRaw("data->>'Name' like ?", [`${name}%`])
            .count({ n: '*' })
            .first())!.n,
        );
      const body = (value: string) =>
        `{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":"${value}","telefon":"+45 12 34 56 78"}}`;
      // The bytes as they are: superagent would write a Buffer in a JSON request as JSON.
      const asBytes = (bytes: unknown) => bytes as string;
      const broken = Buffer.concat([
        Buffer.from(body(`${name} a`)).subarray(0, -40),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(body('').slice(-40)),
      ]);
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json; charset=utf-8')
        .serialize(asBytes)
        .send(broken);
      expect(res.status).toBe(400);
      expect((res.body as Problem).detail).toMatch(/not valid UTF-8/);
      expect(await stored()).toBe(0);
      const utf16 = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json; charset=utf-16le')
        .serialize(asBytes)
        .send(Buffer.from(body(`${name} ø`), 'utf16le'));
      expect(utf16.status).toBe(200);
      expect(await stored()).toBe(1);
    });

    it.each([
      ['application/json', 'windows-1252', 'Windows PowerShell 5.1: a string body as ISO-8859-1'],
      ['none', 'windows-1252', 'a client that sends no type'],
      ['text/plain', 'windows-1252', 'a text type'],
      ['application/json', 'utf-16le with BOM', 'a file saved as Unicode'],
      ['application/json', 'utf-8 with BOM', 'a file saved with a BOM'],
    ])('when a body names no charset (Content-Type: %s) and comes as %s (%s), then it is read as such', async (type, encoding) => {
      const name = `undeclared-${w.id} Ærø ${encoding}`;
      const body = `{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":${JSON.stringify(name)},"telefon":"+45 12 34 56 78"}}`;
      const bytes =
        encoding === 'utf-16le with BOM'
          ? Buffer.concat([Buffer.of(0xff, 0xfe), iconv.encode(body, 'utf16le')])
          : encoding === 'utf-8 with BOM'
            ? Buffer.concat([Buffer.of(0xef, 0xbb, 0xbf), Buffer.from(body)])
            : iconv.encode(body, encoding);
      const req = request(t.app).post('/api/leads').set('Authorization', w.accounts.full.auth);
      if (type !== 'none') req.set('Content-Type', type);
      const res = await req.serialize((b: unknown) => b as string).send(bytes);
      expect(res.status).toBe(200);
      expect(await storedName(res)).toBe(name);
    });

    it.each([
      ['windows-1252', 'windows-1252'],
      ['ISO-8859-1', 'latin1'],
      ['UTF8', 'utf8'],
    ])('when a body names its charset as %s, then it is decoded from it', async (charset, encoding) => {
      const name = `charset-${charset}-${w.id} Ærø`;
      const body = `{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":${JSON.stringify(name)},"telefon":"+45 12 34 56 78"}}`;
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', `application/json; charset=${charset}`)
        .serialize((bytes: unknown) => bytes as string)
        .send(iconv.encode(body, encoding));
      expect(res.status).toBe(200);
      expect(await storedName(res)).toBe(name);
    });

    it('when a body names a charset no encoder knows, or is not JSON in a named one, then 415 or 400', async () => {
      const send = (charset: string, body: string) =>
        request(t.app)
          .post('/api/leads')
          .set('Authorization', w.accounts.full.auth)
          .set('Content-Type', `application/json; charset=${charset}`)
          .send(body);
      expect((await send('no-such-charset', '{}')).status).toBe(415);
      const notJson = await send('windows-1252', '{"CampaignCode":');
      expect(notJson.status).toBe(400);
      expect((notJson.body as Problem).code).toBe('invalid_body');
    });

    it('when a surrogate pair (an emoji) is sent, then it is stored as text', async () => {
      const res = await importLead(
        `{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"name":"\\ud83d\\ude00 Ann","telefon":"+45 12 34 56 78"}}`,
      );
      expect(res.status).toBe(200);
      expect((res.body as { success: boolean }).success).toBe(true);
    });

    it('when a bulk import row holds a lone surrogate, then that row fails and the others are stored', async () => {
      const rows = [
        `{"Data":{"name":"fine 1","telefon":"+45 12 34 56 78"}}`,
        `{"Data":{"name":"bad \\ud800","telefon":"+45 12 34 56 78"}}`,
        `{"Data":{"name":"fine 2","telefon":"+45 12 34 56 78"}}`,
      ].join('\n');
      const results = await bulkRows(rows);
      expect(results.map((r) => r.success)).toEqual([true, false, true]);
      expect(results[1]!.errors![0]!.message).toMatch(/lone surrogate/);
    });
  });

  describe('a `__proto__` key', () => {
    // JSON.parse keeps it as an own key, but every object it is copied into drops it silently:
    // the import answered success as if the value were stored.
    it('when a lead import names `__proto__` in Data, then it is a 400 naming it', async () => {
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send(`{"CampaignCode":${JSON.stringify(w.campaigns.b2b)},"Data":{"__proto__":"x","name":"Proto","telefon":"+45 12 34 56 78"}}`);
      expect(res.status).toBe(400);
      expect((res.body as Problem).code).toBe('invalid_body');
      expect((res.body as Problem).errors).toEqual([{ field: 'Data.__proto__', message: 'is not accepted as a property name' }]);
    });

    it('when a calendar event body has `__proto__`, then it is a 400 naming it', async () => {
      const res = await request(t.app)
        .post('/api/calendars/events')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send(
          `{"__proto__":{"title":"x"},"calendarCode":${JSON.stringify(calendar())},"title":"t","notes":"","start":"2026-12-01T10:00:00","end":"2026-12-01T11:00:00","source":"","externalId":""}`,
        );
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.field).toBe('__proto__');
    });

    it('when a bulk import row names `__proto__`, then that row fails naming it and the others are stored', async () => {
      const rows = [
        `{"name":"fine 1","telefon":"+45 12 34 56 78"}`,
        `{"__proto__":"x","name":"proto","telefon":"+45 12 34 56 78"}`,
        `{"Data":{"__proto__":"x","name":"proto","telefon":"+45 12 34 56 78"}}`,
      ].join('\n');
      const results = await bulkRows(rows);
      expect(results.map((r) => r.success)).toEqual([true, false, false]);
      expect(results[1]!.errors).toEqual([{ field: '__proto__', message: 'is not accepted as a property name' }]);
      expect(results[2]!.errors).toEqual([{ field: 'Data.__proto__', message: 'is not accepted as a property name' }]);
    });
  });

  describe('integer parameters', () => {
    it.each(['0x10', '1e3', '0b1', '16.0', '+16', '1 6', '-1', '0'])('when Limit=%j, then it is a 400 naming Limit', async (value) => {
      const res = await request(t.app)
        .get(`/api/calls?${window()}&Limit=${encodeURIComponent(value)}`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.parameter).toBe('Limit');
    });

    it.each(['16', ' 16 ', '0016', '1000000000000000', String(Number.MAX_SAFE_INTEGER)])(
      'when Limit=%j (decimal digits up to the documented maximum), then it applies',
      async (value) => {
        const res = await request(t.app)
          .get(`/api/calls?${window()}&Limit=${encodeURIComponent(value)}`)
          .set('Authorization', w.accounts.full.auth);
        expect(res.status).toBe(200);
      },
    );

    it('when StartTime and TimeSpan have spaces around them, then they are read as without', async () => {
      const spaced = `OrgCode=${encodeURIComponent(w.units.root)}&StartTime=%202026-05-06T08:00:00Z%20&TimeSpan=%20PT1H%20`;
      const res = await request(t.app).get(`/api/calls?${spaced}`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
    });

    it('when Limit is above the maximum the document gives, then the 400 says that maximum', async () => {
      const res = await request(t.app).get(`/api/calls?${window()}&Limit=9007199254740992`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors).toEqual([{ parameter: 'Limit', message: `must be at most ${Number.MAX_SAFE_INTEGER}` }]);
    });

    it('when a query value is percent-encoded bytes that are not UTF-8 (a surrogate encoded), then it is a 4xx', async () => {
      const res = await request(t.app)
        .get(`/api/calls?OrgCode=%ED%A0%80&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT1H`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    });
  });

  describe('calendar event references', () => {
    const body = (leadUniqueId: string) => ({
      calendarCode: calendar(),
      leadUniqueId,
      title: 'Call back',
      notes: '',
      start: '2031-02-03T10:00:00+01:00',
      end: '2031-02-03T10:30:00+01:00',
      source: 'crm',
      externalId: 'x1',
    });
    const create = (leadUniqueId: string, auth = w.accounts.b2b.auth) =>
      request(t.app).post('/api/calendars/events').set('Authorization', auth).send(body(leadUniqueId));

    it('when the lead is one the account sees, then the event is created', async () => {
      expect((await create(ownLead())).status).toBe(200);
    });

    it.each([
      ['a lead of a project the account cannot see', () => foreignLead()],
      ['a lead that does not exist', () => `nope-${w.id}`],
    ])('when the event points at %s, then it is a 400 naming leadUniqueId and nothing is stored', async (_name, lead) => {
      const before = await t.db('calendar_events').where({ lead_unique_id: lead() }).count({ n: '*' }).first();
      const res = await create(lead());
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.field).toBe('leadUniqueId');
      expect(await t.db('calendar_events').where({ lead_unique_id: lead() }).count({ n: '*' }).first()).toEqual(before);
    });

    it('when an update points an event at a lead of another project, then it is a 400 and the event keeps its lead', async () => {
      const created = await create(ownLead());
      const id = (created.body as { uniqueId: string }).uniqueId;
      const res = await request(t.app)
        .put(`/api/calendars/events/${id}`)
        .set('Authorization', w.accounts.b2b.auth)
        .send({ ...body(foreignLead()), uniqueId: id });
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors[0]!.field).toBe('leadUniqueId');
      expect(
        (await t.db<{ unique_id: string; lead_unique_id: string }>('calendar_events').where({ unique_id: id }).first())!.lead_unique_id,
      ).toBe(ownLead());
    });
  });

  describe('security headers', () => {
    it('when a browser asks for an HTML page, then it carries a CSP that forbids framing, and nosniff', async () => {
      const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).set('Accept', 'text/html');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
      expect(res.headers['content-security-policy']).toMatch(/default-src 'self'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });

    it('when the docs page is read, then it carries the same policy', async () => {
      const res = await request(t.app).get('/api/docs');
      expect(res.status).toBe(200);
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    });

    it('when JSON and CSV are read, then they are unchanged apart from the headers', async () => {
      const json = await request(t.app).get(`/api/calls?${window()}`).set('Authorization', w.accounts.full.auth);
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Array.isArray(json.body)).toBe(true);
      expect(json.headers['strict-transport-security']).toBeUndefined();
    });
  });
});
