import request from 'supertest';
import iconv from 'iconv-lite';
import { useTestWorld } from '../harness/useTestWorld';

function binary(res: request.Response, callback: (err: Error | null, body: Buffer) => void): void {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => callback(null, Buffer.concat(chunks)));
}

describe('GET /api/rawleads', () => {
  const { t, w } = useTestWorld();
  const id = (s: string) => `${w.id}-raw-${s}`;

  beforeAll(async () => {
    await t.load(
      {
        type: 'lead',
        uniqueId: id('one'),
        campaign: w.campaigns.b2b,
        status: 'New',
        lastModifiedTime: '2026-06-01T10:00:00',
        // Keys in another order and case than the definition: the export follows the definition.
        data: { secret: 'hush', NAME: 'Ærø; "quoted"', Telefon: '+45 11 22 33 44', Revenue: '12', Customer: 'K1' },
      },
      {
        type: 'lead',
        uniqueId: id('two'),
        campaign: w.campaigns.b2b,
        status: 'UserProcessed',
        closure: 'Success',
        lastModifiedTime: '2026-06-02T10:00:00',
        data: { Name: 'Two\nlines', Telefon: '12345678' },
      },
      {
        type: 'lead',
        uniqueId: id('retail'),
        campaign: w.campaigns.retail,
        status: 'New',
        lastModifiedTime: '2026-06-01T12:00:00',
        data: { Name: 'Retail', Telefon: '87654321' },
      },
    );
  });

  const raw = (query: string, auth = w.accounts.full.auth) =>
    request(t.app).get(`/api/rawleads?${query}`).set('Authorization', auth).buffer(true).parse(binary);
  const both = () => `Campaigns=${encodeURIComponent(w.campaigns.b2b)},${encodeURIComponent(w.campaigns.retail)}`;
  const text = (res: request.Response) => (res.body as Buffer).toString('utf8');

  it('when leads are exported, then a header row comes first, then one row per data field in sort order', async () => {
    const res = await raw(both());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="?RawLeads-\d{14}\.csv"?$/);
    expect(text(res)).toBe(
      'UniqueLeadId;FieldName;FieldValue\r\n' +
        `${id('one')};Name;"Ærø; ""quoted"""\r\n` +
        `${id('one')};Phone;+45 11 22 33 44\r\n` +
        `${id('one')};Customer;K1\r\n` +
        `${id('one')};Revenue;12\r\n` +
        `${id('one')};Secret;hush\r\n` +
        `${id('retail')};Name;Retail\r\n` +
        `${id('retail')};Phone;87654321\r\n` +
        `${id('two')};Name;"Two\nlines"\r\n` +
        `${id('two')};Phone;12345678\r\n`,
    );
  });

  it('when Limit is given, then it caps the leads, each with all of its rows', async () => {
    const res = await raw(`${both()}&Limit=1`);
    expect(res.status).toBe(200);
    const rows = text(res).split('\r\n').slice(1, -1);
    expect(rows.map((l) => l.split(';')[0])).toEqual(Array(5).fill(id('one')));
  });

  it('when the export is asked for at /rawleads/csv, then it is the same export as /rawleads', async () => {
    const query = `${both()}&CsvFieldSeparator=,`;
    const [plain, csv] = [
      await raw(query),
      await request(t.app).get(`/api/rawleads/csv?${query}`).set('Authorization', w.accounts.full.auth).buffer(true).parse(binary),
    ];
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="?RawLeads-\d{14}\.csv"?$/);
    expect(text(csv)).toBe(text(plain));
    expect(text(csv)).toContain(`${id('two')},Phone,12345678\r\n`);
  });

  it('when the account has Partner access, then Full fields have no rows', async () => {
    const res = await raw(`Campaigns=${encodeURIComponent(w.campaigns.b2b)}`, w.accounts.b2b.auth);
    const fields = text(res)
      .split('\r\n')
      .slice(1, -1)
      .map((l) => l.split(';')[1]);
    expect(fields).toContain('Revenue');
    expect(fields).not.toContain('Secret');
  });

  it('when a B2B-limited account exports both campaigns, then no Retail lead appears', async () => {
    const res = await raw(both(), w.accounts.b2b.auth);
    expect(text(res)).not.toContain(id('retail'));
    expect(text(res)).toContain(id('one'));
  });

  it('when the simpleleads filters are given, then they apply', async () => {
    const closed = await raw(`${both()}&AllClosedStatuses=true&LeadClosures=Success`);
    expect(
      new Set(
        text(closed)
          .split('\r\n')
          .slice(1, -1)
          .map((l) => l.split(';')[0]),
      ),
    ).toEqual(new Set([id('two')]));
    const window = await raw(`${both()}&ModifiedFrom=2026-06-01T12:00:00&ModifiedTo=2026-06-02T10:00:00`);
    expect(
      new Set(
        text(window)
          .split('\r\n')
          .slice(1, -1)
          .map((l) => l.split(';')[0]),
      ),
    ).toEqual(new Set([id('retail')]));
    const byId = await raw(`UniqueId=${id('two')}`);
    expect(text(byId).split('\r\n')).toHaveLength(4);
  });

  it('when nothing matches, then only the header row comes', async () => {
    const res = await raw(`UniqueId=none-${w.id}`);
    expect(text(res)).toBe('UniqueLeadId;FieldName;FieldValue\r\n');
  });

  it('when Encoding is windows-1252 and the separator a pipe, then the bytes follow both', async () => {
    const res = await raw(`UniqueId=${id('one')}&Encoding=windows-1252&CsvFieldSeparator=%7C`);
    expect(res.headers['content-type']).toBe('text/csv; charset=windows-1252');
    const body = res.body as Buffer;
    expect(body.includes(Buffer.from([0x7c, 0x22, 0xc6, 0x72, 0xf8, 0x3b]))).toBe(true); // |"Ærø;
    expect(iconv.decode(body, 'windows-1252').split('\r\n')[1]).toBe(`${id('one')}|Name|"Ærø; ""quoted"""`);
  });

  it('when the account lacks Leads: Get, then 403', async () => {
    const res = await raw(both(), w.accounts.none.auth);
    expect(res.status).toBe(403);
  });

  it('when the client accepts only text/html, then 406', async () => {
    const res = await request(t.app).get(`/api/rawleads?${both()}`).set('Authorization', w.accounts.full.auth).set('Accept', 'text/html');
    expect(res.status).toBe(406);
  });

  it('when the client accepts JSON (its HTTP stack’s default), then the CSV comes, on both paths', async () => {
    for (const path of ['/api/rawleads', '/api/rawleads/csv']) {
      const res = await request(t.app)
        .get(`${path}?${both()}`)
        .set('Authorization', w.accounts.full.auth)
        .set('Accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/csv/);
    }
  });
});
