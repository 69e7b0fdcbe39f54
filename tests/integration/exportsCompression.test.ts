import http from 'node:http';
import zlib from 'node:zlib';
import iconv from 'iconv-lite';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';

/**
 * Compressed exports: Accept-Encoding negotiated by q-values (zstd, br, gzip, identity), the
 * compressed body decompressing to the very bytes of the plain one, `Vary: Accept-Encoding`,
 * small bodies sent plain, and COMPRESSION=false.
 */

const CALLS = 3000;
const { t, w } = useTestWorld();
const plainApp = useTestApp({ COMPRESSION: 'false' });
let port: number;
let plainPort: number;

beforeAll(async () => {
  const id = async (table: string, column: string, value: string) =>
    (
      await t
        .db(table)
        .where({ [column]: value })
        .first<{ id: number }>('id')
    ).id;
  await t.db.raw(
    `insert into calls (unique_id, campaign_id, unique_lead_id, user_id, ou0_id, lead_phone_number, lead_external_key, end_cause, start_time, preview_ms, conversation_ms)
     select ? || '-' || g, ?, 'lead-' || g, ?, ?, '+4512' || g, 'Kunde æøå ' || g, g % 5, '2026-05-06T08:00:00Z'::timestamptz + g * interval '1 second', 4000, g * 37
     from generate_series(1, ?) g`,
    [
      w.id,
      await id('campaigns', 'code', w.campaigns.b2b),
      await id('users', 'org_code', w.users.agent),
      await id('org_units', 'org_code', w.units.root),
      CALLS,
    ],
  );
  port = (await t.listen()).port;
  plainPort = (await plainApp.listen()).port;
}, 120_000);

interface Fetched {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Chunks as they arrived (the body is streamed, not sent in one piece). */
  chunks: number;
}

function get(path: string, acceptEncoding?: string, onPort = port): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Authorization: w.accounts.full.auth };
    if (acceptEncoding !== undefined) headers['Accept-Encoding'] = acceptEncoding;
    http
      .get({ host: '127.0.0.1', port: onPort, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), chunks: chunks.length }),
        );
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

const decode = (f: Fetched): Buffer => {
  const coding = f.headers['content-encoding'];
  if (coding === 'zstd') return zlib.zstdDecompressSync(f.body);
  if (coding === 'br') return zlib.brotliDecompressSync(f.body);
  if (coding === 'gzip') return zlib.gunzipSync(f.body);
  return f.body;
};

const callsPath = () =>
  `/api/calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H&Include=campaign`;

describe('compressed exports', () => {
  let plain: Buffer;
  beforeAll(async () => {
    const res = await get(callsPath());
    expect(res.headers['content-encoding']).toBeUndefined();
    plain = res.body;
    expect((JSON.parse(plain.toString('utf8')) as unknown[]).length).toBe(CALLS);
  });

  it.each([
    ['zstd', 'zstd'],
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['gzip, deflate, br, zstd', 'zstd'],
    ['zstd;q=0.5, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['gzip;q=0.8, br;q=0.9, identity;q=0.1', 'br'],
    ['br;q=0, gzip;q=0.3', 'gzip'],
    ['*', 'gzip'],
    ['zstd;q=0, br;q=0, *;q=0.5', 'gzip'],
  ])('when Accept-Encoding is %j, then the body comes as %s and decompresses to the plain bytes', async (accept, coding) => {
    const res = await get(callsPath(), accept);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe(coding);
    expect(res.headers.vary).toMatch(/Accept-Encoding/i);
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.body.length * 8).toBeLessThan(plain.length);
    const decoded = decode(res);
    expect({ length: decoded.length, equal: decoded.equals(plain) }).toEqual({ length: plain.length, equal: true });
  });

  it.each([['identity'], ['zstd;q=0, br;q=0, gzip;q=0'], ['deflate'], ['']])(
    'when Accept-Encoding is %j, then the body is plain',
    async (accept) => {
      const res = await get(callsPath(), accept);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
      expect(res.body.equals(plain)).toBe(true);
    },
  );

  it('when a CSV in windows-1252 is compressed, then it decompresses to the windows-1252 bytes', async () => {
    const path = `/api/calls/csv?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H&Encoding=windows-1252&CsvFieldSeparator=%2C`;
    const [plainCsv, gz] = await Promise.all([get(path), get(path, 'gzip')]);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers['content-type']).toBe('text/csv; charset=windows-1252');
    expect(decode(gz).equals(plainCsv.body)).toBe(true);
    expect(iconv.decode(plainCsv.body, 'windows-1252')).toContain('Kunde æøå 1');
  });

  it('when the lead exports are compressed, then they decompress to the plain bytes', async () => {
    await t.load({ type: 'lead', campaign: w.campaigns.b2b, data: { Name: 'Åse', Telefon: '+45 1', Secret: 'x'.repeat(3000) } });
    const path = `/api/simpleleads?Projects=${encodeURIComponent(w.projects.b2b)}`;
    const [p, br] = await Promise.all([get(path), get(path, 'br')]);
    expect(br.headers['content-encoding']).toBe('br');
    expect(decode(br).equals(p.body)).toBe(true);
  });

  it('when the export is small, then it is sent plain with its length, still varying on Accept-Encoding', async () => {
    const res = await get(`/api/calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2001-01-01&TimeSpan=P1D`, 'br, gzip');
    expect(res.body.toString()).toBe('[]');
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe('2');
    expect(res.headers.vary).toMatch(/Accept-Encoding/i);
  });

  it('when COMPRESSION=false, then nothing is compressed and nothing varies on Accept-Encoding', async () => {
    const res = await get(callsPath(), 'br, gzip', plainPort);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary ?? '').not.toMatch(/Accept-Encoding/i);
    expect(res.body.equals(plain)).toBe(true);
  });
});

describe('compressed one-piece answers', () => {
  it.each([
    ['gzip', '/api/openapi.json'],
    ['br', '/api/openapi.json'],
    ['zstd', '/api/myaccount/request/limits'],
    ['gzip', '/api/myaccount/request/limits'],
    ['br', '/api/docs/reference'],
  ])(
    'when the client accepts %s, then %s comes compressed, varying on Accept-Encoding, with the compressed length, and decodes to the plain body',
    async (coding, path) => {
      const [plain, packed] = [await get(path), await get(path, coding)];
      expect(plain.status).toBe(200);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(packed.status).toBe(200);
      expect(packed.headers['content-encoding']).toBe(coding);
      expect(packed.headers.vary).toMatch(/Accept-Encoding/i);
      expect(Number(packed.headers['content-length'])).toBe(packed.body.length);
      expect(packed.body.length * 3).toBeLessThan(plain.body.length);
      expect(decode(packed).equals(plain.body)).toBe(true);
      // The same weak tag names both: a 304 for either coding.
      expect(packed.headers.etag).toBe(plain.headers.etag);
    },
  );

  it('when a Prometheus scraper accepts gzip, then the metrics text comes compressed', async () => {
    const res = await get('/api/metrics', 'gzip');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    expect(decode(res).toString('utf8')).toContain('lcm_http_request_duration_seconds');
  });

  it('when the answer is tiny, then it is plain with its length, still varying on Accept-Encoding', async () => {
    const res = await get('/api/healthz', 'gzip, br');
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe(String(res.body.length));
    expect(res.headers.vary).toMatch(/Accept-Encoding/i);
  });

  it('when COMPRESSION=false, then a one-piece answer is plain and does not vary on Accept-Encoding', async () => {
    const res = await get('/api/openapi.json', 'gzip, br', plainPort);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary ?? '').not.toMatch(/Accept-Encoding/i);
  });
});
