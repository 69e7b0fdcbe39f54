import http from 'node:http';
import { testDatabaseUrl, basicAuth, uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { ALL_RIGHTS } from '../harness/world';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: a flood of wrong passwords from many client addresses (32 concurrent clients, each
 * from a loopback address of its own, for about 5 s) against one HTTP worker with the
 * deployment defaults (PASSWORD_CHECK_CONCURRENCY, login failure limits). A valid login that
 * is not cached, from an address without failures, must not wait behind the queued guesses:
 * while it is in flight, only the few guesses already being checked are answered (the median
 * over the logins is counted, not timed, so a loaded machine slows both sides alike). Its time
 * against the same login without the flood is printed, not asserted.
 *
 * What breaks it: password checks served first come, first served (the valid login then waits
 * behind every queued guess: about 30 answered while it waits), scrypt on the event loop, or
 * failed guesses allowed every check slot.
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

/** Guesses answered while a valid login could wait behind them; first come, first served gives about FLOOD_CLIENTS. */
const MAX_GUESSES_AHEAD = 8;
const CLEAN_ADDRESS = '127.0.20.1';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('a flood of bad credentials', () => {
  const { t, w } = useTestWorld();
  let node: ApiNode | undefined;
  afterAll(() => node?.stop());

  it('when 32 clients send wrong passwords, then a valid uncached login is checked before the queued guesses', async () => {
    // Fresh accounts: each measured login is the account's first, so nothing is cached.
    const accounts = Array.from({ length: 3 * SAMPLES + 15 }, () => ({ username: uniq('flood-ok-'), password: uniq('pw-') }));
    await t.load(
      ...accounts.map((a) => ({ type: 'account', ...a, user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'None' })),
    );
    const auths = accounts.map((a) => basicAuth(a.username, a.password));
    node = await startApiNode('login-flood', {
      DATABASE_URL: testDatabaseUrl(),
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      WEB_CONCURRENCY: '1',
    });
    const url = node.url;
    /** When each refused guess was answered (performance.now()). */
    const answered: number[] = [];
    /** For each valid login during the flood: guesses answered while it was in flight. */
    const ahead: number[] = [];
    const login = async (duringFlood = false) => {
      const start = performance.now();
      // From an address no other test uses: its record is clean whatever ran before.
      const r = await timed(() => get(url, auths.shift()!, CLEAN_ADDRESS));
      expect(r.status).toBe(200);
      if (duringFlood) {
        const end = performance.now();
        ahead.push(answered.filter((t) => t > start && t <= end).length);
      }
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
          if (status === 401) answered.push(performance.now());
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
      during.push(await login(true));
    }
    flooding = false;
    await Promise.all(flood);

    const after: number[] = [];
    for (let i = 0; i < SAMPLES && auths.length > 0; i++) after.push(await login());

    const normal = median([...before, ...after]);
    const flooded = median(during);
    process.stdout.write(
      `login flood: normal ${normal.toFixed(1)} ms, flooded ${flooded.toFixed(1)} ms (${(flooded / normal).toFixed(1)}×), ` +
        `guesses answered during a valid login: median ${median(ahead)} of [${ahead.join(', ')}], ${JSON.stringify(Object.fromEntries(statuses))}\n`,
    );
    // The flood was real: guesses were checked and refused (401) all along, none was served.
    expect(statuses.get(401) ?? 0).toBeGreaterThan(50);
    expect(statuses.get(200)).toBeUndefined();
    expect(median(ahead)).toBeLessThanOrEqual(MAX_GUESSES_AHEAD);
  }, 240_000);
});
