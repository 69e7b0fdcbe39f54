import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { createClient } from 'redis';
import { createDb } from '../../src/data/db';
import { loadNdjson } from '../../src/ingest/loader/loadNdjson';
import { JOB_NAMES } from '../../src/data/scheduledJobs';
import { LeadStatus } from '../../src/domain/enums';
import { dailyKey } from '../../src/ratelimit/redisCounterStore';
import { basicAuth, uniq } from '../harness/testApp';
import { ALL_RIGHTS, createWorld, World } from '../harness/world';
import { startRedisCluster, RedisClusterHandle } from '../harness/redisCluster';
import { until, untilValue } from '../harness/until';
import { startPgReplication, PgReplication } from './harness/pgReplication';
import { startApiNode, roundRobin, ApiNode } from './harness/apiNodes';

/**
 * Scale-out on real engines (docs/scaling.md): a Postgres primary with a streaming replica
 * (the OS packages), a Redis Cluster of three masters with a replica each, and two `lcm serve`
 * processes behind a round-robin client. Run with `npm run test:cluster`.
 */

const SWEEP_INTERVAL_MS = 1500;

/** The body of /api/readyz (src/http/endpoints/health.ts). */
interface Readiness {
  status: string;
  database: string;
  redis: string;
  replica: string;
}

/** The scheduled_jobs columns the test reads. */
interface ScheduledJobsRow {
  job: string;
  runs: number;
}

describe('two API nodes on a Postgres primary + replica and a Redis Cluster', () => {
  let pgs: PgReplication;
  let redis: RedisClusterHandle;
  let nodes: ApiNode[] = [];
  let db: Knex;
  let w: World;
  let lb: ReturnType<typeof roundRobin>;

  const load = (...records: Record<string, unknown>[]) =>
    loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: 'Europe/Copenhagen' });
  const get = async (node: ApiNode | undefined, path: string, auth = w.accounts.full.auth) => {
    const res = node
      ? await fetch(node.url + path, { headers: { Authorization: auth } })
      : await lb.fetch(path, { headers: { Authorization: auth } });
    const text = await res.text();
    return {
      status: res.status,
      body: text.startsWith('[') || text.startsWith('{') ? (JSON.parse(text) as unknown) : text,
      headers: res.headers,
    };
  };
  const readyz = async (node: ApiNode) => (await get(node, '/api/readyz')).body as Readiness;
  /** Checks every 100 ms, 30 s unless given; a check that fails (a node or engine away) counts as not yet. */
  const within = (timeoutMs = 30_000) => ({ timeoutMs, intervalMs: 100, ignoreErrors: true });
  const callsPath = () => `/api/calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-11-02T08:00:00&TimeSpan=PT10H`;
  const callIds = async (node?: ApiNode) => {
    const res = await get(node, callsPath());
    expect(res.status).toBe(200);
    return (res.body as { uniqueId: string }[]).map((c) => c.uniqueId).sort();
  };
  let callSeq = 0;
  const call = (at: string) => ({
    type: 'call',
    uniqueId: `cl-${w.id}-${++callSeq}`,
    campaign: w.campaigns.b2b,
    user: w.users.agent,
    uniqueLeadId: `cl-lead-${w.id}`,
    leadPhoneNumber: '+45 11 22 33 44',
    endCause: 'NormalDisconnect',
    inProgress: false,
    connected: false,
    incoming: false,
    startTime: at,
    endTime: at,
    previewDuration: 'PT1S',
  });
  const newAccount = async (limits: Record<string, number>) => {
    const username = uniq('cl-');
    await load(
      { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' },
      ...Object.entries(limits).map(([service, dailyLimit]) => ({ type: 'requestLimit', account: username, service, dailyLimit })),
    );
    const { id } = (await db<{ id: number; username: string }>('accounts').where({ username }).first('id'))!;
    return { id, auth: basicAuth(username, 'pw') };
  };

  beforeAll(async () => {
    try {
      [pgs, redis] = await Promise.all([startPgReplication(), startRedisCluster({ masters: 3, replicasPerMaster: 1 })]);
      const env = {
        DATABASE_URL: pgs.primary.url,
        DATABASE_READ_URL: pgs.replica.url,
        DATABASE_READ_CHECK_MS: '300',
        DATABASE_READ_MAX_LAG_MS: '120000',
        REDIS_URL: redis.urls,
        REDIS_CLUSTER: 'true',
        // Generous: a count that times out is made in Postgres, and this test is about exact counts.
        REDIS_COMMAND_TIMEOUT_MS: '5000',
        AUTH_CACHE_TTL_MS: '600000',
        SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS),
      };
      // Started together: both migrate the new database at once, and both start the jobs.
      nodes = await Promise.all([startApiNode('node-a', env), startApiNode('node-b', env)]);
      lb = roundRobin(nodes);
      db = createDb({ url: pgs.primary.url, timezone: 'Europe/Copenhagen', poolMax: 4 });
      w = await createWorld({ load });
      await load(
        { type: 'lead', uniqueId: `cl-lead-${w.id}`, campaign: w.campaigns.b2b, data: { Name: 'A', Telefon: '+45 11 22 33 44' } },
        call('2026-11-02T09:00:00'),
        call('2026-11-02T10:00:00'),
      );
      await pgs.caughtUp();
    } catch (err) {
      for (const n of nodes) process.stderr.write(`--- ${n.name}\n${n.output()}\n`);
      throw err;
    }
  }, 300_000);

  afterAll(async () => {
    await db?.destroy();
    await Promise.all(nodes.map((n) => n.stop()));
    await redis?.stop();
    await pgs?.stop();
  }, 60_000);

  it('when both nodes started at once, then the migrations ran once and partition maintenance ran on one node', async () => {
    await until(
      'the maintenance run',
      async () => (await db<ScheduledJobsRow>('scheduled_jobs').where({ job: JOB_NAMES.partitionMaintenance }).first()) !== undefined,
      within(),
    );
    const job = await db<ScheduledJobsRow>('scheduled_jobs').where({ job: JOB_NAMES.partitionMaintenance }).first();
    expect(job!.runs).toBe(1);
    for (const n of nodes) expect(await readyz(n)).toEqual({ status: 'ok', database: 'up', redis: 'up', replica: 'up' });
  });

  it('when the replica stops replaying, then exports on both nodes miss a new call while reads after a write on the primary see it at once', async () => {
    const before = await callIds();
    expect(before).toHaveLength(2);
    await pgs.query(pgs.replica, 'select pg_wal_replay_pause()');
    try {
      const fresh = call('2026-11-02T11:00:00');
      await load(fresh);
      // An import through one node, read back through the other: the primary answers both.
      const imported = await lb.fetch('/api/leads', {
        method: 'POST',
        headers: { Authorization: w.accounts.full.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: 'New', Telefon: '+45 22 33 44 55' } }),
      });
      expect(imported.status).toBe(200);
      const leadId = ((await imported.json()) as { uniqueId: string }).uniqueId;
      expect((await get(undefined, `/api/leads/${leadId}`)).status).toBe(200);
      expect((await get(undefined, `/api/calls/${fresh.uniqueId}/recordings`)).status).toBe(200);
      // The exports come from the paused replica: the new call is not there yet, on either node.
      for (const n of nodes) expect(await callIds(n)).toEqual(before);
    } finally {
      await pgs.query(pgs.replica, 'select pg_wal_replay_resume()');
    }
    await pgs.caughtUp();
    for (const n of nodes) expect(await callIds(n)).toHaveLength(3);
  });

  it('when 500 requests race through both nodes against a limit of 100, then exactly 100 are admitted', async () => {
    const { auth } = await newAccount({ myaccount: 100 });
    for (const n of nodes) expect((await get(n, '/api/myaccount/request/limits', auth)).status).toBe(200);
    const statuses = await Promise.all(Array.from({ length: 500 }, async () => (await get(undefined, '/api/myaccount', auth)).status));
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(400);
  });

  it('when both nodes run the sweeper, then it runs once per interval across them and moves a due lead once', async () => {
    await load(
      {
        type: 'campaign',
        code: `CL-EXP-${w.id}`,
        name: 'Expiring',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'PowerDialer',
        expireAfter: 'PT1H',
      },
      {
        type: 'lead',
        uniqueId: `cl-due-${w.id}`,
        campaign: `CL-EXP-${w.id}`,
        status: 'New',
        lastModifiedTime: '2020-01-01T10:00:00',
        data: { Name: 'Due', Telefon: '+45 33 44 55 66' },
      },
    );
    const runs = async () =>
      Number((await db<ScheduledJobsRow>('scheduled_jobs').where({ job: JOB_NAMES.lifecycleSweep }).first())?.runs ?? 0);
    const first = await runs();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 6 * SWEEP_INTERVAL_MS));
    const intervals = (Date.now() - started) / SWEEP_INTERVAL_MS;
    const made = (await runs()) - first;
    // Each node's timer fires every interval: uncoordinated, that would be two runs per interval.
    expect(made).toBeGreaterThanOrEqual(Math.floor(intervals) - 2);
    expect(made).toBeLessThanOrEqual(Math.ceil(intervals) + 1);
    expect(
      (await db<{ unique_id: string; status: number }>('leads')
        .where({ unique_id: `cl-due-${w.id}` })
        .first('status'))!.status,
    ).toBe(LeadStatus.toNumber('Expired'));
  });

  it('when the replica stops, then both nodes serve exports from the primary and say so; when it is back, exports read it again', async () => {
    await pgs.caughtUp();
    const all = await callIds();
    await pgs.replica.stop();
    for (const n of nodes) expect(await callIds(n)).toEqual(all);
    for (const n of nodes) expect(await readyz(n)).toMatchObject({ status: 'ok', database: 'up', replica: 'down' });
    for (const n of nodes) {
      const metrics = (await get(n, '/api/metrics')).body as string;
      expect(metrics).toMatch(/lcm_db_replica_up 0/);
      const fallbacks = [...metrics.matchAll(/lcm_db_read_fallbacks_total\{reason="\w+"\} (\d+)/g)].reduce(
        (sum, m) => sum + Number(m[1]),
        0,
      );
      expect(fallbacks).toBeGreaterThan(0);
    }

    await pgs.replica.start();
    for (const n of nodes)
      await untilValue(
        `${n.name} to see the replica`,
        () => readyz(n),
        (r) => r.replica === 'up',
        within(),
      );
    await pgs.caughtUp();
    // Back on the replica: a call it has not replayed yet is missing from the exports again.
    await pgs.query(pgs.replica, 'select pg_wal_replay_pause()');
    try {
      await load(call('2026-11-02T12:00:00'));
      for (const n of nodes) expect(await callIds(n)).toEqual(all);
    } finally {
      await pgs.query(pgs.replica, 'select pg_wal_replay_resume()');
    }
  });

  it('when the Redis master holding an account is killed, then the cluster fails over and counting continues where it was', async () => {
    const { id, auth } = await newAccount({ myaccount: 50 });
    for (let i = 0; i < 20; i++) expect((await get(undefined, '/api/myaccount', auth)).status).toBe(200);
    const probe = createClient({ url: redis.nodes[0]!.url });
    await probe.connect();
    const slot = Number(await probe.clusterKeySlot(dailyKey(id, 'myaccount')));
    await probe.close();
    const master = await redis.masterOfSlot(slot);
    // Let the replica receive the last counts (replication is asynchronous), then lose the master.
    await new Promise((r) => setTimeout(r, 1000));
    await redis.kill(master);
    await redis.waitHealthy(30_000);
    expect((await redis.masterOfSlot(slot)).port).not.toBe(master.port);
    for (const n of nodes)
      await untilValue(
        `${n.name} to count in Redis`,
        () => readyz(n),
        (r) => r.redis === 'up',
        within(),
      );

    const after = [];
    for (let i = 0; i < 40; i++) {
      const res = await get(undefined, '/api/myaccount', auth);
      after.push({ status: res.status, remaining: Number(res.headers.get('x-rate-limit-remaining')) });
    }
    // The promoted replica had the 20 counted before: 30 more are admitted, then 429.
    expect(after.filter((r) => r.status === 200)).toHaveLength(30);
    expect(after[0]).toEqual({ status: 200, remaining: 29 });
    expect(after.slice(30).every((r) => r.status === 429)).toBe(true);
    for (const n of nodes) expect((await readyz(n)).redis).toBe('up');
  });

  it('when an account changes, then both nodes drop its cached credentials (the change notifies them through Postgres)', async () => {
    const acct = await newAccount({});
    for (const n of nodes) expect((await get(n, '/api/myaccount', acct.auth)).status).toBe(200);
    await db('accounts').where({ id: acct.id }).update({ enabled: false });
    for (const n of nodes)
      await untilValue(
        `${n.name} to refuse the disabled account`,
        async () => (await get(n, '/api/myaccount', acct.auth)).status,
        (status) => status === 401,
        within(10_000),
      );
  });
});
