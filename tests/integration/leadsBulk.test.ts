import http from 'node:http';
import zlib from 'node:zlib';
import request from 'supertest';
import iconv from 'iconv-lite';
import type { ProblemFieldError } from '../../src/http/problem';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { bulkImportRequest } from '../harness/bulkRequest';
import { startHookReceiver } from '../harness/hookReceiver';
import { until, untilSettled, untilValue } from '../harness/until';

interface RowResult {
  row: number;
  success: boolean;
  uniqueId?: string;
  status?: string;
  errors?: { field: string; message: string }[];
}
interface StopElement {
  type: string;
  status: number;
  code: string;
  detail: string;
  rows: number;
}
interface Problem {
  code: string;
  errors: ProblemFieldError[];
}
interface StoredLead {
  unique_id: string;
  status: number;
  data: Record<string, string>;
  phone_number: string | null;
  external_key: string | null;
  pool: string;
}

describe('POST /api/leads/bulk', () => {
  // The hook test's receiver is local: hook workers of files running alongside share the queue.
  const { t, w } = useTestWorld({ BULK_BATCH_SIZE: '100', HOOKS_ALLOW_HTTP: 'true', HOOKS_ALLOWED_HOSTS: '127.0.0.1' });

  const bulk = (body: string | Buffer, contentType: string, query: Record<string, string> = {}, auth = w.accounts.full.auth) =>
    request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b, ...query })
      .set('Authorization', auth)
      .set('Content-Type', contentType)
      .send(body);

  /** The stored leads of these results, keyed by unique id. */
  async function stored(results: RowResult[]) {
    const ids = results.filter((r) => r.success).map((r) => r.uniqueId!);
    const rows = await t
      .db('leads as l')
      .join('lead_pools as p', 'p.id', 'l.pool_id')
      .whereIn('l.unique_id', ids)
      .select<StoredLead[]>('l.unique_id', 'l.status', 'l.data', 'l.phone_number', 'l.external_key', 'p.name as pool');
    return new Map(rows.map((r) => [r.unique_id, r]));
  }

  describe('JSON array', () => {
    it('when 1,000 rows have bad rows in the middle, then each row is answered in order, the good ones stored', async () => {
      const tag = uniq('K-');
      const bad = new Set([17, 250, 251, 600, 999]);
      const rows = Array.from({ length: 1000 }, (_, i) => {
        const n = i + 1;
        if (n === 17) return { Name: `Lead ${n}`, Telefon: 'not a phone', Customer: `${tag}-${n}` };
        if (n === 250) return { Telefon: '+45 12 34 56 78', Customer: `${tag}-${n}` };
        if (n === 251) return { Name: `Lead ${n}`, Telefon: '+45 12 34 56 78', Colour: 'blue', Customer: `${tag}-${n}` };
        if (n === 600) return { Name: 42, Telefon: '+45 12 34 56 78' };
        // null is an empty value, as .NET writes an unset string: absent, so the row is stored.
        if (n === 601) return { Name: `Lead ${n}`, Telefon: `+45 12 ${String(n).padStart(6, '0')}`, Customer: `${tag}-${n}`, Email: null };
        if (n === 999) return 'just a string';
        return { Name: `Lead ${n}`, Telefon: `+45 12 ${String(n).padStart(6, '0')}`, Customer: `${tag}-${n}` };
      });
      const res = await bulk(JSON.stringify(rows), 'application/json');
      expect(res.status).toBe(200);
      expect(res.type).toBe('application/json');
      const results = res.body as RowResult[];
      expect(results.map((r) => r.row)).toEqual(rows.map((_, i) => i + 1));
      for (const r of results) expect(r.success).toBe(!bad.has(r.row));
      expect(results[16]!.errors).toEqual([{ field: 'Telefon', message: 'must be a phone number' }]);
      expect(results[249]!.errors).toEqual([{ field: 'Name', message: 'is required' }]);
      expect(results[250]!.errors).toEqual([{ field: 'Colour', message: "is not a field of the campaign's lead definition" }]);
      expect(results[599]!.errors).toEqual([{ field: 'Name', message: 'must be a string or null' }]);
      expect(results[998]!.errors).toEqual([{ field: '(row)', message: 'must be a JSON object' }]);

      const leads = await stored(results);
      expect(leads.size).toBe(995);
      const r500 = results[499]!;
      expect(r500.status).toBe('New');
      expect(leads.get(r500.uniqueId!)).toMatchObject({
        status: 0,
        data: { Name: 'Lead 500', Phone: '+45 12 000500', Customer: `${tag}-500` },
        phone_number: '+45 12 000500',
        external_key: `${tag}-500`,
        pool: expect.stringMatching(/^\(auto\) \d{4}-\d{2}-\d{2}$/) as jest.AsymmetricMatcher,
      });
      // Input order is upload order: the unique ids of the results follow the rows.
      expect(results.filter((r) => r.success).every((r) => leads.get(r.uniqueId!)!.data.Name === `Lead ${r.row}`)).toBe(true);
    });

    it('when the array holds import bodies in any casing, then their data and pools are used', async () => {
      const pool = `Bulk pool ${w.id}`;
      const res = await bulk(
        JSON.stringify([
          { CampaignCode: w.campaigns.b2b, Data: { Name: 'A', Telefon: '+45 1234' } },
          { data: { name: 'B', telefon: '+45 1234' }, leadPool: pool },
          { DATA: { Name: 'C', Telefon: '+45 1234' }, Pool: pool },
          { CampaignCode: w.campaigns.retail, Data: { Name: 'D', Telefon: '+45 1234' } },
          { Data: { Name: 'E', Telefon: '+45 1234' }, Extra: 1 },
        ]),
        'application/json',
      );
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, true, true, false, false]);
      expect(results[3]!.errors![0]!.field).toBe('CampaignCode');
      expect(results[4]!.errors![0]!.field).toBe('Extra');
      const leads = await stored(results);
      expect(leads.get(results[0]!.uniqueId!)!.pool).toMatch(/^\(auto\) /);
      expect(leads.get(results[1]!.uniqueId!)!.pool).toBe(pool);
      expect(leads.get(results[2]!.uniqueId!)!.pool).toBe(pool);
    });

    it("when a row's pool name of 200 characters comes with spaces around it, then it is trimmed and taken; 201 characters fail the row", async () => {
      const name = `${w.id} row `.padEnd(200, 'p');
      const res = await bulk(
        JSON.stringify([
          { Data: { Name: 'A', Telefon: '+45 1234' }, LeadPool: `  ${name}  ` },
          { Data: { Name: 'B', Telefon: '+45 1234' }, LeadPool: `${name}q` },
        ]),
        'application/json',
      );
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, false]);
      expect(results[1]!.errors).toEqual([{ field: 'LeadPool', message: 'must be at most 200 characters' }]);
      expect((await stored(results)).get(results[0]!.uniqueId!)!.pool).toBe(name);
    });

    it('when a body starts with a UTF-8 byte order mark (as Windows editors save files), then every format reads it as without one', async () => {
      const row = { Name: 'Køge', Telefon: '+45 1234' };
      for (const [type, text] of [
        ['application/json', JSON.stringify([row])],
        ['application/x-ndjson', JSON.stringify(row) + '\n'],
        ['text/csv', 'Name;Telefon\r\nKøge;+45 1234\r\n'],
      ]) {
        // U+FEFF sent as UTF-8 is the bytes EF BB BF (a Buffer with a JSON type would be sent as its JSON form).
        const res = await bulk(`\ufeff${text}`, type!);
        expect([type, res.status]).toEqual([type, 200]);
        const results = res.body as RowResult[];
        expect(results).toEqual([expect.objectContaining({ row: 1, success: true })]);
        expect([...(await stored(results)).values()][0]!.data).toMatchObject({ Name: 'Køge' });
      }
    });

    it('when a body comes gzip, deflate or br compressed (Content-Encoding), then it is decoded and its rows stored', async () => {
      const csv = 'Name;Telefon\r\nKøge;+45 1234\r\n';
      const ndjson = JSON.stringify({ Name: 'Køge', Telefon: '+45 1234' }) + '\n';
      for (const [coding, type, body] of [
        ['gzip', 'text/csv', zlib.gzipSync(csv)],
        ['deflate', 'application/x-ndjson', zlib.deflateSync(ndjson)],
        ['br', 'text/csv', zlib.brotliCompressSync(csv)],
      ] as const) {
        const res = await bulk(body, type).set('Content-Encoding', coding);
        expect([coding, res.status]).toEqual([coding, 200]);
        const results = res.body as RowResult[];
        expect(results).toEqual([expect.objectContaining({ row: 1, success: true })]);
        expect([...(await stored(results)).values()][0]!.data).toMatchObject({ Name: 'Køge' });
      }
    });

    it('when the Content-Encoding is one the server cannot decode, then 415 naming it; when the bytes are not valid in it, then 400', async () => {
      const unknown = await bulk('Name;Telefon\r\nA;+45 1234\r\n', 'text/csv').set('Content-Encoding', 'compress');
      expect(unknown.status).toBe(415);
      expect((unknown.body as { code: string; detail: string }).detail).toContain('compress');
      const broken = await bulk(Buffer.from('Name;Telefon\r\nA;+45 1234\r\n'), 'text/csv').set('Content-Encoding', 'gzip');
      expect(broken.status).toBe(400);
      expect(broken.body).toMatchObject({ code: 'invalid_body', detail: expect.stringContaining('not valid gzip') as string });
    });

    it('when the request names a LeadPool, then rows without their own pool go into it', async () => {
      const pool = `Request pool ${w.id}`;
      const res = await bulk(JSON.stringify([{ Name: 'A', Telefon: '+45 1234' }]), 'application/json', { LeadPool: pool });
      const leads = await stored(res.body as RowResult[]);
      expect([...leads.values()][0]!.pool).toBe(pool);
    });

    it('when the LeadPool of the query is percent-escaped in Latin-1 (classic ASP, VB6), then the pool is named with æøå, as with UTF-8 escapes', async () => {
      const res = await request(t.app)
        .post('/api/leads/bulk')
        .query(`CampaignCode=${encodeURIComponent(w.campaigns.b2b)}&LeadPool=Pulje%20%E6%F8%E5+${w.id}`)
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify([{ Name: 'A', Telefon: '+45 1234' }]));
      expect(res.status).toBe(200);
      const utf8 = await bulk(JSON.stringify([{ Name: 'B', Telefon: '+45 1234' }]), 'application/json', { LeadPool: `Pulje æøå ${w.id}` });
      const pools = [...(await stored([...(res.body as RowResult[]), ...(utf8.body as RowResult[])])).values()].map((l) => l.pool);
      expect(pools).toEqual([`Pulje æøå ${w.id}`, `Pulje æøå ${w.id}`]);
    });

    it('when the JSON breaks mid-stream, then the rows before are stored, the bad row is named, and a final element says why', async () => {
      const good = Array.from({ length: 150 }, (_, i) => JSON.stringify({ Name: `Ok ${i + 1}`, Telefon: '+45 1234' }));
      const body = '[' + good.join(',') + ', {"Name" "broken"}, {"Name":"never","Telefon":"+45 1234"}]';
      const res = await bulk(body, 'application/json');
      expect(res.status).toBe(200);
      const elements = res.body as (RowResult | StopElement)[];
      expect(elements).toHaveLength(152);
      expect((elements.slice(0, 150) as RowResult[]).every((r) => r.success)).toBe(true);
      expect(elements[150]).toMatchObject({
        row: 151,
        success: false,
        errors: [{ field: '(row)', message: expect.stringContaining('not valid JSON') as jest.AsymmetricMatcher }],
      });
      expect(elements[151]).toMatchObject({ status: 400, code: 'invalid_body', rows: 151, type: '/api/problems/invalid_body' });
      expect((await stored(elements.slice(0, 150) as RowResult[])).size).toBe(150);
    });

    it('when the array is never closed, then the rows sent are stored and the answer ends with the reason', async () => {
      const res = await bulk('[{"Name":"A","Telefon":"+45 1234"},', 'application/json');
      expect(res.status).toBe(200);
      const elements = res.body as (RowResult | StopElement)[];
      expect(elements).toHaveLength(2);
      expect(elements[0]).toMatchObject({ row: 1, success: true });
      expect(elements[1]).toMatchObject({
        code: 'invalid_body',
        rows: 1,
        detail: expect.stringContaining('before the JSON array was closed') as jest.AsymmetricMatcher,
      });
    });

    it('when the body is not an array, or empty, then it is a 400 before any row', async () => {
      const obj = await bulk('{"Name":"A","Telefon":"+45 1234"}', 'application/json');
      expect(obj.status).toBe(400);
      expect(obj.type).toBe('application/problem+json');
      expect((obj.body as StopElement).detail).toMatch(/JSON array/);
      const empty = await bulk('', 'application/json');
      expect(empty.status).toBe(400);
      const none = await bulk('[]', 'application/json');
      expect(none.status).toBe(200);
      expect(none.body).toEqual([]);
    });

    it('when a hook listens for lead.created, then each stored lead has its event and each failed row none', async () => {
      const receiver = await startHookReceiver();
      try {
        const hook = await request(t.app)
          .post('/api/hooks')
          .set('Authorization', w.accounts.full.auth)
          .send({ name: `bulk ${w.id}`, url: `${receiver.url}/bulk-${w.id}`, events: ['lead.created'], campaignCode: w.campaigns.b2b });
        expect(hook.status).toBe(201);
        const rows = Array.from({ length: 150 }, (_, i) =>
          i % 100 === 7 ? { Name: 'no phone' } : { Name: `Hooked ${i + 1}`, Telefon: '+45 1234' },
        );
        const res = await bulk(JSON.stringify(rows), 'application/json');
        const results = res.body as RowResult[];
        const ok = results.filter((r) => r.success).map((r) => r.uniqueId!);
        expect(ok).toHaveLength(148);
        const hookId = (hook.body as { uniqueId: string }).uniqueId;
        const events = await t
          .db('hook_events as e')
          .join('hook_deliveries as d', 'd.event_id', 'e.id')
          .join('hooks as h', 'h.id', 'd.hook_id')
          .where({ 'e.type': 'lead.created', 'h.unique_id': hookId })
          .pluck<string[]>('e.resource_id');
        expect([...events].sort()).toEqual([...ok].sort());
        // Its deliveries go with it.
        await request(t.app).delete(`/api/hooks/${hookId}`).set('Authorization', w.accounts.full.auth).expect(204);
      } finally {
        await receiver.close();
      }
    });

    it('when a value holds a NUL character, then that row fails and the others are stored', async () => {
      const res = await bulk(
        JSON.stringify([
          { Name: 'A\u0000', Telefon: '+45 1234' },
          { Name: 'B', Telefon: '+45 1234' },
        ]),
        'application/json',
      );
      expect((res.body as RowResult[]).map((r) => r.success)).toEqual([false, true]);
    });
  });

  describe('NDJSON', () => {
    it('when lines are data objects and import bodies with blank and bad lines, then each non-blank line is a row', async () => {
      const body = [
        JSON.stringify({ Name: 'A', Telefon: '+45 1234' }),
        '',
        JSON.stringify({ Data: { Name: 'B', Telefon: '+45 1234' } }),
        '{not json',
        '   ',
        JSON.stringify({ Name: 'C', Telefon: '+45 1234' }) + '\r',
        JSON.stringify({ Name: 'D', Telefon: '+45 1234' }),
      ].join('\n');
      const res = await bulk(body, 'application/x-ndjson');
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => [r.row, r.success])).toEqual([
        [1, true],
        [2, true],
        [3, false],
        [4, true],
        [5, true],
      ]);
      expect(results[2]!.errors![0]).toMatchObject({
        field: '(row)',
        message: expect.stringContaining('not valid JSON') as jest.AsymmetricMatcher,
      });
      const leads = await stored(results);
      expect([...leads.values()].map((l) => l.data.Name).sort()).toEqual(['A', 'B', 'C', 'D']);
    });
  });

  describe('CSV', () => {
    it('when the CSV is windows-1252 with æøå and a tab separator, then the text arrives intact', async () => {
      const csv = 'Name\tTelefon\tEmail\r\nÆble Øster Ås\t+45 12 34 56 78\tæøå@example.com\r\nBent Ågård\t+45 87 65 43 21\t\r\n';
      const res = await bulk(iconv.encode(csv, 'windows-1252'), 'text/csv', { Encoding: 'windows-1252', CsvFieldSeparator: '\t' });
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, true]);
      const leads = await stored(results);
      expect(leads.get(results[0]!.uniqueId!)!.data).toEqual({ Name: 'Æble Øster Ås', Phone: '+45 12 34 56 78', Email: 'æøå@example.com' });
      expect(leads.get(results[1]!.uniqueId!)!.data).toEqual({ Name: 'Bent Ågård', Phone: '+45 87 65 43 21' });
    });

    it('when the charset comes with Content-Type, then it decodes the body', async () => {
      const csv = 'Name;Telefon\nÅse;+45 1234\n';
      const res = await bulk(iconv.encode(csv, 'iso-8859-1'), 'text/csv; charset=iso-8859-1');
      const leads = await stored(res.body as RowResult[]);
      expect([...leads.values()][0]!.data.Name).toBe('Åse');
    });

    it('when windows-1252 bytes are sent as utf-8, then those rows fail naming the encoding', async () => {
      const csv = 'Name;Telefon\nÅse;+45 1234\nBo;+45 1234\n';
      const res = await bulk(iconv.encode(csv, 'windows-1252'), 'text/csv');
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([false, true]);
      expect(results[0]!.errors![0]!.message).toMatch(/Encoding/);
    });

    it.each([
      ['a CSV body', 'text/csv', (v: string) => `Name;Telefon\n${v};+45 1234\n`],
      ['an NDJSON body', 'application/x-ndjson', (v: string) => `${JSON.stringify({ Name: v, Telefon: '+45 1234' })}\n`],
      ['a JSON array', 'application/json', (v: string) => JSON.stringify([{ Name: v, Telefon: '+45 1234' }])],
    ])('when a row of %s holds a real U+FFFD (text a broken system passed on), then it is stored as sent', async (_format, type, body) => {
      const name = `rep\uFFFDlaced ${uniq()}`;
      const res = await bulk(body(name), type);
      const [result] = res.body as RowResult[];
      expect(result!.success).toBe(true);
      expect((await t.db('leads').where({ unique_id: result!.uniqueId }).first<{ data: { Name: string } }>('data')).data.Name).toBe(name);
    });

    it('when a row has the wrong number of values or quoting breaks, then the rows before stay and the rest is not read', async () => {
      const csv = 'Name;Telefon\n"A; quoted";+45 1234\nB\n\nC;+45 1234\n"D"x;+45 1234\nE;+45 1234\n';
      const res = await bulk(csv, 'text/csv');
      expect(res.status).toBe(200);
      const elements = res.body as (RowResult | StopElement)[];
      expect(elements.slice(0, 4)).toEqual([
        { row: 1, success: true, uniqueId: expect.any(String) as jest.AsymmetricMatcher, status: 'New' },
        { row: 2, success: false, errors: [{ field: '(row)', message: 'has 1 value where the header row has 2 columns' }] },
        { row: 3, success: true, uniqueId: expect.any(String) as jest.AsymmetricMatcher, status: 'New' },
        {
          row: 4,
          success: false,
          errors: [{ field: '(row)', message: expect.stringContaining('not valid CSV') as jest.AsymmetricMatcher }],
        },
      ]);
      expect(elements[4]).toMatchObject({ code: 'invalid_body', rows: 4 });
      expect(elements).toHaveLength(5);
      const leads = await stored(elements.slice(0, 4) as RowResult[]);
      expect([...leads.values()].map((l) => l.data.Name).sort()).toEqual(['A; quoted', 'C']);
    });

    it('when the header names a column that is no field, then it is a 400 naming it', async () => {
      const res = await bulk('Name;Telefon;Colour\nA;+45 1234;blue\n', 'text/csv');
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors).toEqual([{ field: 'Colour', message: "is not a field of the campaign's lead definition" }]);
    });
  });

  describe("bytes not valid in the body's encoding", () => {
    const UNDECODABLE = "holds bytes that are not valid in the body's encoding (see the Encoding parameter)";
    /** The project's mark for an undecodable byte, which no answer may show (U+FFFD stands in its place). */
    const MARK = /\uFDD0|\\ufdd0/i;
    const cp1252 = (text: string) => iconv.encode(text, 'windows-1252');
    /** Sends the bytes as they are (superagent would send a Buffer with a JSON type as its JSON form). */
    const send = (body: Buffer, contentType: string, query: Record<string, string> = {}) =>
      bulk(body, contentType, query).serialize((bytes: Buffer) => bytes as unknown as string);

    it('when a windows-1252 CSV header is sent without a charset, then it is a 400 naming the columns with U+FFFD and the Encoding parameter', async () => {
      const res = await send(cp1252('Firmanavn;Telefon;Bemærkning;Særlig kode;Ønsker\nA;+45 1234;x;y;z\n'), 'text/csv');
      expect(res.status).toBe(400);
      expect(res.text).not.toMatch(MARK);
      const problem = res.body as Problem & { detail: string };
      expect(problem.code).toBe('invalid_body');
      expect(problem.detail).toMatch(/header row holds bytes that are not valid in the body's encoding \(utf-8\)/);
      expect(problem.detail).toMatch(/Encoding parameter/);
      expect(problem.detail).toMatch(/charset/);
      expect(problem.errors).toEqual([
        { field: 'Bem\uFFFDrkning', message: UNDECODABLE },
        { field: 'S\uFFFDrlig kode', message: UNDECODABLE },
        { field: '\uFFFDnsker', message: UNDECODABLE },
      ]);
    });

    it('when two header names differ only in letters the encoding cannot read, then it is the same 400, not a column named twice', async () => {
      const res = await send(cp1252('Name;Telefon;Bemærkning;Bemårkning\nA;+45 1234;x;y\n'), 'text/csv');
      expect(res.status).toBe(400);
      expect(res.text).not.toMatch(MARK);
      expect((res.body as Problem).errors).toEqual([
        { field: 'Bem\uFFFDrkning', message: UNDECODABLE },
        { field: 'Bem\uFFFDrkning', message: UNDECODABLE },
      ]);
    });

    it('when the same header comes with Encoding=windows-1252, then its names are read and the unknown ones named as sent', async () => {
      const res = await send(cp1252('Name;Telefon;Bemærkning\nA;+45 1234;x\n'), 'text/csv', { Encoding: 'windows-1252' });
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors).toEqual([{ field: 'Bemærkning', message: "is not a field of the campaign's lead definition" }]);
    });

    it.each([
      ['an NDJSON line', 'application/x-ndjson', (row: object) => JSON.stringify(row) + '\n', ''],
      ['a JSON array element', 'application/json', (row: object) => JSON.stringify([row]), ''],
      ['an import body in a JSON array', 'application/json', (row: object) => JSON.stringify([{ Data: row }]), 'Data.'],
      ['an import body in NDJSON', 'application/x-ndjson', (row: object) => JSON.stringify({ Data: row }) + '\n', 'Data.'],
    ])(
      'when a key of %s holds windows-1252 bytes sent as UTF-8, then the row fails naming the key with U+FFFD and the encoding',
      async (_case, type, body, prefix) => {
        const res = await send(cp1252(body({ Name: 'A', Telefon: '+45 1234', Bemærkning: 'x' })), type);
        expect(res.status).toBe(200);
        expect(res.text).not.toMatch(MARK);
        expect(res.body).toEqual([{ row: 1, success: false, errors: [{ field: `${prefix}Bem\uFFFDrkning`, message: UNDECODABLE }] }]);
      },
    );

    it('when a property of an import body holds bytes the encoding cannot read, then the row fails naming the encoding, not an unknown property', async () => {
      const res = await send(
        cp1252(JSON.stringify({ Data: { Name: 'A', Telefon: '+45 1234' }, Bemærkning: 'x' }) + '\n'),
        'application/x-ndjson',
      );
      expect(res.text).not.toMatch(MARK);
      expect(res.body).toEqual([{ row: 1, success: false, errors: [{ field: 'Bem\uFFFDrkning', message: UNDECODABLE }] }]);
    });

    it('when a row that is not valid JSON or CSV holds bytes the encoding cannot read, then its message shows U+FFFD', async () => {
      const ndjson = await send(cp1252('{"Bemærkning": nope}\n'), 'application/x-ndjson');
      expect(ndjson.text).not.toMatch(MARK);
      const [line] = ndjson.body as RowResult[];
      expect(line!.errors![0]!.message).toMatch(/^not valid JSON/);
      expect(line!.errors![0]!.message).toContain('Bem\uFFFDrkning');

      const array = await send(cp1252('[{"Bemærkning": nope}]'), 'application/json');
      expect(array.text).not.toMatch(MARK);
      expect(array.status).toBe(200);
      expect((array.body as RowResult[])[0]!.errors![0]!.message).toMatch(/^not valid JSON/);

      const csv = await send(cp1252('Name;Telefon\n"A"æ;+45 1234\n'), 'text/csv');
      expect(csv.text).not.toMatch(MARK);
      expect((csv.body as RowResult[])[0]!.errors![0]!.message).toContain('\uFFFD');
    });
  });

  describe('refusals before the body is read', () => {
    it('when CampaignCode is missing, unknown or foreign, then 400, 400 and 403', async () => {
      const missing = await request(t.app)
        .post('/api/leads/bulk')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send('[]');
      expect(missing.status).toBe(400);
      expect((missing.body as Problem).code).toBe('missing_parameter');
      const unknown = await bulk('[]', 'application/json', { CampaignCode: `NOPE-${w.id}` });
      expect(unknown.status).toBe(400);
      expect((unknown.body as Problem).errors).toEqual([{ parameter: 'CampaignCode', message: 'is not the code of a campaign' }]);
      const foreign = await bulk('[]', 'application/json', { CampaignCode: w.campaigns.retail }, w.accounts.b2b.auth);
      expect(foreign.status).toBe(403);
    });

    it('when the Content-Type is not a bulk format, or the encoding unknown, then 415 or 400', async () => {
      expect((await bulk('x', 'text/plain')).status).toBe(415);
      expect((await bulk('x', 'text/csv', { Encoding: 'klingon' })).status).toBe(400);
      expect((await bulk('x', 'text/csv; charset=klingon')).status).toBe(415);
    });

    it('when the account lacks Leads Post, then 403', async () => {
      expect((await bulk('[]', 'application/json', {}, w.accounts.none.auth)).status).toBe(403);
    });

    it.each([
      ['U+FFFD', '\uFFFD', { Encoding: 'windows-1252' }, 'text/csv', 'windows-1252', 'the Encoding parameter'],
      ['€', '€', { Encoding: 'iso-8859-1' }, 'text/csv', 'iso-8859-1', 'the Encoding parameter'],
      ['U+FFFD', '\uFFFD', {}, 'text/csv; charset=windows-1252', 'windows-1252', 'the Content-Type charset'],
      ['😀', '😀', {}, 'text/csv; charset=iso-8859-1', 'iso-8859-1', 'the Content-Type charset'],
    ])(
      'when a CSV body in a legacy encoding has a CsvFieldSeparator (%s) the encoding has no character for, then 400 naming the parameter and the encoding',
      async (_name, separator, query, type, encoding, source) => {
        const body = iconv.encode(`Name${separator}Telefon\nÅse${separator}+45 1234\n`, encoding);
        const res = await bulk(body, type, { ...query, CsvFieldSeparator: separator });
        expect(res.status).toBe(400);
        const message = `cannot be read in ${encoding}: ${encoding} has no such character (the body's encoding, from ${source})`;
        expect(res.body).toMatchObject({
          code: 'invalid_parameter',
          detail: `CsvFieldSeparator: ${message}`,
          errors: [{ parameter: 'CsvFieldSeparator', message }],
        });
      },
    );

    it("when the separator is the decoder's mark for bytes not valid in UTF-8, then 400; U+FFFD in UTF-8, and any separator of a JSON body, are read", async () => {
      const mark = await bulk('Name\uFDD0Telefon\n', 'text/csv', { CsvFieldSeparator: '\uFDD0' });
      expect(mark.status).toBe(400);
      expect((mark.body as Problem).errors).toEqual([
        {
          parameter: 'CsvFieldSeparator',
          message: "cannot be read in utf-8: it is the mark for bytes not valid in it (the body's encoding, from the default)",
        },
      ]);
      const replacement = await bulk(`Name\uFFFDTelefon\nÅse ${uniq()}\uFFFD+45 1234\n`, 'text/csv', { CsvFieldSeparator: '\uFFFD' });
      expect(replacement.status).toBe(200);
      expect((replacement.body as RowResult[]).map((r) => r.success)).toEqual([true]);
      const json = await bulk(JSON.stringify([{ Name: `J ${uniq()}`, Telefon: '+45 1234' }]), 'application/json', {
        Encoding: 'windows-1252',
        CsvFieldSeparator: '€',
      });
      expect(json.status).toBe(200);
    });
  });

  describe('body limit', () => {
    const small = useTestWorld({ BULK_BODY_LIMIT: '2kb', BULK_BATCH_SIZE: '5' });

    it('when Content-Length is over BULK_BODY_LIMIT, then 413 before anything is read', async () => {
      const res = await request(small.t.app)
        .post('/api/leads/bulk')
        .query({ CampaignCode: small.w.campaigns.b2b })
        .set('Authorization', small.w.accounts.full.auth)
        .set('Content-Type', 'application/x-ndjson')
        .send('x'.repeat(3000));
      expect(res.status).toBe(413);
      expect((res.body as Problem).code).toBe('payload_too_large');
    });

    it('when a chunked body grows over BULK_BODY_LIMIT mid-stream, then the rows before are stored and a 413 element ends the answer', async () => {
      const { port } = await small.t.listen();
      const rows = Array.from({ length: 100 }, (_, i) => JSON.stringify({ Name: `Row ${i + 1}`, Telefon: '+45 1234' }) + '\n');
      const res = await postChunked(
        port,
        `/api/leads/bulk?CampaignCode=${encodeURIComponent(small.w.campaigns.b2b)}`,
        small.w.accounts.full.auth,
        'application/x-ndjson',
        rows,
      );
      expect(res.status).toBe(200);
      const elements = JSON.parse(res.body) as (RowResult | StopElement)[];
      const last = elements[elements.length - 1] as StopElement;
      expect(last).toMatchObject({ status: 413, code: 'payload_too_large', rows: elements.length - 1 });
      expect(elements.length - 1).toBeGreaterThan(10);
      expect(elements.length - 1).toBeLessThan(100);
      const results = elements.slice(0, -1) as RowResult[];
      expect(results.every((r, i) => r.success && r.row === i + 1)).toBe(true);
      const count = await small.t
        .db('leads')
        .whereIn(
          'unique_id',
          results.map((r) => r.uniqueId!),
        )
        .count<{ count: string }[]>('* as count');
      expect(Number(count[0]!.count)).toBe(results.length);
    });
  });
});

/** POSTs the chunks without a Content-Length (chunked), each as its own write; resolves with the whole answer. */
function postChunked(
  port: number,
  path: string,
  auth: string,
  contentType: string,
  chunks: string[],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { Authorization: auth, 'Content-Type': contentType } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
        res.once('error', reject);
      },
    );
    // The server may stop reading once the limit is passed: a write after that is no failure.
    req.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('POST /api/leads/bulk, rows stored as they arrive', () => {
  const { t, w } = useTestWorld({ BULK_BATCH_SIZE: '100' });

  const storedWith = async (tag: string) =>
    Number((await t.db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>('* as count'))[0]!.count);

  /** Sends `head`, waits (bounded by the test timeout) until at least `expected` rows are stored, then sends `tail`. */
  async function importWhileOpen(contentType: string, head: string, tail: string, tag: string, expected: number) {
    const { port } = await t.listen();
    let storedBeforeEnd = 0;
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        bulkImportRequest(port, w.campaigns.b2b, { Authorization: w.accounts.full.auth, 'Content-Type': contentType }),
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString('utf8') }));
        },
      );
      req.once('error', reject);
      req.write(head);
      void (async () => {
        // The body is still open: only rows read from it so far can have been stored.
        storedBeforeEnd = await untilValue(
          'the rows read so far stored, the body still open',
          () => storedWith(tag),
          (n) => n >= expected,
          { timeoutMs: 30_000, intervalMs: 20 },
        );
        req.end(tail);
      })().catch(reject);
    });
    const res = await answer;
    return { res, storedBeforeEnd };
  }

  const row = (tag: string, n: number) => ({ Name: `Row ${n}`, Telefon: '+45 1234', Customer: `${tag}-${n}` });

  it('when a JSON array body is still being sent, then the rows of its first batches are already stored', async () => {
    const tag = uniq('OPEN-J-');
    const head = '[' + Array.from({ length: 250 }, (_, i) => JSON.stringify(row(tag, i + 1))).join(',');
    const tail = ',' + Array.from({ length: 50 }, (_, i) => JSON.stringify(row(tag, 251 + i))).join(',') + ']';
    const { res, storedBeforeEnd } = await importWhileOpen('application/json', head, tail, tag, 200);
    expect(res.status).toBe(200);
    expect(storedBeforeEnd).toBeGreaterThanOrEqual(200);
    const results = JSON.parse(res.body) as RowResult[];
    expect(results.map((r) => r.row)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    expect(await storedWith(tag)).toBe(300);
  });

  it('when an NDJSON body is still being sent, then its first rows are already stored', async () => {
    const tag = uniq('OPEN-N-');
    const lines = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => JSON.stringify(row(tag, from + i)) + '\n').join('');
    const { res, storedBeforeEnd } = await importWhileOpen('application/x-ndjson', lines(1, 150), lines(151, 10), tag, 100);
    expect(res.status).toBe(200);
    expect(storedBeforeEnd).toBeGreaterThanOrEqual(100);
    expect((JSON.parse(res.body) as RowResult[]).every((r) => r.success)).toBe(true);
    expect(await storedWith(tag)).toBe(160);
  });

  it('when a CSV body is still being sent, then its first rows are already stored', async () => {
    const tag = uniq('OPEN-C-');
    const lines = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => `Row ${from + i};+45 1234;${tag}-${from + i}\r\n`).join('');
    const { res, storedBeforeEnd } = await importWhileOpen(
      'text/csv',
      'Name;Telefon;Customer\r\n' + lines(1, 120),
      lines(121, 5),
      tag,
      100,
    );
    expect(res.status).toBe(200);
    expect(storedBeforeEnd).toBeGreaterThanOrEqual(100);
    expect(await storedWith(tag)).toBe(125);
  });
});

describe('POST /api/leads/bulk, a client that leaves mid-import', () => {
  const { t, w } = useTestWorld({ BULK_BATCH_SIZE: '50' });

  it('when the client disconnects after reading some results, then every acknowledged row exists and nothing after the stored prefix does', async () => {
    const { port } = await t.listen();
    const tag = uniq('LEAVE-');
    const total = 20_000;
    const acknowledged: RowResult[] = [];
    let sent = 0;
    await new Promise<void>((resolve, reject) => {
      const req = http.request(
        bulkImportRequest(port, w.campaigns.b2b, { Authorization: w.accounts.full.auth, 'Content-Type': 'application/x-ndjson' }),
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
            // Complete result lines only: `{"row":…}` ends with `}` then `,` or the array's end.
            for (const m of text.matchAll(/^\[?\n?(\{"row".*\})(,|\n)/gm)) acknowledged.push(JSON.parse(m[1]!) as RowResult);
            text = text.slice(text.lastIndexOf('\n') + 1);
            if (acknowledged.length >= 300) {
              clearInterval(writer);
              req.destroy();
              resolve();
            }
          });
          res.once('error', () => undefined);
        },
      );
      req.once('error', (err: NodeJS.ErrnoException) =>
        err.code === 'ECONNRESET' || err.message === 'socket hang up' ? undefined : reject(err),
      );
      // A client that keeps sending: 100 rows every 10 ms.
      const writer = setInterval(() => {
        let lines = '';
        for (let k = 0; k < 100 && sent < total; k++) {
          sent++;
          lines += JSON.stringify({ Name: `Row ${sent}`, Telefon: '+45 1234', Customer: `${tag}-${sent}` }) + '\n';
        }
        req.write(lines);
        if (sent >= total) {
          clearInterval(writer);
          req.end();
        }
      }, 10);
    });

    // The server stops on its own: the stored count settles.
    const storedCount = async () =>
      Number((await t.db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>('* as count'))[0]!.count);
    await untilSettled('the stored count stops growing', storedCount, { reads: 4, intervalMs: 200, timeoutMs: 30_000 });
    expect(acknowledged.map((r) => r.row)).toEqual(acknowledged.map((_, i) => i + 1));
    const ids = acknowledged.map((r) => r.uniqueId!);
    const found = await t.db('leads').whereIn('unique_id', ids).count<{ count: string }[]>('* as count');
    expect(Number(found[0]!.count)).toBe(acknowledged.length);
    // What is stored is a prefix of what was sent, and less than all of it.
    const keys = (await t.db('leads').whereLike('external_key', `${tag}-%`).pluck('external_key')) as string[];
    const numbers = keys.map((k) => Number(k.slice(tag.length + 1))).sort((a, b) => a - b);
    expect(numbers).toEqual(numbers.map((_, i) => i + 1));
    expect(numbers.length).toBeGreaterThanOrEqual(acknowledged.length);
    expect(numbers.length).toBeLessThan(sent);
    // No transaction is left open by the abandoned request: every connection of the app's pool
    // goes back (files running alongside share the database, so its sessions are not counted).
    const pool = (t.db.client as unknown as { pool: { numUsed(): number } }).pool;
    await until('every connection back in the pool', () => pool.numUsed() === 0, { timeoutMs: 10_000, intervalMs: 20 });
  });
});

describe('POST /api/leads/bulk, batches stored side by side', () => {
  // Small batches, up to four in flight, and a pool with connections to spare for them.
  const { t, w } = useTestWorld({ BULK_BATCH_SIZE: '10', BULK_PARALLEL_BATCHES: '4', DB_POOL_MAX: '12' });

  it('when neighbouring batches create the same new pools, then every row is stored once, in its pool, answered in input order', async () => {
    const tag = uniq('SIDE-');
    // Each batch of ten rows spans two pools that the batch before it also names (and may be
    // creating at that moment): a later batch must wait for an earlier one's pool, never the reverse.
    const poolOf = (n: number) => `${tag} pool ${Math.floor(n / 7) % 9}`;
    const total = 600;
    const lines = Array.from({ length: total }, (_, i) => {
      const n = i + 1;
      return JSON.stringify({ Data: { Name: `Row ${n}`, Telefon: '+45 1234', Customer: `${tag}-${n}` }, LeadPool: poolOf(n) });
    });
    const res = await request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/x-ndjson')
      .send(lines.join('\n'));
    expect(res.status).toBe(200);
    const results = res.body as RowResult[];
    expect(results.map((r) => r.row)).toEqual(lines.map((_, i) => i + 1));
    expect(results.every((r) => r.success)).toBe(true);

    const rows = await t
      .db('leads as l')
      .join('lead_pools as p', 'p.id', 'l.pool_id')
      .whereLike('l.external_key', `${tag}-%`)
      .select<{ unique_id: string; external_key: string; pool: string }[]>('l.unique_id', 'l.external_key', 'p.name as pool');
    expect(rows).toHaveLength(total);
    const byId = new Map(rows.map((r) => [r.unique_id, r]));
    for (const r of results) {
      expect(byId.get(r.uniqueId!)).toMatchObject({ external_key: `${tag}-${r.row}`, pool: poolOf(r.row) });
    }
    // Each pool exists once.
    const pools = await t.db('lead_pools').whereLike('name', `${tag} pool %`).pluck<string[]>('name');
    expect([...pools].sort()).toEqual([...new Set(lines.map((_, i) => poolOf(i + 1)))].sort());
    // Nothing is left holding a connection (the request log's background flush may hold one for a moment).
    const pool = (t.db.client as unknown as { pool: { numUsed(): number } }).pool;
    await untilValue(
      'every connection back in the pool',
      () => pool.numUsed(),
      (used) => used === 0,
      { timeoutMs: 10_000, intervalMs: 10 },
    );
  });
});
