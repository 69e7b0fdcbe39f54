import http from 'node:http';
import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { bulkImportRequest } from '../harness/bulkRequest';
import { until, untilSettled } from '../harness/until';

interface RowResult {
  row: number;
  success: boolean;
  uniqueId?: string;
  status?: string;
  errors?: { field: string; message: string }[];
}

describe('POST /api/leads/bulk with an Idempotency-Key', () => {
  const { t, w } = useTestWorld({ BULK_BATCH_SIZE: '50' });

  const bulk = (body: string, key: string, query: Record<string, string> = {}, contentType = 'application/x-ndjson') =>
    request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b, ...query })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', contentType)
      .set('Idempotency-Key', key)
      .send(body)
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => done(null, text));
      });

  const ndjson = (tag: string, from: number, count: number) =>
    Array.from({ length: count }, (_, i) => {
      const n = from + i;
      // Every 37th row fails (no phone number): failed rows are part of the kept answer too.
      return (
        JSON.stringify(
          n % 37 === 0 ? { Name: `Row ${n}`, Customer: `${tag}-${n}` } : { Name: `Row ${n}`, Telefon: '+45 1234', Customer: `${tag}-${n}` },
        ) + '\n'
      );
    }).join('');

  const storedWith = async (tag: string) =>
    Number((await t.db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>('* as count'))[0]!.count);

  it('when a finished import is sent again with its key, then the same answer comes back and nothing more is stored', async () => {
    const tag = uniq('IDEM-');
    const key = uniq('bulk-key-');
    const body = ndjson(tag, 1, 120);
    const first = await bulk(body, key);
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await storedWith(tag)).toBe(117);

    const retry = await bulk(body, key);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect((JSON.parse(retry.body as string) as RowResult[]).map((r) => r.row)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(await storedWith(tag)).toBe(117);

    // The same rows as a JSON array are the same request.
    const asArray = '[' + body.trim().split('\n').join(',') + ']';
    const again = await bulk(asArray, key, {}, 'application/json');
    expect(again.status).toBe(200);
    expect(again.body).toBe(first.body);
    expect(await storedWith(tag)).toBe(117);
  });

  it('when the key comes with other rows or other parameters, then it is a 409 and nothing is stored', async () => {
    const tag = uniq('IDEM-');
    const key = uniq('bulk-key-');
    await bulk(ndjson(tag, 1, 10), key).expect(200);
    const otherRows = await bulk(ndjson(tag, 1, 9) + ndjson(`${tag}X`, 10, 1), key);
    expect(otherRows.status).toBe(409);
    expect(JSON.parse(otherRows.body as string)).toMatchObject({ status: 409, code: 'conflict' });
    const otherPool = await bulk(ndjson(tag, 1, 10), key, { LeadPool: 'Another pool' });
    expect(otherPool.status).toBe(409);
    expect(await storedWith(tag)).toBe(10);
    expect(await storedWith(`${tag}X`)).toBe(0);
  });

  it('when the key was used by a single import, then the bulk import with it is a 409', async () => {
    const key = uniq('single-key-');
    const single = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .set('Idempotency-Key', key)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'One', Telefon: '+45 1234' } });
    expect(single.status).toBe(200);
    const tag = uniq('IDEM-');
    expect((await bulk(ndjson(tag, 1, 3), key)).status).toBe(409);
    expect(await storedWith(tag)).toBe(0);
  });

  it('when a body broke mid-stream under a key, then the retry answers the same rows and the same final element', async () => {
    const tag = uniq('IDEM-');
    const key = uniq('bulk-key-');
    const body =
      '[' +
      Array.from({ length: 60 }, (_, i) => JSON.stringify({ Name: `Row ${i + 1}`, Telefon: '+45 1234', Customer: `${tag}-${i + 1}` })).join(
        ',',
      ) +
      ',{"Name" oops}]';
    const first = await bulk(body, key, {}, 'application/json');
    expect(first.status).toBe(200);
    const elements = JSON.parse(first.body as string) as (RowResult | { code: string; rows: number })[];
    expect(elements[elements.length - 1]).toMatchObject({ code: 'invalid_body', rows: 61 });
    const retry = await bulk(body, key, {}, 'application/json');
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
    expect(await storedWith(tag)).toBe(60);
  });

  it('when the body is refused before its first row, then the key stays free for the corrected request', async () => {
    const tag = uniq('IDEM-');
    const key = uniq('bulk-key-');
    const refused = await bulk('{"Name":"not an array"}', key, {}, 'application/json');
    expect(refused.status).toBe(400);
    const fixed = await bulk(ndjson(tag, 1, 5), key);
    expect(fixed.status).toBe(200);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await storedWith(tag)).toBe(5);
  });

  it('when a client left mid-import, then the retry with the same key answers every row once and stores no row twice', async () => {
    const { port } = await t.listen();
    const tag = uniq('IDEM-LEAVE-');
    const key = uniq('bulk-key-');
    const total = 1000;
    const full = ndjson(tag, 1, total);
    const head = ndjson(tag, 1, 500);

    // First attempt: half the body, then the client leaves once it has read some results.
    const acknowledged: RowResult[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = http.request(
        bulkImportRequest(port, w.campaigns.b2b, {
          Authorization: w.accounts.full.auth,
          'Content-Type': 'application/x-ndjson',
          'Idempotency-Key': key,
        }),
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
            for (const m of text.matchAll(/^\[?\n?(\{"row".*\})(,|\n)/gm)) acknowledged.push(JSON.parse(m[1]!) as RowResult);
            text = text.slice(text.lastIndexOf('\n') + 1);
            if (acknowledged.length >= 100) {
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
      req.write(head);
    });
    // The server stops on its own: the stored count settles below the rows sent.
    const storedFirst = await untilSettled('the stored count stops growing', () => storedWith(tag), {
      reads: 4,
      intervalMs: 200,
      timeoutMs: 30_000,
    });
    expect(storedFirst).toBeLessThan(total);

    // Other rows under the same key: refused, nothing stored.
    const other = await bulk(ndjson(`${tag}X`, 1, total), key);
    expect(other.status).toBe(409);
    expect(await storedWith(`${tag}X`)).toBe(0);

    const retry = await bulk(full, key);
    expect(retry.status).toBe(200);
    const results = JSON.parse(retry.body as string) as RowResult[];
    expect(results.map((r) => r.row)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // What the first attempt acknowledged is answered the same.
    for (const a of acknowledged) expect(results[a.row - 1]).toEqual(a);
    const succeeded = results.filter((r) => r.success);
    expect(succeeded).toHaveLength(total - Math.floor(total / 37));
    // Each row stored once, and each answered lead is a stored one.
    expect(await storedWith(tag)).toBe(succeeded.length);
    const found = await t
      .db('leads')
      .whereIn(
        'unique_id',
        succeeded.map((r) => r.uniqueId!),
      )
      .count<{ count: string }[]>('* as count');
    expect(Number(found[0]!.count)).toBe(succeeded.length);

    const replay = await bulk(full, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(retry.body);
    expect(await storedWith(tag)).toBe(succeeded.length);
  });
  it('when a second request with the key stores rows while the first still runs, then the first ends with a 409 element and no row is stored twice', async () => {
    const { port } = await t.listen();
    const tag = uniq('IDEM-TWO-');
    const key = uniq('bulk-key-');
    let firstAnswer = '';
    let finishFirst: (tail: string) => void = () => undefined;
    const first = new Promise<number>((resolve, reject) => {
      const req = http.request(
        bulkImportRequest(port, w.campaigns.b2b, {
          Authorization: w.accounts.full.auth,
          'Content-Type': 'application/x-ndjson',
          'Idempotency-Key': key,
        }),
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (c: string) => (firstAnswer += c));
          res.once('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.once('error', reject);
      req.write(ndjson(tag, 1, 100));
      finishFirst = (tail) => req.end(tail);
    });
    // Both full batches of the first request are stored; it waits for more body.
    await until('both full batches of the first request stored', async () => (await storedWith(tag)) >= 100 - 2, {
      timeoutMs: 30_000,
      intervalMs: 20,
    });

    const second = await bulk(ndjson(tag, 1, 150), key);
    expect(second.status).toBe(200);
    const results = JSON.parse(second.body as string) as RowResult[];
    expect(results.map((r) => r.row)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));

    finishFirst(ndjson(tag, 101, 50));
    expect(await first).toBe(200);
    const elements = JSON.parse(firstAnswer) as (RowResult | { status: number; code: string; rows: number })[];
    expect(elements[elements.length - 1]).toMatchObject({ status: 409, code: 'conflict', rows: 100 });
    expect((elements.slice(0, -1) as RowResult[]).map((r) => r.uniqueId)).toEqual(results.slice(0, 100).map((r) => r.uniqueId));
    expect(await storedWith(tag)).toBe(results.filter((r) => r.success).length);
  });
});
