import { createClient } from 'redis';
import request from 'supertest';
import { basicAuth, uniq } from '../harness/testApp';
import { ALL_RIGHTS } from '../harness/world';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
import { startRedisCluster, RedisClusterHandle } from '../harness/redisCluster';
import { untilValue } from '../harness/until';
import { loadSettings, redisTarget } from '../../src/config/settings';
import { dailyKey, minuteKey, servicesKey } from '../../src/ratelimit/redisCounterStore';

describe('REDIS_CLUSTER setting', () => {
  it('when it is true, then REDIS_URL lists cluster nodes; when it is a URL list, then those are the nodes', () => {
    expect(redisTarget(loadSettings({ REDIS_URL: 'redis://a:1' }))).toEqual({ cluster: false, url: 'redis://a:1' });
    expect(redisTarget(loadSettings({ REDIS_URL: 'redis://a:1, redis://b:2', REDIS_CLUSTER: 'true' }))).toEqual({
      cluster: true,
      rootUrls: ['redis://a:1', 'redis://b:2'],
    });
    expect(redisTarget(loadSettings({ REDIS_CLUSTER: 'redis://a:1,redis://b:2' }))).toEqual({
      cluster: true,
      rootUrls: ['redis://a:1', 'redis://b:2'],
    });
    expect(redisTarget(loadSettings({}))).toBeUndefined();
    expect(() => loadSettings({ REDIS_CLUSTER: 'true' })).toThrow(/REDIS_CLUSTER/);
    expect(() => loadSettings({ REDIS_CLUSTER: 'maybe' })).toThrow(/REDIS_CLUSTER/);
  });
});

describe('API nodes on a Redis Cluster', () => {
  let cluster: RedisClusterHandle;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
  }, 180_000);
  // Each app discovers the cluster through a different node. A generous command time-out: a
  // count that times out is made in Postgres, and this is about counting in the cluster.
  const common = { AUTH_CACHE_TTL_MS: '600000', REDIS_COMMAND_TIMEOUT_MS: '15000' };
  const { t: a, w } = useTestWorld(() => ({ ...common, REDIS_URL: cluster.nodes[0]!.url, REDIS_CLUSTER: 'true' }));
  const b = useTestApp(() => ({ ...common, REDIS_CLUSTER: `${cluster.nodes[2]!.url},${cluster.nodes[1]!.url}` }));
  afterAll(() => cluster?.stop()); // declared after the apps: runs once they are closed

  async function newAccount(limits: Record<string, number> = {}) {
    const username = uniq('rc-');
    await a.load(
      { type: 'account', username, password: 'pw', user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' },
      ...Object.entries(limits).map(([service, dailyLimit]) => ({ type: 'requestLimit', account: username, service, dailyLimit })),
    );
    const { id } = (await a.db<{ id: number; username: string }>('accounts').where({ username }).first('id'))!;
    return { username, id, auth: basicAuth(username, 'pw') };
  }

  it('when the keys of one account are hashed, then they share one slot, and accounts spread over the masters', async () => {
    const client = createClient({ url: cluster.nodes[0]!.url });
    await client.connect();
    const slot = async (key: string) => Number(await client.clusterKeySlot(key));
    const slots = new Set<number>();
    for (let account = 1; account <= 30; account++) {
      const own = await Promise.all(
        [dailyKey(account, 'calls'), minuteKey(account, 'calls'), servicesKey(account), dailyKey(account, 'leads.csv')].map(slot),
      );
      expect(new Set(own).size).toBe(1);
      slots.add(own[0]!);
    }
    await client.close();
    const masters = new Set<number>();
    for (const s of slots) masters.add((await cluster.masterOfSlot(s)).port);
    expect(masters.size).toBe(3);
  });

  it('when two API nodes count one account through the cluster, then 300 concurrent requests at limit 50 admit exactly 50', async () => {
    const { auth } = await newAccount({ myaccount: 50 });
    for (const t of [a, b]) await request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth).expect(200);
    const statuses = await Promise.all(
      Array.from(
        { length: 300 },
        async (_, i) =>
          (
            await request((i % 2 ? a : b).app)
              .get('/api/myaccount')
              .set('Authorization', auth)
          ).status,
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(50);
    expect(statuses.filter((s) => s === 429)).toHaveLength(250);
    const counts = await request(b.app).get('/api/myaccount/request/counts').set('Authorization', auth).expect(200);
    expect((counts.body as { service: string; count: number }[]).find((r) => r.service === 'myaccount')!.count).toBe(50);
    for (const t of [a, b]) expect(((await request(t.app).get('/api/readyz').expect(200)).body as { redis: string }).redis).toBe('up');
  });

  it('when an account changes, then both nodes on the cluster drop its cached credentials', async () => {
    const acct = await newAccount();
    for (const t of [a, b]) await request(t.app).get('/api/myaccount').set('Authorization', acct.auth).expect(200);
    // The change notifies every process through Postgres, whichever Redis they count in.
    await a.db('accounts').where({ id: acct.id }).update({ enabled: false });
    for (const t of [a, b])
      await untilValue(
        'the disabled account refused',
        async () => (await request(t.app).get('/api/myaccount').set('Authorization', acct.auth)).status,
        (status) => status === 401,
        { timeoutMs: 5000 },
      );
  });
});
