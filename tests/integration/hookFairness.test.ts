import request from 'supertest';
import { createOwnDatabase, createTestApp, TestApp } from '../harness/testApp';
import { createWorld, World } from '../harness/world';
import { startHookReceiver, HookReceiver, ReceivedDelivery } from '../harness/hookReceiver';
import { untilValue } from '../harness/until';
import { startHookWorker, HookWorker } from '../../src/jobs/hookWorker';
import { createLogger } from '../../src/config/logger';
import { queueTestDelivery } from '../../src/data/hookRepository';
import { sampleLeadSnapshot } from '../../src/domain/hookMessages';

/**
 * Fair delivery: a dead receiver holds at most HOOKS_MAX_PER_HOOK of a worker's slots, so
 * another account's healthy hook is served while the dead one has a backlog; a hook whose last
 * attempts all failed is paused as a whole (circuit breaker) and resumes once its receiver
 * answers; an address the SSRF rules refuse fails the delivery at once and shows on the hook.
 */
const MAX_PER_HOOK = 3;
const BREAKER_FAILURES = 3;
const TIMEOUT_MS = 8_000;

interface HookView {
  uniqueId: string;
  pausedUntil?: string;
  consecutiveFailures: number;
  refusedReason?: string;
}

/** Most requests open at once among those received (each from its arrival to its answer or close). */
function mostAtOnce(list: ReceivedDelivery[]): number {
  const edges = list.flatMap((d): [number, number][] => [
    [d.receivedAt, 1],
    [d.answeredAt ?? Number.MAX_SAFE_INTEGER, -1],
  ]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (open += step));
  return most;
}

describe('fair hook delivery', () => {
  let t: TestApp;
  let w: World;
  let receiver: HookReceiver;
  let worker: HookWorker;
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;

  beforeAll(async () => {
    own = await createOwnDatabase('hook_fairness');
    t = await createTestApp({
      DATABASE_URL: own.url,
      HOOKS_ALLOW_HTTP: 'true',
      HOOKS_ALLOWED_HOSTS: '127.0.0.1',
      HOOKS_CONCURRENCY: '12',
      HOOKS_MAX_PER_HOOK: String(MAX_PER_HOOK),
      HOOKS_BREAKER_FAILURES: String(BREAKER_FAILURES),
      HOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
      HOOKS_RETRY_BASE_MS: '3000',
      HOOKS_RETRY_MAX_DELAY_MS: '6000',
      HOOKS_POLL_INTERVAL_MS: '200',
    });
    w = await createWorld(t);
    receiver = await startHookReceiver();
    worker = await startHookWorker({ db: t.db, settings: t.settings, logger: createLogger('silent') });
  });
  afterAll(async () => {
    await worker.stop();
    await receiver.close();
    await t.close();
    await own.drop();
  });

  async function makeHook(path: string, auth: string): Promise<string> {
    const res = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', auth)
      .send({ name: path, url: `${receiver.url}${path}` });
    expect(res.status).toBe(201);
    const hook = res.body as { uniqueId: string; secret: string };
    receiver.secret(path, hook.secret);
    return hook.uniqueId;
  }
  /** A test delivery queued as POST /hooks/{UniqueId}/test queues it, without the HTTP round trip. */
  const queueSample = async (hookId: string) => {
    const row = (await t.db<{ id: number; unique_id: string }>('hooks').where({ unique_id: hookId }).first('id'))!;
    const sample = sampleLeadSnapshot({ now: Date.now() });
    return (await queueTestDelivery(t.db, row.id, { ...sample.snapshot, sampleFields: sample.fields } as never, new Date()))!;
  };
  const test = async (hookId: string, auth: string) => {
    const res = await request(t.app).post(`/api/hooks/${hookId}/test`).set('Authorization', auth);
    expect(res.status).toBe(202);
    return (res.body as { deliveryId: string }).deliveryId;
  };
  const view = async (hookId: string, auth: string) =>
    (await request(t.app).get(`/api/hooks/${hookId}`).set('Authorization', auth)).body as HookView;
  const deliveryOf = (uniqueId: string) =>
    t
      .db<{ unique_id: string; status: string; attempts: number; next_attempt_time: Date | null }>('hook_deliveries')
      .where({ unique_id: uniqueId })
      .first('status', 'attempts', 'next_attempt_time');
  /** Checks every 100 ms, 30 s unless given. */
  const within = (timeoutMs = 30_000) => ({ timeoutMs, intervalMs: 100 });

  it('when one account’s receiver never answers and has a backlog, then it holds at most HOOKS_MAX_PER_HOOK attempts and another account’s hook is delivered meanwhile', async () => {
    receiver.behave('/dead', { hang: true });
    const dead = await makeHook('/dead', w.accounts.full.auth);
    const healthy = await makeHook('/healthy', w.accounts.b2b.auth);
    // Queued straight into the database, the backlog first: well within one attempt's deadline.
    for (let i = 0; i < 20; i++) await queueSample(dead);
    const healthyIds: string[] = [];
    for (let i = 0; i < 5; i++) healthyIds.push(await queueSample(healthy));

    const got = await receiver.waitFor('/healthy', 5, 30_000);
    expect(new Set(got.map((g) => g.headers['webhook-id']))).toEqual(new Set(healthyIds));
    // The healthy deliveries arrived while the dead hook's first attempts were still hanging.
    const firstDeadAnswer = await untilValue(
      'the first dead attempt to end',
      () => receiver.at('/dead'),
      (l) => l.length >= 1,
      within(),
    );
    expect(Math.max(...got.map((g) => g.receivedAt))).toBeLessThan(Math.min(...firstDeadAnswer.map((d) => d.answeredAt!)));
    // At most MAX_PER_HOOK of the dead hook's attempts were open at once, although 12 slots were free.
    await untilValue(
      'a second round of dead attempts',
      () => receiver.at('/dead').length,
      (n) => n >= MAX_PER_HOOK,
      within(),
    );
    expect(mostAtOnce(receiver.at('/dead'))).toBeLessThanOrEqual(MAX_PER_HOOK);

    // Deleting the hook with attempts in flight cancels its backlog; the attempts that end afterwards find nothing to record.
    const del = await request(t.app).delete(`/api/hooks/${dead}`).set('Authorization', w.accounts.full.auth);
    expect(del.status).toBe(204);
    const queued = await t.db.raw<{ rows: { n: number }[] }>(
      `select count(*)::int as n from graphile_worker.jobs where task_identifier = 'hook_deliver' and locked_at is null and attempts < max_attempts
          and key like 'hook-delivery:%'
          and not exists (select 1 from hook_deliveries d where 'hook-delivery:' || d.id = key)`,
    );
    expect(queued.rows[0]!.n).toBe(0);
  }, 120_000);

  it('when a hook’s attempts all fail, then the breaker pauses the hook as a whole and closes again once its receiver answers', async () => {
    let failing = true;
    receiver.behave('/flaky', () => (failing ? { status: 503 } : { status: 200 }));
    const hook = await makeHook('/flaky', w.accounts.full.auth);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await test(hook, w.accounts.full.auth));

    const paused = await untilValue(
      'the breaker to open',
      () => view(hook, w.accounts.full.auth),
      (h) => h.pausedUntil !== undefined,
      within(),
    );
    expect(paused.consecutiveFailures).toBeGreaterThanOrEqual(BREAKER_FAILURES);
    const pausedUntil = Date.parse(paused.pausedUntil!);
    const sentBeforePause = receiver.at('/flaky').length;
    // Paused as a whole: far fewer attempts than deliveries, none of them during the pause.
    expect(sentBeforePause).toBeLessThan(ids.length);
    failing = false;
    await receiver.waitFor('/flaky', sentBeforePause + 1, 30_000);
    const resumed = receiver.at('/flaky').slice(sentBeforePause);
    expect(Math.min(...resumed.map((r) => r.receivedAt))).toBeGreaterThanOrEqual(pausedUntil - 50);

    await untilValue(
      'every delivery delivered',
      () => Promise.all(ids.map(deliveryOf)),
      (rows) => rows.every((r) => r?.status === 'delivered'),
      within(60_000),
    );
    const closed = await view(hook, w.accounts.full.auth);
    expect(closed.pausedUntil).toBeUndefined();
    expect(closed.consecutiveFailures).toBe(0);
  }, 90_000);

  it('when a delivery’s address is refused by the SSRF rules, then it fails at once without retries and the hook shows why', async () => {
    // A name that resolves to loopback only now (its DNS changed since the hook was made):
    // `localhost` is refused when a hook is made, so the stored URL is changed behind the API.
    // Only 127.0.0.1 is on this server's allow-list.
    const hook = await makeHook('/refused', w.accounts.full.auth);
    await t
      .db('hooks')
      .where({ unique_id: hook })
      .update({ url: `http://localhost:${receiver.port}/refused` });
    const id = await test(hook, w.accounts.full.auth);
    const row = await untilValue(
      'the delivery to finish',
      () => deliveryOf(id),
      (r) => r !== undefined && r.status !== 'pending',
      within(),
    );
    expect(row).toMatchObject({ status: 'failed', attempts: 1, next_attempt_time: null });
    const shown = await view(hook, w.accounts.full.auth);
    expect(shown.refusedReason).toMatch(/loopback/);
    expect(shown.refusedReason).toMatch(/HOOKS_ALLOWED_HOSTS=localhost/);
    expect(shown.refusedReason).toMatch(/HOOKS_ALLOW_HTTP=true/);
    expect(receiver.at('/refused')).toHaveLength(0);
  });
});
