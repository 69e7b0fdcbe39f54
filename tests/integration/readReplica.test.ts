import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import { testDatabaseUrl } from '../harness/testApp';
import { startTcpProxy, TcpProxy } from '../harness/tcpProxy';
import { isConnectionFailure, ReadSource } from '../../src/data/readSource';
import { createDb } from '../../src/data/db';
import { ExportSession, poolConnections } from '../../src/data/exportSession';
import { freePort } from '../harness/freePort';
import { untilValue } from '../harness/until';

/**
 * DATABASE_READ_URL routing. The "replica" here is the test database reached through a TCP
 * proxy, so the test sees which reads pass through it and can take it away and bring it back;
 * a real streaming replica is exercised by `npm run test:cluster` (tests/cluster).
 */
describe('read replica (DATABASE_READ_URL)', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(testDatabaseUrl()).port));
  });
  const { t, w } = useTestWorld(() => {
    const replica = new URL(testDatabaseUrl());
    replica.port = String(proxy.port);
    // Checks only when the test asks (reads.check()), so the proxy counts the reads alone; the
    // timer that calls check() runs in the cluster test against a real replica.
    return { DATABASE_READ_URL: replica.toString(), DATABASE_READ_CHECK_MS: '3600000' };
  });
  afterAll(() => proxy?.close());

  const exportPath = () => `/api/calls?OrgCode=${encodeURIComponent(w.users.agent)}&StartTime=2026-05-06T10:00:00&TimeSpan=PT2H`;
  const exportCalls = async () => {
    const res = await request(t.app).get(exportPath()).set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(200);
    return res.body as { uniqueId: string }[];
  };
  /** The proxy's byte count once nothing has passed for 200 ms. */
  const settledBytes = async () => {
    let last = -1;
    const [, now] = await untilValue(
      "the proxy's byte count unchanged for 200 ms",
      () => {
        const before = last;
        last = proxy.bytesToClients();
        return [before, last];
      },
      ([before, after]) => before === after,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    return now;
  };
  const readyz = async () => (await request(t.app).get('/api/readyz').expect(200)).body as { replica: string };
  const metric = async (name: string) => {
    const text = (await request(t.app).get('/api/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };

  beforeAll(async () => {
    await t.load(
      { type: 'lead', uniqueId: `rr-lead-${w.id}`, campaign: w.campaigns.b2b, data: { Name: 'A', Telefon: '+45 11 22 33 44' } },
      {
        type: 'call',
        uniqueId: `rr-call-${w.id}`,
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueLeadId: `rr-lead-${w.id}`,
        leadPhoneNumber: '+45 11 22 33 44',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: false,
        incoming: false,
        startTime: '2026-05-06T10:15:00',
        endTime: '2026-05-06T10:15:30',
        previewDuration: 'PT1S',
      },
    );
  });

  it('when the replica is up, then exports read through it while writes and small reads stay on the primary', async () => {
    expect(await readyz()).toMatchObject({ status: 'ok', database: 'up', replica: 'up' });
    expect(await metric('lcm_db_replica_up')).toBe(1);

    let before = proxy.bytesToClients();
    expect((await exportCalls()).map((c) => c.uniqueId)).toEqual([`rr-call-${w.id}`]);
    expect(proxy.bytesToClients()).toBeGreaterThan(before);

    // A lead import (a write, then its read-back) and an account lookup never touch the replica.
    // The export's session ends its transaction just after the response: wait for that first.
    before = await settledBytes();
    await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ campaignCode: w.campaigns.b2b, data: { Name: 'New', Telefon: '+45 22 33 44 55' } })
      .expect(200);
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).expect(200);
    expect(proxy.bytesToClients()).toBe(before);
  });

  it('when the replica goes away, then exports are served by the primary, readyz and the metrics say so, and reads return to the replica once it is back', async () => {
    const expected = await exportCalls();
    await proxy.stop();
    // The first read finds the replica gone, and is served by the primary all the same.
    expect(await exportCalls()).toEqual(expected);
    expect(await readyz()).toMatchObject({ status: 'ok', database: 'up', replica: 'down' });
    expect(await exportCalls()).toEqual(expected);
    expect(await metric('lcm_db_replica_up')).toBe(0);
    const text = (await request(t.app).get('/api/metrics').expect(200)).text;
    // Each export after the stop was a fallback: the first either failed on the replica (error)
    // or found it already checked down (down), the second found it down.
    const fallbacks = ['error', 'down'].map((reason) =>
      Number(new RegExp(`lcm_db_read_fallbacks_total\\{reason="${reason}"\\} (\\d+)`).exec(text)?.[1]),
    );
    expect(fallbacks[0]! + fallbacks[1]!).toBe(2);
    expect(fallbacks[1]).toBeGreaterThanOrEqual(1);

    await proxy.start();
    expect((await readyz()).replica).toBe('down');
    await t.composed.services.reads.check();
    expect((await readyz()).replica).toBe('up');
    const before = proxy.bytesToClients();
    expect(await exportCalls()).toEqual(expected);
    expect(proxy.bytesToClients()).toBeGreaterThan(before);
  });

  it('when an export finds the replica gone, then that same export gets a primary connection and the replica is marked down', async () => {
    const closed = new URL(testDatabaseUrl());
    closed.port = String(await freePort());
    const replica = createDb({ url: closed.toString(), timezone: 'Europe/Copenhagen', connectTimeoutMs: 2000, quiet: true });
    const primary = poolConnections(t.db);
    const reads = new ReadSource({ primary, replica });
    const fallbacks: string[] = [];
    reads.on('fallback', (reason) => fallbacks.push(reason));
    const databaseOf = async (source: ReadSource) => {
      const session = await ExportSession.open(source);
      try {
        return (
          await session.db.raw<{ rows: { name: string; pid: number }[] }>('select current_database() as name, pg_backend_pid() as pid')
        ).rows[0]!;
      } finally {
        await session.close();
      }
    };
    try {
      expect(reads.state).toBe('up');
      expect((await databaseOf(reads)).name).toBe(new URL(testDatabaseUrl()).pathname.slice(1));
      expect(reads.state).toBe('down');
      await databaseOf(reads);
      expect(fallbacks).toEqual(['error', 'down']);
    } finally {
      await replica.destroy();
    }
  });

  it('when a replica connection is handed out, then it goes back to the replica pool and the next export can have it', async () => {
    // The "replica" is the test database itself, reached through a pool of one.
    const replica = createDb({ url: testDatabaseUrl(), timezone: 'Europe/Copenhagen', poolMax: 1 });
    const reads = new ReadSource({ primary: poolConnections(t.db), replica });
    try {
      const pids: number[] = [];
      for (let i = 0; i < 3; i++) {
        const session = await ExportSession.open(reads);
        pids.push((await session.db.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid);
        await session.close();
      }
      expect(new Set(pids).size).toBe(1);
      expect((replica.client as { pool: { numUsed(): number } }).pool.numUsed()).toBe(0);
      expect(reads.state).toBe('up');
      // A query's own error is the export's, not a reason to fall back.
      const session = await ExportSession.open(reads);
      await expect(session.db.raw('select * from no_such_table')).rejects.toMatchObject({ code: '42P01' });
      await session.close();
      expect(reads.state).toBe('up');
    } finally {
      await replica.destroy();
    }
  });

  it("when an error is the query's own, then it is not taken for a replica failure", () => {
    expect(isConnectionFailure(Object.assign(new Error('syntax error'), { code: '42601' }))).toBe(false);
    expect(isConnectionFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isConnectionFailure(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(
      true,
    );
  });
});
