import request from 'supertest';
import type { ProblemFieldError } from '../../src/http/problem';
import { useTestWorld } from '../harness/useTestWorld';

interface RowResult {
  row: number;
  success: boolean;
  uniqueId?: string;
  errors?: { field: string; message: string }[];
}
interface Problem {
  code: string;
  status: number;
  errors: ProblemFieldError[];
}

/**
 * Bounded input (docs/decisions.md, Leads and Bulk import): one lead value is at most
 * LEAD_VALUE_MAX_BYTES (default 65,536), one bulk row at most BULK_ROW_MAX_BYTES (default 1 MiB)
 * in every body format. Larger is a 413 for one lead, a failed row in a bulk import; a large
 * row is dropped as it streams in, and reading it costs what the same bytes of small rows cost.
 */
describe('bounded lead input', () => {
  const { t, w } = useTestWorld();
  const MAX_VALUE = 65_536;
  const MAX_ROW = 1024 * 1024;

  const importOne = (data: Record<string, string>) =>
    request(t.app).post('/api/leads').set('Authorization', w.accounts.full.auth).send({ CampaignCode: w.campaigns.b2b, Data: data });
  const bulk = (body: string | Buffer, contentType: string) =>
    request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', contentType)
      .send(body);
  const storedNames = async (results: RowResult[]) =>
    (
      await t
        .db('leads')
        .whereIn(
          'unique_id',
          results.filter((r) => r.success).map((r) => r.uniqueId!),
        )
        .select<{ name: string }[]>(t.db.raw(`data->>'Name' as name`))
    )
      .map((r) => r.name)
      .sort();
  const rowTooLarge = { field: '(row)', message: `the row is larger than ${MAX_ROW} bytes (BULK_ROW_MAX_BYTES)` };
  const valueTooLarge = (field: string) => ({ field, message: `is larger than ${MAX_VALUE} bytes (LEAD_VALUE_MAX_BYTES)` });

  describe('one lead value', () => {
    it('when a value of POST /leads is over LEAD_VALUE_MAX_BYTES, then it is a 413 naming it and nothing is stored', async () => {
      // Other test files store leads in the same database at the same time: count this one's only.
      const marker = `over-limit-${w.id}-`;
      const res = await importOne({ Name: marker + 'x'.repeat(MAX_VALUE + 1), Telefon: '+45 1234' });
      expect(res.status).toBe(413);
      expect((res.body as Problem).code).toBe('payload_too_large');
      expect((res.body as Problem).errors).toEqual([valueTooLarge('Data.Name')]);
      const stored = await t
        .db('leads')
        .whereRaw(`data->>'Name' like ?`, [`${marker}%`])
        .count<{ n: string }[]>({ n: '*' });
      expect(Number(stored[0]!.n)).toBe(0);
    });

    it('when a value is counted, then it is its UTF-8 bytes: 40,000 æ (80,000 bytes) are over, 65,536 bytes are not', async () => {
      expect((await importOne({ Name: 'æ'.repeat(40_000), Telefon: '+45 1234' })).status).toBe(413);
      const atLimit = await importOne({ Name: 'x'.repeat(MAX_VALUE), Telefon: '+45 1234' });
      expect(atLimit.status).toBe(200);
      expect(atLimit.body).toMatchObject({ success: true });
    });

    it('when PATCH sets a value over the limit, then it is a 413 naming it and the lead keeps its data', async () => {
      const created = await importOne({ Name: 'Patched', Telefon: '+45 1234' });
      const id = (created.body as { uniqueId: string }).uniqueId;
      const res = await request(t.app)
        .patch(`/api/leads/${id}`)
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ data: { Name: 'y'.repeat(MAX_VALUE + 1) } }));
      expect(res.status).toBe(413);
      expect((res.body as Problem).errors).toEqual([valueTooLarge('data.Name')]);
      const lead = await request(t.app).get(`/api/leads/${id}`).set('Authorization', w.accounts.full.auth);
      expect((lead.body as { data: Record<string, string> }).data.Name).toBe('Patched');
    });

    it('when a bulk row holds a value over the limit, then that row fails naming it and the others are stored', async () => {
      const res = await bulk(
        JSON.stringify([
          { Name: 'V1', Telefon: '+45 1234' },
          { Name: 'V2', Telefon: '+45 1234', Email: 'z'.repeat(MAX_VALUE + 1) },
          { Data: { Name: 'V3', Telefon: '+45 1234', Customer: 'c'.repeat(MAX_VALUE + 1) } },
          { Name: 'V4', Telefon: '+45 1234' },
        ]),
        'application/json',
      );
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, false, false, true]);
      expect(results[1]!.errors).toEqual([valueTooLarge('Email')]);
      expect(results[2]!.errors).toEqual([valueTooLarge('Data.Customer')]);
    });
  });

  describe('one bulk row', () => {
    it('when a JSON array element holds a 16 MB string, then that row fails, nothing of it is stored, and the rows after it are', async () => {
      const huge = JSON.stringify({ Name: 'Huge', Telefon: '+45 1234', Email: 'e'.repeat(16 * 1024 * 1024) });
      const body = `[{"Name":"J1","Telefon":"+45 1234"},${huge},{"Name":"J3","Telefon":"+45 1234"}]`;
      const res = await bulk(body, 'application/json');
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, false, true]);
      expect(results[1]).toEqual({ row: 2, success: false, errors: [rowTooLarge] });
      expect(await storedNames(results)).toEqual(['J1', 'J3']);
    });

    it('when an NDJSON line is over the limit in UTF-8 (600,000 æ: 1.2 MB, fewer characters than the limit), then that line fails alone', async () => {
      const lines = [
        JSON.stringify({ Name: 'N1', Telefon: '+45 1234' }),
        JSON.stringify({ Name: 'N2', Telefon: '+45 1234', Email: 'æ'.repeat(600_000) }),
        JSON.stringify({ Name: 'N3', Telefon: '+45 1234' }),
      ];
      const results = (await bulk(lines.join('\n'), 'application/x-ndjson')).body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, false, true]);
      expect(results[1]!.errors).toEqual([rowTooLarge]);
    });

    it('when a CSV row of 16 MB with quoted line ends arrives in chunks, then that row fails and the rows after it are stored', async () => {
      const quoted = '"' + 'line\r\n""quoted""; '.repeat(Math.ceil((16 * 1024 * 1024) / 18)) + '"';
      const csv = `Name;Telefon;Email\r\nC1;+45 1234;\r\nC2;+45 1234;${quoted}\r\nC3;+45 1234;\r\n`;
      const res = await bulk(Buffer.from(csv, 'utf8'), 'text/csv');
      expect(res.status).toBe(200);
      const results = res.body as RowResult[];
      expect(results.map((r) => r.success)).toEqual([true, false, true]);
      expect(results[1]!.errors).toEqual([rowTooLarge]);
      expect(await storedNames(results)).toEqual(['C1', 'C3']);
    });

    it('when a CSV header row is over the limit, then it is a 400 before any row', async () => {
      const res = await bulk(`Name;${'"' + 'h'.repeat(MAX_ROW) + '"'}\r\nA;B\r\n`, 'text/csv');
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain('header row is larger than');
    });
  });
});
