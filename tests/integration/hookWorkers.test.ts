import path from 'node:path';
import { spawn, ChildProcess } from 'node:child_process';
import request from 'supertest';
import { createOwnDatabase, createTestApp, TestApp } from '../harness/testApp';
import { createWorld, World } from '../harness/world';
import { startHookReceiver, HookReceiver } from '../harness/hookReceiver';
import { until, untilValue } from '../harness/until';

/**
 * Worker processes as they run in production (`lcm serve`, `lcm hooks work`) on the test
 * database: a server killed with SIGKILL while deliveries are in flight loses none of them
 * once one runs again, and two worker processes never send one delivery at the same time.
 */
const LCM = path.resolve(__dirname, '../../bin/lcm.js');
// Each `lcm` process starts Node and opens the database: seconds on a busy machine.
jest.setTimeout(240_000);

describe('hook worker processes', () => {
  let t: TestApp;
  let w: World;
  let receiver: HookReceiver;
  const children: ChildProcess[] = [];
  // A database of this file's own: other files' workers must not take these jobs, nor these workers theirs.
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;

  const env = () => ({
    ...process.env,
    DATABASE_URL: own.url,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SWEEP_INTERVAL_MS: '0',
    HOOKS_ALLOW_HTTP: 'true',
    HOOKS_ALLOWED_HOSTS: '127.0.0.1',
    HOOKS_TIMEOUT_MS: '5000',
    HOOKS_HEARTBEAT_MS: '300',
    HOOKS_WORKER_STALE_MS: '1500',
    HOOKS_POLL_INTERVAL_MS: '200',
    HOOKS_CONCURRENCY: '8',
  });

  /** Starts `lcm ARGS` and resolves once it printed `ready` (a line of its output). */
  function lcm(args: string[], ready: RegExp): Promise<ChildProcess> {
    const child = spawn(process.execPath, [LCM, ...args], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    return new Promise((resolve, reject) => {
      let out = '';
      const onData = (b: Buffer) => {
        out += b.toString();
        if (ready.test(out)) resolve(child);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`lcm ${args.join(' ')} exited (${code}): ${out}`)));
    });
  }
  const stop = (child: ChildProcess, signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });

  beforeAll(async () => {
    own = await createOwnDatabase('hook_workers');
    t = await createTestApp({ DATABASE_URL: own.url, HOOKS_ALLOW_HTTP: 'true', HOOKS_ALLOWED_HOSTS: '127.0.0.1' });
    w = await createWorld(t);
    receiver = await startHookReceiver();
  });
  afterAll(async () => {
    for (const c of children) await stop(c, 'SIGKILL');
    await receiver.close();
    await t.close();
    await own.drop();
  });

  async function hookWithDeliveries(p: string, n: number, to: HookReceiver = receiver): Promise<string[]> {
    // Narrowed to this file's campaign: lead events of files running alongside never reach it.
    const res = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', w.accounts.full.auth)
      .send({ name: p, url: `${to.url}${p}`, campaignCode: w.campaigns.b2b });
    const hook = res.body as { uniqueId: string; secret: string };
    to.secret(p, hook.secret);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const queued = await request(t.app).post(`/api/hooks/${hook.uniqueId}/test`).set('Authorization', w.accounts.full.auth);
      ids.push((queued.body as { deliveryId: string }).deliveryId);
    }
    return ids;
  }
  /** Waits until every delivery is delivered; a wait that runs out shows their statuses. */
  const allDelivered = (ids: string[], timeoutMs: number) =>
    untilValue(
      'every delivery delivered',
      () => t.db<{ unique_id: string; status: string }>('hook_deliveries').whereIn('unique_id', ids).pluck('status'),
      (statuses) => statuses.length === ids.length && statuses.every((s) => s === 'delivered'),
      { timeoutMs, intervalMs: 200 },
    );

  it('when the server is killed with SIGKILL while deliveries are in flight, then after a restart every one is delivered', async () => {
    const p = `/kill-${w.id}`;
    let slow = true;
    let arrived = 0;
    receiver.behave(p, () => {
      arrived += 1;
      return slow ? { delayMs: 3000 } : {};
    });
    const ids = await hookWithDeliveries(p, 12);
    const first = await lcm(['serve'], /listening on/);
    await until('a delivery to reach the receiver', () => arrived > 0, { timeoutMs: 60_000 });
    await stop(first, 'SIGKILL');
    // Whatever reached the receiver before the kill got no recorded answer: it is in flight.
    const inFlight = await t.db('hook_deliveries').whereIn('unique_id', ids).whereNot('status', 'delivered').count({ n: '*' });
    expect(Number(inFlight[0]!.n)).toBeGreaterThan(0);
    slow = false;
    const second = await lcm(['serve'], /listening on/);
    await allDelivered(ids, 90_000);
    const received = new Set(
      receiver
        .at(p)
        .filter((d) => d.verified)
        .map((d) => String(d.headers['webhook-id'])),
    );
    for (const id of ids) expect(received.has(id)).toBe(true);
    await stop(second, 'SIGTERM');
  });

  it('when two worker processes share the database, then no delivery is sent twice at once and both do work', async () => {
    const p = `/pair-${w.id}`;
    // A receiver of its own: the killed server's unanswered requests of the other test do not count here.
    const own = await startHookReceiver();
    own.behave(p, { delayMs: 30 });
    const [a, b] = await Promise.all([lcm(['hooks', 'work'], /workers running/), lcm(['hooks', 'work'], /workers running/)]);
    const ids = await hookWithDeliveries(p, 40, own);
    await allDelivered(ids, 90_000);
    const got = own.at(p);
    expect(got.every((d) => d.verified)).toBe(true);
    // No failure happened, so at-least-once is exactly once here.
    expect(got.map((d) => d.headers['webhook-id']).sort()).toEqual([...ids].sort());
    expect(own.maxConcurrentPerId()).toBe(1);
    const workers = await t
      .db('hook_delivery_attempts as a')
      .join('hook_deliveries as d', 'd.id', 'a.delivery_id')
      .whereIn('d.unique_id', ids)
      .distinct('a.worker_id');
    expect(workers.length).toBe(2);
    await Promise.all([stop(a, 'SIGTERM'), stop(b, 'SIGTERM')]);
    await own.close();
  });
});
