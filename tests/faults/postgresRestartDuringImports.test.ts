import type { Knex } from 'knex';
import { createDb } from '../../src/data/db';
import type { World } from '../harness/world';
import type { RestartablePostgres } from '../harness/restartablePostgres';
import { startWorldOnRestartablePostgres } from '../harness/restartableWorld';
import { until } from '../harness/until';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: Postgres is stopped (fast, then immediate) while 8 clients import leads one at a time,
 * each with its own Idempotency-Key. Every import answered 200 must be stored; every other
 * answer must be a 503 with Retry-After (never a 500); and sending each unanswered request again
 * with its key afterwards stores its lead, so that in the end each lead is stored exactly once.
 *
 * What breaks it: an answer sent after a COMMIT that failed (knex's `trx.commit()` resolves
 * then, src/data/transactions.ts), which acknowledges a lead Postgres rolled back; a request
 * begun as the connection dropped answered 500 instead of 503.
 */
const ZONE = 'Europe/Copenhagen';
const CLIENTS = 8;
const DOWN_MS = 1_500;

interface Sent {
  key: string;
  customer: string;
  status?: number;
  uniqueId?: string;
  retryAfter?: string | null;
}

describe('Postgres stopped under concurrent single imports', () => {
  let pg: RestartablePostgres | undefined;
  let db: Knex | undefined;
  let node: ApiNode | undefined;
  let w: World;

  afterAll(async () => {
    await node?.stop();
    await db?.destroy();
    await pg?.destroy();
  });

  beforeAll(async () => {
    ({ pg, w } = await startWorldOnRestartablePostgres());
    db = createDb({ url: pg.url, timezone: ZONE, poolMax: 2 });
    node = await startApiNode('restart-imports', {
      DATABASE_URL: pg.url,
      // Requests counted in this Postgres: the shared test Redis keys counts by account id, and
      // the next file's fresh database numbers its accounts from 1 again.
      REDIS_URL: '',
      AUTH_CACHE_TTL_MS: '600000',
      // Thousands of imports and their retries: the account's daily quota must not end them.
      DEFAULT_DAILY_LIMIT: '100000000',
    });
  }, 180_000);

  it('when Postgres stops and starts twice under keyed imports, then every acknowledged lead is stored, every refusal is a 503, and the retries store each lead once', async () => {
    const url = node!.url;
    const sent: Sent[] = [];
    let running = true;
    const send = async (s: Sent): Promise<void> => {
      const res = await fetch(`${url}/api/leads`, {
        method: 'POST',
        headers: { Authorization: w.accounts.full.auth, 'Content-Type': 'application/json', 'Idempotency-Key': s.key },
        body: JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Restart', Telefon: '+45 1234', Customer: s.customer } }),
      });
      const body = (await res.json()) as { success?: boolean; uniqueId?: string };
      s.status = res.status;
      s.retryAfter = res.headers.get('retry-after');
      if (res.status === 200 && body.success) s.uniqueId = body.uniqueId;
    };
    const client = async (c: number) => {
      for (let i = 0; running; i++) {
        const s: Sent = { key: `restart-${c}-${i}`, customer: `restart-${c}-${i}` };
        sent.push(s);
        await send(s).catch(() => undefined);
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    const acknowledged = () => sent.filter((s) => s.uniqueId !== undefined).length;
    for (const mode of ['fast', 'immediate'] as const) {
      const before = acknowledged();
      await until('imports answered before the stop', () => acknowledged() >= before + 200, { timeoutMs: 60_000, intervalMs: 50 });
      await pg!.stop(mode);
      await new Promise((r) => setTimeout(r, DOWN_MS));
      await pg!.start();
    }
    const afterRestarts = acknowledged();
    await until('imports answered after the restarts', () => acknowledged() >= afterRestarts + 100, { timeoutMs: 60_000, intervalMs: 50 });
    running = false;
    await Promise.all(clients);

    const refused = sent.filter((s) => s.status !== undefined && s.status !== 200);
    expect(refused.filter((s) => s.status !== 503 || s.retryAfter !== '2')).toEqual([]);
    // The premise: the stops came while imports were under way.
    expect(refused.length).toBeGreaterThan(0);

    const storedIds = async (): Promise<Map<string, string[]>> => {
      const rows = await db!('leads')
        .whereLike('external_key', 'restart-%')
        .select<{ external_key: string; unique_id: string }[]>('external_key', 'unique_id');
      const byCustomer = new Map<string, string[]>();
      for (const r of rows) byCustomer.set(r.external_key, [...(byCustomer.get(r.external_key) ?? []), r.unique_id]);
      return byCustomer;
    };
    const stored = await storedIds();
    const lost = sent.filter((s) => s.uniqueId !== undefined && !stored.get(s.customer)?.includes(s.uniqueId));
    expect(lost.map((s) => s.key)).toEqual([]);

    // Every request not acknowledged (refused, or cut off) again with its key: each lead once.
    for (const s of sent.filter((x) => x.uniqueId === undefined)) await send(s);
    expect(sent.filter((s) => s.status !== 200).map((s) => `${s.key}: ${s.status}`)).toEqual([]);
    const final = await storedIds();
    expect(final.size).toBe(sent.length);
    expect([...final.values()].filter((ids) => ids.length !== 1)).toEqual([]);
    expect(node!.output()).not.toMatch(/worker ended unexpectedly|uncaught|unhandled/i);
  });
});
