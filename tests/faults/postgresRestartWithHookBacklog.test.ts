import type { Knex } from 'knex';
import { createDb } from '../../src/data/db';
import type { World } from '../harness/world';
import type { RestartablePostgres } from '../harness/restartablePostgres';
import { startWorldOnRestartablePostgres } from '../harness/restartableWorld';
import { startHookReceiver, HookReceiver } from '../harness/hookReceiver';
import { processGroup } from '../harness/processGroup';
import { until } from '../harness/until';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: Postgres is restarted in immediate mode (no checkpoint, sessions cut, crash recovery
 * at the start) while `lcm serve` has a backlog of hook deliveries to a receiver that never
 * answers: 2,000 `lead.created` deliveries, the jobs process holding some in flight and more
 * fetched into the job queue's local queue. Every process of `lcm serve` (the supervisor and
 * each worker it forked) must still be the same process 15 s later, readiness must answer 200,
 * and once the receiver answers the whole backlog must be delivered.
 *
 * What breaks it: an error of the job queue library that ends the jobs process (its local
 * queue failing to hand its jobs back, its pool shutting down on a failed batch, an unhandled
 * rejection or an 'error' event of its pg pool); a jobs process whose worker pool stopped and
 * is not started again (the backlog stays pending); jobs left locked by a pool that is gone.
 */
const ZONE = 'Europe/Copenhagen';
const LEADS = 2_000;
const WATCH_MS = 15_000;
const DOWN_MS = 4_000;
const DELIVERY_DEADLINE_MS = 150_000;

/** Checks every 250 ms; a check that fails (the server or Postgres away) counts as not yet. */
const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 250, ignoreErrors: true });

describe('Postgres restarted with a backlog of hook deliveries', () => {
  let pg: RestartablePostgres | undefined;
  let db: Knex | undefined;
  let node: ApiNode | undefined;
  let receiver: HookReceiver | undefined;
  let w: World;
  let answering = false;
  let requests = 0;
  const delivered = new Set<string>();

  afterAll(async () => {
    await node?.stop();
    await receiver?.close();
    await db?.destroy();
    await pg?.destroy();
  });

  beforeAll(async () => {
    ({ pg, w } = await startWorldOnRestartablePostgres());
    db = createDb({ url: pg.url, timezone: ZONE, poolMax: 2 });
    receiver = await startHookReceiver();
    receiver.behave('/never', (n, req) => {
      requests = n;
      if (!answering) return { hang: true };
      delivered.add(String(req.headers['webhook-id']));
      return { status: 204 };
    });
    node = await startApiNode('hook-backlog', {
      DATABASE_URL: pg.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      HOOKS_ALLOW_HTTP: 'true',
      HOOKS_ALLOWED_HOSTS: '127.0.0.1',
      // Retries come due within seconds, so the backlog drains soon after the receiver answers.
      HOOKS_RETRY_BASE_MS: '1000',
      HOOKS_RETRY_MAX_DELAY_MS: '4000',
      // Attempts to the silent receiver end (time out) every few seconds, so some end while Postgres is down.
      HOOKS_TIMEOUT_MS: '3000',
      AUTH_CACHE_TTL_MS: '600000',
    });
  }, 180_000);

  it('when Postgres restarts (immediate) under a backlog to a receiver that never answers, then every process keeps running, readiness is 200, and the backlog is delivered once the receiver answers', async () => {
    const url = node!.url;
    const auth = { Authorization: w.accounts.full.auth };
    const created = await fetch(`${url}/api/hooks`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'never answers', url: `${receiver!.url}/never`, events: ['lead.created'] }),
    });
    const hook = (await created.json()) as { uniqueId: string; secret: string };
    expect(created.status).toBe(201);
    receiver!.secret('/never', hook.secret);

    const rows = Array.from(
      { length: LEADS },
      (_, i) => JSON.stringify({ Name: `Lead ${i}`, Telefon: '+45 1234', Customer: `c-${i}` }) + '\n',
    );
    const imported = await fetch(`${url}/api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)}`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/x-ndjson' },
      body: rows.join(''),
    });
    const answer = await imported.text();
    expect({ status: imported.status, failed: (answer.match(/"success":false/g) ?? []).length }).toEqual({ status: 200, failed: 0 });
    // The premise: deliveries hang at the receiver, and the backlog waits in the queue.
    await until('deliveries hanging at the receiver', () => requests >= 4, within(30_000));

    const before = processGroup(node!.pid);
    expect(before.length).toBeGreaterThanOrEqual(3); // the supervisor, an HTTP worker and the jobs process at least
    await pg!.stop('immediate');
    // Down for longer than an attempt's deadline: attempts end, and the queue fails to record them.
    await new Promise((r) => setTimeout(r, DOWN_MS));
    await pg!.start();

    const watchUntil = Date.now() + WATCH_MS;
    while (Date.now() < watchUntil) {
      expect({ running: node!.running(), processes: processGroup(node!.pid) }).toEqual({ running: true, processes: before });
      await new Promise((r) => setTimeout(r, 500));
    }
    await until('readiness after the restart', async () => (await fetch(url + '/api/readyz')).status === 200, within(30_000));
    expect(processGroup(node!.pid)).toEqual(before);

    answering = true;
    await until(
      `the backlog of ${LEADS} delivered`,
      async () => {
        const { rows: counts } = await db!.raw<{ rows: { n: number }[] }>(
          `select count(*)::int as n from hook_deliveries d join hooks h on h.id = d.hook_id where h.unique_id = ? and d.status = 'delivered'`,
          [hook.uniqueId],
        );
        return counts[0]!.n === LEADS;
      },
      within(DELIVERY_DEADLINE_MS),
    ).catch(async (err: Error) => {
      // What was left, to tell a slow drain from deliveries that lost their queue job.
      const { rows: left } = await db!.raw<{ rows: unknown[] }>(
        `select d.status, count(*)::int as deliveries,
                count(*) filter (where exists (select 1 from graphile_worker.jobs j where j.key = 'hook-delivery:' || d.id))::int as with_job,
                min(d.next_attempt_time) as next_attempt
           from hook_deliveries d join hooks h on h.id = d.hook_id where h.unique_id = ? group by d.status`,
        [hook.uniqueId],
      );
      const { rows: hookRow } = await db!.raw<{ rows: unknown[] }>(
        `select enabled, paused_until, consecutive_failures from hooks where unique_id = ?`,
        [hook.uniqueId],
      );
      throw new Error(
        `${err.message}; deliveries by status: ${JSON.stringify(left)}; hook: ${JSON.stringify(hookRow)}; receiver requests ${requests}`,
      );
    });
    expect(delivered.size).toBe(LEADS);
    expect(processGroup(node!.pid)).toEqual(before);
    expect(node!.output()).not.toMatch(/worker ended unexpectedly|uncaught|unhandled/i);
  }, 300_000);
});
