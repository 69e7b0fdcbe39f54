import http from 'node:http';
import { testDatabaseUrl, basicAuth, uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { ALL_RIGHTS } from '../harness/world';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: a flood of wrong passwords from many client addresses (32 concurrent clients, each
 * from a loopback address of its own, for about 5 s) against a server process with the
 * deployment defaults (PASSWORD_CHECK_CONCURRENCY, login failure limits). A valid login that
 * is not cached, from an address without failures, must stay under 3× its normal time, the
 * median of the same measurement without the flood (taken before and after it, so the
 * machine's own load is in both).
 *
 * What breaks it: password checks served first come, first served (the valid login then waits
 * behind every queued guess: about 15× here), scrypt on the event loop, or failed guesses
 * allowed every check slot.
 */
const FLOOD_CLIENTS = 32;
const FLOOD_MS = 5000;
const SAMPLES = 15;

function get(url: string, auth: string, localAddress?: string, agent?: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url + '/api/myaccount', { headers: { Authorization: auth }, localAddress, agent }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
  });
}

async function timed(fn: () => Promise<number>): Promise<{ ms: number; status: number }> {
  const start = process.hrtime.bigint();
  const status = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, status };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('a flood of bad credentials', () => {
  const { t, w } = useTestWorld();
  let node: ApiNode | undefined;
  afterAll(() => node?.stop());

  it('when 32 clients send wrong passwords, then a valid uncached login stays under 3× its normal time', async () => {
    // Fresh accounts: each measured login is the account's first, so nothing is cached.
    const accounts = Array.from({ length: 3 * SAMPLES + 15 }, () => ({ username: uniq('flood-ok-'), password: uniq('pw-') }));
    await t.load(
      ...accounts.map((a) => ({ type: 'account', ...a, user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'None' })),
    );
    const auths = accounts.map((a) => basicAuth(a.username, a.password));
    node = await startApiNode('login-flood', { DATABASE_URL: testDatabaseUrl(), REDIS_URL: process.env.TEST_REDIS_URL ?? '' });
    const url = node.url;
    const login = async () => {
      const r = await timed(() => get(url, auths.shift()!));
      expect(r.status).toBe(200);
      await new Promise((res) => setTimeout(res, 100));
      return r.ms;
    };

    await login(); // warms the server (first connections, first scrypt)
    const before: number[] = [];
    for (let i = 0; i < SAMPLES; i++) before.push(await login());

    let flooding = true;
    const statuses = new Map<number, number>();
    const flood = Array.from({ length: FLOOD_CLIENTS }, async (_, c) => {
      const localAddress = `127.0.${10 + (c >> 4)}.${1 + (c & 15)}`;
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let n = 0; flooding; n++) {
          // Guesses at the world's account and at names that do not exist, never the same twice.
          const username = n % 2 ? w.accounts.full.username : `nobody-${c}-${n}`;
          // A kept-alive socket the server closed between two guesses: the next guess opens another.
          const status = await get(url, basicAuth(username, `guess-${c}-${n}`), localAddress, agent).catch(() => 0);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      } finally {
        agent.destroy();
      }
    });
    await new Promise((res) => setTimeout(res, 500)); // the queue fills up
    const during: number[] = [];
    // At least FLOOD_MS of flood and SAMPLES logins during it (at most 30 s when logins are slow).
    const floodEnds = Date.now() + FLOOD_MS;
    const giveUp = Date.now() + 30_000;
    while (
      (during.length < SAMPLES || Date.now() < floodEnds) &&
      during.length < SAMPLES + 10 &&
      (during.length < 3 || Date.now() < giveUp)
    ) {
      during.push(await login());
    }
    flooding = false;
    await Promise.all(flood);

    const after: number[] = [];
    for (let i = 0; i < SAMPLES && auths.length > 0; i++) after.push(await login());

    const normal = median([...before, ...after]);
    const flooded = median(during);
    process.stdout.write(
      `login flood: normal ${normal.toFixed(1)} ms, flooded ${flooded.toFixed(1)} ms, ${JSON.stringify(Object.fromEntries(statuses))}\n`,
    );
    // The flood was real: guesses were checked and refused (401) all along, none was served.
    expect(statuses.get(401) ?? 0).toBeGreaterThan(50);
    expect(statuses.get(200)).toBeUndefined();
    expect(flooded / normal).toBeLessThan(3);
  }, 240_000);
});
