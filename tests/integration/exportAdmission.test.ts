import request from 'supertest';
import type { Knex } from 'knex';
import { useTestWorld } from '../harness/useTestWorld';
import { callsWindow, insertCalls, insertLeads } from '../harness/bulkData';
import { getFully, holdResponse, HeldResponse } from '../harness/slowClient';
import { until } from '../harness/until';
import { leaveDuringPasswordCheck } from '../harness/leavingClient';

/**
 * Admission control of bulk exports (docs/operations.md, "Limits"; docs/architecture.md,
 * "Database connections"): exports read through a pool of their own on one connection each,
 * never waiting for a second one; too many at once are refused with 429/503 and Retry-After
 * instead of queueing; a connection not had in time is a 503, never a 500; a client that
 * stops reading is cut and its connection released.
 */

type Pool = { numUsed(): number; numPendingAcquires(): number };
const poolOf = (db: Knex): Pool => (db.client as unknown as { pool: Pool }).pool;

const inTime = { timeoutMs: 10_000, intervalMs: 25 };

// Cached credentials: the tests are about exports, not password hashing.
const CACHED = { AUTH_CACHE_TTL_MS: '600000' };

describe('lead exports on a small pool', () => {
  // Two connections for small requests, two for exports, and room to admit a dozen exports:
  // the exports wait for the export pool, one connection each, and never for a second one.
  const { t, w } = useTestWorld({
    ...CACHED,
    DB_POOL_MAX: '2',
    EXPORT_POOL_MAX: '2',
    EXPORT_MAX_CONCURRENT: '20',
    EXPORT_MAX_PER_ACCOUNT: '20',
    EXPORT_ACQUIRE_TIMEOUT_MS: '30000',
    // Batches smaller than the result: each cursor stays open (holding its connection) after its first batch.
    CURSOR_BATCH_SIZE: '50',
  });
  let base: string;
  beforeAll(async () => {
    await insertLeads(t, w, 300);
    await t.load({ type: 'savedSearch', user: w.users.agent, name: `all ${w.id}`, campaigns: [w.campaigns.b2b] });
    base = (await t.listen()).url;
  });

  it('when twelve lead exports of every kind run at once, then every one completes and /readyz answers meanwhile', async () => {
    const paths = [
      `/api/simpleleads?Projects=${encodeURIComponent(w.projects.b2b)}`,
      `/api/simpleleads?Campaigns=${w.campaigns.b2b}&Include=ownerOrganizationalUnit`,
      `/api/rawleads?Campaigns=${w.campaigns.b2b}`,
      `/api/leads?searchName=${encodeURIComponent(`all ${w.id}`)}&modifiedFrom=2026-01-01`,
      `/api/leads/csv?searchName=${encodeURIComponent(`all ${w.id}`)}&modifiedFrom=2026-01-01`,
      `/api/calls?${callsWindow(w)}`,
    ];
    const auth = { Authorization: w.accounts.full.auth };
    const exports = Array.from({ length: 12 }, (_, i) => getFully(base, paths[i % paths.length]!, auth));
    const ready = await request(t.app).get('/api/readyz');
    const results = await Promise.all(exports);
    expect(ready.status).toBe(200);
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(results.every((r) => r.complete)).toBe(true);
    const simple = JSON.parse(results[0]!.body.toString('utf8')) as unknown[];
    expect(simple).toHaveLength(300);
    // The rows and their lookups came from one snapshot: every lead names its pool.
    expect(simple.every((l) => (l as { pool?: string }).pool === `Bulk ${w.id}`)).toBe(true);
    await until('both pools idle', () => poolOf(t.composed.services.exportDb).numUsed() === 0 && poolOf(t.db).numUsed() === 0, inTime);
  });
});

describe('export admission: per-account and global caps', () => {
  const { t, w } = useTestWorld({
    ...CACHED,
    EXPORT_MAX_PER_ACCOUNT: '2',
    EXPORT_MAX_CONCURRENT: '3',
    EXPORT_POOL_MAX: '3',
  });
  let base: string;
  beforeAll(async () => {
    await insertCalls(t, w, 30_000);
    base = (await t.listen()).url;
  }, 120_000);

  it('when an account or the process runs its most exports, then one more is a 429 or 503 with Retry-After, counted, while small requests are served', async () => {
    const path = `/api/calls?${callsWindow(w)}&Include=campaign,user`;
    const full = { Authorization: w.accounts.full.auth };
    const b2b = { Authorization: w.accounts.b2b.auth };
    const held: HeldResponse[] = [];
    try {
      held.push(await holdResponse(base, path, full), await holdResponse(base, path, full));
      expect(held.map((h) => h.status)).toEqual([200, 200]);

      const third = await request(t.app).get(path).set(full);
      expect(third.status).toBe(429);
      expect(third.headers['content-type']).toMatch(/application\/problem\+json/);
      expect((third.body as { code: string }).code).toBe('rate_limited');
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);

      held.push(await holdResponse(base, path, b2b));
      expect(held[2]!.status).toBe(200);
      const fourth = await request(t.app).get(path).set(b2b);
      expect(fourth.status).toBe(503);
      expect((fourth.body as { code: string }).code).toBe('service_unavailable');
      expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0);

      // Small requests and readiness do not wait behind the exports.
      expect((await request(t.app).get('/api/readyz')).status).toBe(200);
      expect((await request(t.app).get('/api/myaccount').set(b2b)).status).toBe(200);

      const metrics = (await request(t.app).get('/api/metrics')).text;
      expect(metrics).toMatch(/lcm_overload_refused_total\{reason="account"\} 1/);
      expect(metrics).toMatch(/lcm_overload_refused_total\{reason="global"\} 1/);
      expect(metrics).toMatch(/lcm_exports_running 3/);
    } finally {
      for (const h of held) h.destroy();
    }
    // Slots come back with the responses.
    await until('no export running', async () => (await request(t.app).get('/api/metrics')).text.includes('lcm_exports_running 0'), inTime);
    const after = await getFully(base, `/api/calls?${callsWindow(w)}&Limit=5`, full);
    expect(after.status).toBe(200);
    expect(JSON.parse(after.body.toString())).toHaveLength(5);
  });

  it('when clients leave their exports while their password is being checked, then each export gives its slot back', async () => {
    const path = `/api/calls?${callsWindow(w)}&Include=campaign`;
    const head = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${w.accounts.full.auth}\r\n\r\n`;
    // More than the account's cap of two: a slot kept by a client that left would refuse the last export.
    for (let i = 0; i < 3; i++) await leaveDuringPasswordCheck(t, Number(new URL(base).port), head);
    await until('no export running', async () => (await request(t.app).get('/api/metrics')).text.includes('lcm_exports_running 0'), inTime);
    const after = await getFully(base, `/api/calls?${callsWindow(w)}&Limit=5`, { Authorization: w.accounts.full.auth });
    expect(after.status).toBe(200);
  });

  it('when an export is refused for the caps, then the 429 and the 503 carry the rate-limit headers of the service, unspent', async () => {
    const path = `/api/calls?${callsWindow(w)}&Include=campaign`;
    const full = { Authorization: w.accounts.full.auth };
    const b2b = { Authorization: w.accounts.b2b.auth };
    const held: HeldResponse[] = [];
    try {
      held.push(await holdResponse(base, path, full), await holdResponse(base, path, full), await holdResponse(base, path, b2b));
      expect(held.map((h) => h.status)).toEqual([200, 200, 200]);
      for (const refused of [await request(t.app).get(path).set(full), await request(t.app).get(path).set(b2b)]) {
        expect([429, 503]).toContain(refused.status);
        expect(Number(refused.headers['x-rate-limit-limit'])).toBeGreaterThan(0);
        expect(refused.headers['x-rate-limit-remaining']).toMatch(/^\d+$/);
        expect(refused.headers['x-rate-limit-reset']).toMatch(/^\d+$/);
      }
      // Refusals spend nothing: two in a row show the same remainder.
      const [first, second] = [await request(t.app).get(path).set(b2b), await request(t.app).get(path).set(b2b)];
      expect(first.headers['x-rate-limit-remaining']).toBe(second.headers['x-rate-limit-remaining']);
    } finally {
      for (const h of held) h.destroy();
    }
    await until('no export running', async () => (await request(t.app).get('/api/metrics')).text.includes('lcm_exports_running 0'), inTime);
  });
});

describe('connections not had in time', () => {
  const { t, w } = useTestWorld({
    ...CACHED,
    DB_POOL_MAX: '2',
    // Long enough for a new connection on a busy machine, short enough for a test.
    DB_ACQUIRE_TIMEOUT_MS: '1500',
    EXPORT_POOL_MAX: '1',
    EXPORT_ACQUIRE_TIMEOUT_MS: '1500',
    EXPORT_MAX_CONCURRENT: '5',
    EXPORT_MAX_PER_ACCOUNT: '5',
  });
  let base: string;
  beforeAll(async () => {
    await insertCalls(t, w, 30_000);
    base = (await t.listen()).url;
  }, 120_000);

  it('when the export pool has no connection free within its acquire timeout, then an export is a 503 with Retry-After', async () => {
    const path = `/api/calls?${callsWindow(w)}&Include=campaign,user`;
    const held = await holdResponse(base, path, { Authorization: w.accounts.full.auth });
    try {
      expect(held.status).toBe(200);
      const res = await request(t.app).get(path).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(503);
      expect((res.body as { code: string }).code).toBe('service_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      // The export held its connection from the export pool, not from the small requests' pool.
      expect((await request(t.app).get('/api/readyz')).status).toBe(200);
      expect((await request(t.app).get('/api/metrics')).text).toMatch(/lcm_overload_refused_total\{reason="connection"\} 1/);
    } finally {
      held.destroy();
    }
  });

  it('when every connection of the main pool is taken, then a small request is a 503 with Retry-After, not a 500 after a minute', async () => {
    const client = t.db.client as { acquireConnection(): Promise<unknown>; releaseConnection(connection: unknown): Promise<unknown> };
    const taken = [await client.acquireConnection(), await client.acquireConnection()];
    try {
      const res = await request(t.app).get('/api/campaigns').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(503);
      expect((res.body as { code: string }).code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      for (const c of taken) await client.releaseConnection(c);
    }
    expect((await request(t.app).get('/api/campaigns').set('Authorization', w.accounts.full.auth)).status).toBe(200);
  });
});

describe('clients that stop reading', () => {
  const { t, w } = useTestWorld({
    ...CACHED,
    EXPORT_POOL_MAX: '1',
    EXPORT_STALL_TIMEOUT_MS: '3000',
  });
  let base: string;
  beforeAll(async () => {
    await insertCalls(t, w, 30_000);
    base = (await t.listen()).url;
  }, 120_000);

  it('when a client takes no data for the stall timeout, then its response is cut and the export connection released', async () => {
    const path = `/api/calls?${callsWindow(w)}&Include=campaign,user`;
    const auth = { Authorization: w.accounts.full.auth };
    const held = await holdResponse(base, path, auth);
    if (held.status !== 200) held.destroy();
    expect(held.status).toBe(200);
    // The server gives the export's connection back by itself while the client still holds its socket.
    await until('the export connection back in its pool', () => poolOf(t.composed.services.exportDb).numUsed() === 0, inTime);
    // What the client had not read yet ends without the body's end: it can tell it was cut.
    held.resume();
    expect(await held.closed).toBe(false);
    const next = await getFully(base, `/api/calls?${callsWindow(w)}&Limit=3`, auth);
    expect(next.status).toBe(200);
    expect(JSON.parse(next.body.toString())).toHaveLength(3);
  });

  it('when a client reads slowly but steadily, then its export is not cut', async () => {
    const held = await holdResponse(base, `/api/calls?${callsWindow(w)}&Include=campaign,user`, { Authorization: w.accounts.full.auth });
    // Read in bursts of 2 MB, each followed by 300 ms of nothing: a client that reads slowly
    // and steadily. Counted in bytes, not time, so a fast server cannot finish the body in one
    // burst. The server sees its socket writable again only once about half its send buffer
    // (megabytes on loopback) is taken, several bursts later: the stall timeout stays well above that.
    let pauses = 0;
    let inBurst = 0;
    held.res.on('data', (chunk: Buffer) => {
      inBurst += chunk.length;
      if (inBurst < 2 * 1024 * 1024) return;
      inBurst = 0;
      held.res.pause();
      pauses++;
      setTimeout(() => held.res.resume(), 300);
    });
    held.res.resume();
    const reader = Promise.resolve();
    const complete = await held.closed;
    await reader;
    // The pauses add up to more than the stall timeout, and the download still completed.
    expect(pauses * 300).toBeGreaterThan(3000);
    expect(complete).toBe(true);
  });
});
