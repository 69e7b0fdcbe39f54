import request from 'supertest';
import { createOwnDatabase, createTestApp, TestApp } from '../harness/testApp';
import { createWorld, World } from '../harness/world';
import { startHookReceiver, HookReceiver } from '../harness/hookReceiver';
import { untilValue } from '../harness/until';
import { createDb } from '../../src/data/db';
import { startHookWorker, HookWorker } from '../../src/jobs/hookWorker';
import { createLogger } from '../../src/config/logger';
import { lockDeliveryClaims, queueTestDelivery } from '../../src/data/hookRepository';
import { claimDeliveryAttempts, recordDeliveredAttempts } from '../../src/data/hookDeliveryRepository';
import { sampleLeadSnapshot } from '../../src/domain/hookMessages';
import type { z } from 'zod';
import type { deliveryListOut } from '../../src/http/schemas/hooks';

/**
 * Delivery: a real worker pool sends to a real local receiver that verifies every request with
 * the standardwebhooks package. Retries, back-off, giving up and disabling run on an injected
 * clock; the queue's own reschedule_jobs brings each scheduled retry forward.
 */
interface HookRow {
  id: number;
  unique_id: string;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
}
interface DeliveryRow {
  id: number;
  unique_id: string;
  hook_id: number;
  status: string;
  attempts: number;
  next_attempt_time: Date | null;
  last_error: string | null;
}
interface AttemptRow {
  delivery_id: number;
  attempt: number;
  attempt_time: Date;
  outcome: string;
  status_code: number | null;
  duration_ms: number | null;
  error: string | null;
  response_body: string | null;
  next_attempt_time: Date | null;
}
type DeliveryLog = z.infer<typeof deliveryListOut>;

/** Claim rules of a direct claim: a lease as the workers take it, and no hook or account near its fill. */
const CLAIM_RULES = { leaseMs: 25_000, maxInFlight: 8, busyDelayMs: () => 500 };

const RETRY_BASE_MS = 4000;
/**
 * Long enough that a busy machine never turns a slow answer or a DNS lookup into a timeout, and
 * that hanging receivers are still held open when a later hook's delivery arrives, however
 * loaded the machine (the hang test posts several deliveries before that one).
 */
const TIMEOUT_MS = 10_000;
const HOOK_ENV = {
  HOOKS_ALLOW_HTTP: 'true',
  HOOKS_ALLOWED_HOSTS: '127.0.0.1',
  HOOKS_TIMEOUT_MS: String(TIMEOUT_MS),
  // The back-off test moves its clock to each scheduled retry and brings the job forward itself;
  // a base far above its polling keeps the queue's own real-time retry from running first (with
  // the clock not yet moved), even on a loaded machine.
  HOOKS_RETRY_BASE_MS: String(RETRY_BASE_MS),
  HOOKS_POLL_INTERVAL_MS: '100',
  HOOKS_CONCURRENCY: '8',
};

describe('hook delivery', () => {
  let t: TestApp;
  let w: World;
  let receiver: HookReceiver;
  let worker: HookWorker;
  let clockMs: number | undefined;

  // A database of this file's own: other files' workers must not take these jobs, nor these workers theirs.
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;

  beforeAll(async () => {
    own = await createOwnDatabase('hook_delivery');
    t = await createTestApp({ ...HOOK_ENV, DATABASE_URL: own.url });
    w = await createWorld(t);
    receiver = await startHookReceiver();
    worker = await startHookWorker({
      db: t.db,
      settings: t.settings,
      logger: createLogger('warn'),
      registry: t.composed.app.metrics.registry,
      clock: () => (clockMs === undefined ? new Date() : new Date(clockMs)),
    });
  });
  afterAll(async () => {
    await worker.stop();
    await receiver.close();
    await t.close();
    await own.drop();
  });

  async function makeHook(path: string, extra: Record<string, unknown> = {}, auth = w.accounts.full.auth) {
    // Narrowed to this file's campaign: lead events of files running alongside never reach these hooks.
    const res = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', auth)
      .send({ name: path, url: `${receiver.url}${path}`, campaignCode: w.campaigns.b2b, ...extra });
    expect(res.status).toBe(201);
    const hook = res.body as { uniqueId: string; secret: string };
    receiver.secret(path, hook.secret);
    return hook;
  }
  const test = async (hookId: string) => {
    const res = await request(t.app).post(`/api/hooks/${hookId}/test`).set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(202);
    return (res.body as { deliveryId: string }).deliveryId;
  };
  const delivery = async (uniqueId: string) => (await t.db<DeliveryRow>('hook_deliveries').where({ unique_id: uniqueId }).first())!;
  const inTime = { timeoutMs: 15_000 };
  /** Brings the delivery's scheduled retry job forward to now (the queue's own function). */
  const runRetryNow = (deliveryId: number) =>
    t.db.raw(`select graphile_worker.reschedule_jobs(array(select id from graphile_worker.jobs where key = ?), run_at => now())`, [
      `hook-delivery:${deliveryId}`,
    ]);

  it('when a test delivery is queued, then the receiver gets a signed envelope and the log shows it delivered', async () => {
    const hook = await makeHook('/basic');
    const id = await test(hook.uniqueId);
    const [got] = await receiver.waitFor('/basic', 1);
    expect(got!.verified).toBe(true);
    expect(got!.headers['webhook-id']).toBe(id);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.json).toMatchObject({ type: 'hook.test', data: { status: 'UserProcessed', data: { Name: 'Jane Doe' } } });
    const log = await untilValue(
      'the log to show the delivery delivered',
      () => request(t.app).get(`/api/hooks/${hook.uniqueId}/deliveries`).set('Authorization', w.accounts.full.auth),
      (r) => (r.body as DeliveryLog)[0]?.status === 'delivered',
      inTime,
    );
    const [entry] = log.body as DeliveryLog;
    expect(entry).toMatchObject({ deliveryId: id, eventType: 'hook.test', status: 'delivered', attempts: 1, lastStatusCode: 200 });
    expect(entry!.attemptLog[0]).toMatchObject({ attempt: 1, outcome: 'delivered', statusCode: 200, responseBody: 'ok' });
    const metrics = await request(t.app).get('/api/metrics');
    expect(metrics.text).toMatch(/lcm_hook_deliveries_total\{outcome="delivered"\} [1-9]/);
    expect(metrics.text).toMatch(/lcm_hook_deliveries_pending \d+/);
    expect(metrics.text).toMatch(/lcm_hook_oldest_due_delivery_age_seconds [\d.]+/);
  });

  it('when many deliveries are due at once, then each is sent once with one attempt, and a late record of an attempt already recorded is left out', async () => {
    const hook = await makeHook('/many');
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await test(hook.uniqueId));
    const got = await receiver.waitFor('/many', 12);
    expect(got.every((g) => g.verified)).toBe(true);
    expect(new Set(got.map((g) => g.headers['webhook-id']))).toEqual(new Set(ids));
    const rows = await untilValue(
      'the 12 deliveries delivered',
      () => t.db<DeliveryRow>('hook_deliveries').whereIn('unique_id', ids).select('id', 'hook_id', 'status', 'attempts'),
      (rs) => rs.length === 12 && rs.every((r) => r.status === 'delivered'),
      inTime,
    );
    expect(rows.map((r) => r.attempts)).toEqual(Array(12).fill(1));
    const attemptRows = () =>
      t
        .db<AttemptRow>('hook_delivery_attempts')
        .whereIn(
          'delivery_id',
          rows.map((r) => r.id),
        )
        .select('delivery_id', 'attempt', 'outcome');
    expect(await attemptRows()).toHaveLength(12);
    expect(receiver.received.filter((r) => r.path === '/many')).toHaveLength(12);

    // A worker whose lease ran out records attempt 1 of three of them again, in one statement:
    // nothing of the stale attempts is written, and the statement does not fail.
    const late = rows.slice(0, 3);
    const recorded = await recordDeliveredAttempts(
      t.db,
      late.map((r) => ({
        deliveryId: r.id,
        hookId: r.hook_id,
        attempt: 1,
        attemptTime: new Date(),
        statusCode: 200,
        durationMs: 1,
        responseBody: 'late',
      })),
    );
    expect(recorded.size).toBe(0);
    const after = await attemptRows();
    expect(after).toHaveLength(12);
    expect(after.every((a) => a.attempt === 1 && a.outcome === 'delivered')).toBe(true);
    // Claiming those attempts again finds them done, each on its own conditions.
    const claims = await claimDeliveryAttempts(
      t.db,
      late.map((r) => ({ deliveryId: r.id, attempt: 1 })),
      CLAIM_RULES,
    );
    expect(claims.map((c) => c.kind)).toEqual(['done', 'done', 'done']);
    await expect(
      claimDeliveryAttempts(
        t.db,
        [late[0]!, late[0]!].map((r) => ({ deliveryId: r.id, attempt: 1 })),
        CLAIM_RULES,
      ),
    ).rejects.toThrow(/appears twice/);
  });

  it('when a delivery’s lease runs out while a claim of its next attempt waits for the account’s lock, then the attempt is busy (tried again), not done', async () => {
    const hook = await makeHook('/lease-ends');
    // The hook is paused, so the workers only put its delivery off and never send it.
    await t
      .db('hooks')
      .where({ unique_id: hook.uniqueId })
      .update({ paused_until: t.db.raw(`now() + interval '1 hour'`) });
    const row = await delivery(await test(hook.uniqueId));
    const { account_id: accountId } = await t.db('hooks').where({ id: row.hook_id }).first<{ account_id: number }>('account_id');
    let releaseLock!: () => void;
    let holder!: number;
    await new Promise<void>((resolve, reject) => {
      t.db
        .transaction(async (trx) => {
          await lockDeliveryClaims(trx, [accountId]);
          holder = (await trx.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid;
          resolve();
          await new Promise<void>((r) => (releaseLock = r));
        })
        .catch(reject);
    });
    // The claim runs on a pool of one connection, so its session is known: this file's own
    // workers also claim this account's deliveries and wait for the same lock.
    const claimDb = createDb({ url: own.url, timezone: 'Europe/Copenhagen', poolMax: 1 });
    try {
      const claimPid = (await claimDb.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const claim = claimDeliveryAttempts(claimDb, [{ deliveryId: row.id, attempt: 1 }], CLAIM_RULES);
      // A claim judges leases by its transaction's start. Once it waits for the lock, the
      // attempt's lease is made to end just after that start: held for the claim, over by now.
      const waiting = await untilValue(
        'the claim to wait for the lock',
        () =>
          t.db.raw<{ rows: { started: Date | null }[] }>(
            `select xact_start as started from pg_stat_activity where pid = ? and ? = any(pg_blocking_pids(pid))`,
            [claimPid, holder],
          ),
        (r) => r.rows[0]?.started != null,
        inTime,
      );
      await t.db.raw(`update hook_deliveries set in_flight_until = ?::timestamptz + interval '1 millisecond' where id = ?`, [
        waiting.rows[0]!.started,
        row.id,
      ]);
      releaseLock();
      expect((await claim).map((c) => c.kind)).toEqual(['busy']);
    } finally {
      releaseLock();
      await claimDb.destroy();
    }
    expect(await delivery(row.unique_id)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('when the receiver answers 500 and then 200, then the retry carries the same webhook-id and a valid signature', async () => {
    const hook = await makeHook('/flaky');
    receiver.behave('/flaky', (n) => (n === 1 ? { status: 500, body: 'x'.repeat(10_000) } : { status: 200 }));
    const id = await test(hook.uniqueId);
    const got = await receiver.waitFor('/flaky', 2);
    expect(got.map((g) => g.headers['webhook-id'])).toEqual([id, id]);
    expect(got.every((g) => g.verified)).toBe(true);
    const d = await untilValue(
      'the delivery delivered',
      () => delivery(id),
      (r) => r.status === 'delivered',
      inTime,
    );
    expect(d.attempts).toBe(2);
    const attempts = await t.db<AttemptRow>('hook_delivery_attempts').where({ delivery_id: d.id }).orderBy('attempt');
    expect(attempts.map((a) => a.outcome)).toEqual(['http_error', 'delivered']);
    expect(attempts[0]!.status_code).toBe(500);
    expect(attempts[0]!.response_body!.length).toBe(4096);
    // Equal jitter: the first retry waits between half and all of the base delay.
    const gap = attempts[1]!.attempt_time.getTime() - attempts[0]!.attempt_time.getTime();
    expect(gap).toBeGreaterThanOrEqual(RETRY_BASE_MS / 2);
  });

  it('when receivers hang, reset or fail, then another hook’s delivery still arrives at once', async () => {
    const hang = await makeHook('/hang');
    receiver.behave('/hang', { hang: true });
    const reset = await makeHook('/reset');
    receiver.behave('/reset', { reset: true });
    const slow = await makeHook('/slow');
    receiver.behave('/slow', { delayMs: 600 });
    const fine = await makeHook('/fine');
    for (const h of [hang, hang, reset, slow, slow]) await test(h.uniqueId);
    const fineId = await test(fine.uniqueId);
    const [fineGot] = await receiver.waitFor('/fine', 1);
    // Both hanging requests were still held open when /fine arrived: it did not wait behind them.
    const hangs = await receiver.waitFor('/hang', 2);
    for (const h of hangs.slice(0, 2)) expect(h.answeredAt!).toBeGreaterThan(fineGot!.receivedAt);
    expect((await receiver.waitFor('/slow', 2))[0]!.verified).toBe(true);
    const hangLog = await untilValue(
      "the hanging hook's two attempts logged",
      () =>
        t
          .db('hook_delivery_attempts as a')
          .join('hook_deliveries as d', 'd.id', 'a.delivery_id')
          .join('hooks as h', 'h.id', 'd.hook_id')
          .where('h.unique_id', hang.uniqueId)
          .select<Pick<AttemptRow, 'outcome' | 'duration_ms'>[]>('a.outcome', 'a.duration_ms'),
      (rows) => rows.length >= 2,
      inTime,
    );
    expect(hangLog[0]!.outcome).toBe('timeout');
    expect(hangLog[0]!.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 10);
    const resetLog = await untilValue(
      "the reset hook's attempt logged",
      () =>
        t
          .db('hook_delivery_attempts as a')
          .join('hook_deliveries as d', 'd.id', 'a.delivery_id')
          .join('hooks as h', 'h.id', 'd.hook_id')
          .where('h.unique_id', reset.uniqueId)
          .select<Pick<AttemptRow, 'outcome' | 'error'>[]>('a.outcome', 'a.error'),
      (rows) => rows.length >= 1,
      inTime,
    );
    expect(resetLog[0]!.outcome).toBe('network_error');
    expect((await delivery(fineId)).status).toBe('delivered');
  });

  it('when the URL’s host resolves to loopback and is not allow-listed, then nothing is sent and the attempt is refused', async () => {
    // A name that resolves to loopback only now (its DNS changed since the hook was made):
    // `localhost` is refused when a hook is made, so the stored URL is changed behind the API.
    // Only 127.0.0.1 is on this server's allow-list.
    const hook = await makeHook('/ssrf');
    await t
      .db('hooks')
      .where({ unique_id: hook.uniqueId })
      .update({ url: `http://localhost:${receiver.port}/ssrf` });
    const id = await test(hook.uniqueId);
    const d = await untilValue(
      'a first attempt',
      () => delivery(id),
      (r) => r.attempts >= 1,
      inTime,
    );
    const [attempt] = await t.db<AttemptRow>('hook_delivery_attempts').where({ delivery_id: d.id });
    expect(attempt!.outcome).toBe('refused');
    expect(attempt!.error).toMatch(/loopback/);
    expect(receiver.at('/ssrf')).toHaveLength(0);
  });

  it('when a delivered delivery is redelivered, then it is sent again with the same webhook-id', async () => {
    const hook = await makeHook('/again');
    const id = await test(hook.uniqueId);
    await receiver.waitFor('/again', 1);
    await untilValue(
      'the delivery delivered',
      () => delivery(id),
      (r) => r.status === 'delivered',
      inTime,
    );
    const res = await request(t.app)
      .post(`/api/hooks/${hook.uniqueId}/deliveries/${id}/redeliver`)
      .set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(202);
    const got = await receiver.waitFor('/again', 2);
    expect(got[1]!.headers['webhook-id']).toBe(id);
    expect(got[1]!.verified).toBe(true);
    expect(
      (
        await untilValue(
          'the delivery delivered at its second attempt',
          () => delivery(id),
          (r) => r.status === 'delivered' && r.attempts === 2,
          inTime,
        )
      ).attempts,
    ).toBe(2);
    const missing = await request(t.app)
      .post(`/api/hooks/${hook.uniqueId}/deliveries/msg_nope/redeliver`)
      .set('Authorization', w.accounts.full.auth);
    expect(missing.status).toBe(404);
  });

  it('when the hook’s account is disabled, then its deliveries are skipped and nothing is sent', async () => {
    const id = w.id;
    const auth = 'Basic ' + Buffer.from(`quiet-${id}:pw`).toString('base64');
    await t.load({
      type: 'account',
      username: `quiet-${id}`,
      password: 'pw',
      user: w.users.agent,
      projects: ['*'],
      rights: { WebHooks: ['Get', 'Post'], Leads: ['Get'] },
      entryAccess: 'None',
    });
    const hook = await makeHook('/quiet', {}, auth);
    await t
      .db('accounts')
      .where({ username: `quiet-${id}` })
      .update({ enabled: false });
    const hookRow = (await t.db<HookRow>('hooks').where({ unique_id: hook.uniqueId }).first('id'))!;
    const sample = sampleLeadSnapshot({ now: Date.now() });
    const deliveryId = (await queueTestDelivery(
      t.db,
      hookRow.id,
      { ...sample.snapshot, sampleFields: sample.fields } as never,
      new Date(),
    ))!;
    const d = await untilValue(
      'the delivery to be done with',
      () => delivery(deliveryId),
      (r) => r.status !== 'pending',
      inTime,
    );
    expect(d.status).toBe('skipped');
    expect(d.last_error).toMatch(/account is disabled/);
    expect(receiver.at('/quiet')).toHaveLength(0);
  });

  it('when every attempt fails, then retries back off with jitter for about three days, the delivery fails, and after five days the hook is disabled', async () => {
    const hook = await makeHook('/down');
    receiver.behave('/down', { status: 503 });
    const start = Date.now() - 30 * 86_400_000;
    clockMs = start;
    try {
      const id = await test(hook.uniqueId);
      const row = await delivery(id);
      let attempts = 0;
      for (;;) {
        const d = await untilValue(
          'another attempt',
          () => delivery(id),
          (r) => r.attempts > attempts,
          inTime,
        );
        attempts = d.attempts;
        if (d.status !== 'pending') break;
        clockMs = d.next_attempt_time!.getTime();
        await runRetryNow(row.id);
      }
      const log = await t.db<AttemptRow>('hook_delivery_attempts').where({ delivery_id: row.id }).orderBy('attempt');
      const times = log.map((a) => a.attempt_time.getTime());
      const last = times[times.length - 1]!;
      expect((await delivery(id)).status).toBe('failed');
      expect(last - start).toBeLessThanOrEqual(3 * 86_400_000);
      expect(last - start).toBeGreaterThan(2 * 86_400_000);
      expect(log[log.length - 1]!.next_attempt_time).toBeNull();
      const gaps = times.slice(1).map((t1, i) => t1 - times[i]!);
      // Exponential with equal jitter: step k waits between base·2^(k-1)/2 and base·2^(k-1), capped at 6 h.
      gaps.forEach((gap, i) => {
        const step = Math.min(6 * 3600_000, RETRY_BASE_MS * 2 ** i);
        expect(gap).toBeGreaterThanOrEqual(step / 2 - 1);
        expect(gap).toBeLessThanOrEqual(step + 1);
      });
      expect(receiver.at('/down').every((r) => r.verified && r.headers['webhook-id'] === id)).toBe(true);

      // Still failing two and a half days later, the hook passes five days of failures.
      let hookRow = (await t.db<HookRow>('hooks').where({ unique_id: hook.uniqueId }).first())!;
      expect(hookRow.enabled).toBe(true);
      expect(hookRow.failing_since!.getTime()).toBe(start);
      clockMs = start + 5 * 86_400_000 + 60_000;
      const second = await test(hook.uniqueId);
      await untilValue(
        'a first attempt of the second delivery',
        () => delivery(second),
        (r) => r.attempts >= 1,
        inTime,
      );
      hookRow = (await t.db<HookRow>('hooks').where({ unique_id: hook.uniqueId }).first())!;
      expect(hookRow.enabled).toBe(false);
      expect(hookRow.disabled_reason).toMatch(/every delivery attempt failed for 5 days/);
      const shown = await request(t.app).get(`/api/hooks/${hook.uniqueId}`).set('Authorization', w.accounts.full.auth);
      expect(shown.body).toMatchObject({ enabled: false });
      expect((shown.body as { disabledReason: string }).disabledReason).toMatch(/failed for 5 days/);

      // A disabled hook sends nothing: its pending retry is skipped.
      const pending = await delivery(second);
      await runRetryNow(pending.id);
      const before = receiver.at('/down').length;
      expect(
        (
          await untilValue(
            'the second delivery to be done with',
            () => delivery(second),
            (r) => r.status !== 'pending',
            inTime,
          )
        ).status,
      ).toBe('skipped');
      expect(receiver.at('/down')).toHaveLength(before);
    } finally {
      clockMs = undefined;
    }
  });
});
