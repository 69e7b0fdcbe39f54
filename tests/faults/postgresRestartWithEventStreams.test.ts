import type { World } from '../harness/world';
import { openEventStream, OpenedStream, ReceivedEvent } from '../harness/eventStreamClient';
import type { RestartablePostgres } from '../harness/restartablePostgres';
import { startWorldOnRestartablePostgres } from '../harness/restartableWorld';
import { processGroup } from '../harness/processGroup';
import { until } from '../harness/until';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: Postgres is restarted (a fast shutdown, a pause, a start on the same folder and port)
 * while a client follows `GET /api/events` for one campaign from `lcm serve` (two HTTP workers
 * and the jobs process) and a few writers import leads one at a time, before, during and after
 * the outage. The worker's listening connection is lost with the restart, so the stream is
 * ended; the client reconnects with the last id it received, as EventSource does, until a worker
 * takes it again. Once the writers stop, the stream must have delivered every acknowledged
 * import's `lead.created` exactly once, with ids increasing across the reconnects, and nothing
 * that was not imported; the JSON list of the same span must agree with it. Imports and
 * streams asked for during the outage are answered 503, never 500, and no process of the node exits.
 *
 * What breaks it: a stream that is never ended or never accepted again after the restart (the
 * listening connection not re-opened, stream slots counted against a session that is gone); a
 * feed that reads on from a position of before the outage past events numbered after it, or a
 * resume that repeats or skips events (an event lost or sent twice); sequencing rounds that stop
 * after failing (events listed but never numbered); a refused database connection answered as a
 * 500; an unhandled 'error' of the listening, pooled or sequencing connection (a worker
 * crashes: every process of the node must be the same one at the end).
 */
const WRITERS = 3;
/** Pause between one writer's imports: writers keep importing without taking both cores. */
const WRITE_PAUSE_MS = 15;
/** Imports acknowledged before the restart, and after it, before the writers stop. */
const ACKED_BEFORE = 40;
const ACKED_AFTER = 40;
const DOWN_MS = 1500;
const RECOVERY_MS = 60_000;
/** A request that gets no answer at all within this long counts as failed (the node hangs). */
const REQUEST_TIMEOUT_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Checks every 100 ms; a check that throws counts as not yet. */
const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 100, ignoreErrors: true });

/** What one import attempt got: its HTTP status (0: no answer) and, when acknowledged, the lead's unique id. */
interface Attempt {
  name: string;
  status: number;
  problem?: string;
  uniqueId?: string;
}

interface LeadEnvelope {
  type: string;
  data: { uniqueId?: string; data?: { Name?: string } };
}

describe('Postgres restarted under live event streams', () => {
  let pg: RestartablePostgres | undefined;
  let node: ApiNode | undefined;
  let w: World;

  afterAll(async () => {
    await node?.stop();
    await pg?.destroy();
  });

  beforeAll(async () => {
    ({ pg, w } = await startWorldOnRestartablePostgres());
    node = await startApiNode('event-restart', {
      DATABASE_URL: pg.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      WEB_CONCURRENCY: '2',
      AUTH_CACHE_TTL_MS: '600000',
      EVENTS_HEARTBEAT_MS: '1000',
    });
  }, 180_000);

  it('when Postgres restarts while leads are imported and a stream follows them, then the resumed stream delivers every acknowledged lead once, in order, and outage answers are 503', async () => {
    const url = node!.url;
    const auth = { Authorization: w.accounts.full.auth };
    const campaign = w.campaigns.b2b;
    const streamPath = `/api/events?Campaigns=${encodeURIComponent(campaign)}`;

    // The stream, reconnected whenever it ends, with the last id received, as an EventSource client would.
    const streamStatuses: number[] = [];
    /** Events of the connections that have ended, then of the current one. */
    const past: ReceivedEvent[] = [];
    let current: OpenedStream | undefined;
    let connections = 0;
    /** How each connection ended ('ended': a proper end of the body; 'cut') and how many events it carried. */
    const endings: string[] = [];
    let following = true;
    const received = (): ReceivedEvent[] => [...past, ...(current?.events ?? [])];
    const open = async (): Promise<OpenedStream | undefined> => {
      const last = received().at(-1);
      const headers: Record<string, string> = { ...auth, ...(last ? { 'Last-Event-ID': String(last.id) } : {}) };
      // The client leaves a request reset before its answer pending: a deadline settles it.
      let timer: NodeJS.Timeout | undefined;
      const opened = await Promise.race([
        openEventStream(url, streamPath, headers),
        new Promise<undefined>((settle) => (timer = setTimeout(() => settle(undefined), REQUEST_TIMEOUT_MS))),
      ]).finally(() => clearTimeout(timer));
      streamStatuses.push(opened?.status ?? 0);
      return opened?.status === 200 ? opened : undefined;
    };
    const follow = async (): Promise<void> => {
      current = await open();
      if (!current) throw new Error(`the first stream was refused (${streamStatuses.join(', ')})`);
      connections = 1;
      for (;;) {
        const ending = await current.ended;
        if (!following) return;
        endings.push(`${ending} after ${current.events.length}`);
        past.push(...current.events);
        current = undefined;
        const deadline = Date.now() + RECOVERY_MS;
        while (!current) {
          if (!following) return;
          current = await open().catch(() => undefined);
          if (current) break;
          if (Date.now() > deadline)
            throw new Error(`the stream was not taken again within ${RECOVERY_MS} ms (${streamStatuses.join(', ')})`);
          await sleep(250);
        }
        connections += 1;
        // Reading stopped while this one was opening.
        if (!following) return current.close();
      }
    };
    // A failure is reported by the assertion at the end, not as an unhandled rejection meanwhile.
    const followed = follow().then(
      () => undefined,
      (err: unknown) => String(err),
    );
    await until('the first stream to open', () => connections === 1, within(30_000));

    // Writers: single imports, one after another, each with a name of its own.
    const attempts: Attempt[] = [];
    let writing = true;
    const writer = async (k: number) => {
      for (let i = 0; writing; i++) {
        const name = `w${k}-${i}`;
        const attempt: Attempt = { name, status: 0 };
        attempts.push(attempt);
        try {
          const res = await fetch(`${url}/api/leads`, {
            method: 'POST',
            headers: { ...auth, 'Content-Type': 'application/json' },
            body: JSON.stringify({ CampaignCode: campaign, Data: { Name: name, Telefon: '+4511223344' } }),
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          });
          attempt.status = res.status;
          const body = (await res.json()) as { success?: boolean; uniqueId?: string; code?: string };
          if (res.ok && body.success === true) attempt.uniqueId = body.uniqueId;
          else attempt.problem = body.code ?? JSON.stringify(body).slice(0, 200);
        } catch (err) {
          attempt.problem = (err as Error).message;
        }
        await sleep(WRITE_PAUSE_MS);
      }
    };
    const acked = () => attempts.filter((a) => a.uniqueId !== undefined).length;
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, k) => writer(k)));

    await until(`${ACKED_BEFORE} imports acknowledged`, () => acked() >= ACKED_BEFORE, within(60_000));
    // The premise: the stream carries the imports live before the outage.
    await until('the stream to carry imports', () => received().length > 0, within(30_000));

    const processes = processGroup(node!.pid);
    expect(processes.length).toBe(4); // the supervisor, two HTTP workers and the jobs process
    await pg!.stop('fast');
    const stoppedAt = Date.now();
    // A client resuming while the database is down (its stream is not ended yet) is told to come back.
    const probe = await openEventStream(url, streamPath, { ...auth, 'Last-Event-ID': String(received().at(-1)!.id) });
    probe.close();
    await sleep(Math.max(0, DOWN_MS - (Date.now() - stoppedAt)));
    await pg!.start();
    const startedAt = Date.now();

    // The stream is ended (its worker lost its listening connection) and taken again; imports go on meanwhile.
    await until('the stream to be ended and resumed', () => connections >= 2, within(RECOVERY_MS));
    const resumedMs = Date.now() - startedAt;
    const ackedAtResume = acked();
    await until(`${ACKED_AFTER} more imports acknowledged`, () => acked() >= ackedAtResume + ACKED_AFTER, within(RECOVERY_MS));
    writing = false;
    await writers;

    // Every acknowledged import's event arrives (an import answered 503 may have committed too).
    const ackedIds = new Set(attempts.flatMap((a) => (a.uniqueId ? [a.uniqueId] : [])));
    const uniqueIdOf = (e: ReceivedEvent) => (e.data as unknown as LeadEnvelope).data.uniqueId;
    const missing = () => {
      const seen = new Set(received().map(uniqueIdOf));
      return [...ackedIds].filter((id) => !seen.has(id));
    };
    await until('every acknowledged lead to arrive', () => missing().length === 0, {
      ...within(RECOVERY_MS),
      detail: () => `${missing().length} missing (${connections} connections), ${missing().slice(0, 5).join(', ')}`,
    });

    const statuses = attempts.reduce<Record<string, number>>((n, a) => ({ ...n, [a.status]: (n[a.status] ?? 0) + 1 }), {});
    process.stdout.write(
      `event streams across a postgres restart: ${attempts.length} imports (by status ${JSON.stringify(statuses)}), ` +
        `${received().length} events over ${connections} connections (answers ${streamStatuses.join(',')}; ${endings.join(', ')}), ` +
        `resumed ${resumedMs} ms after the start\n`,
    );

    // The outage is answered 503 (a problem document), never 500 and never left unanswered.
    const refused = attempts.filter((a) => a.uniqueId === undefined);
    expect(refused.length).toBeGreaterThan(0); // the premise: writers were importing during the outage
    expect(refused.filter((a) => a.status !== 503 || a.problem !== 'service_unavailable')).toEqual([]);
    expect(streamStatuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    expect({
      status: probe.status,
      retryAfter: probe.headers['retry-after'] !== undefined,
      body: JSON.parse(probe.body()) as unknown,
    }).toMatchObject({
      status: 503,
      retryAfter: true,
      body: { code: 'service_unavailable' },
    });
    expect(connections).toBeGreaterThanOrEqual(2);

    // Once each, in increasing id order across the reconnects, and only leads this test tried to import.
    const events = received();
    const ids = events.map((e) => e.id);
    expect(ids.filter((id, i) => i > 0 && id <= ids[i - 1]!)).toEqual([]);
    const counts = new Map<string, number>();
    for (const e of events) counts.set(uniqueIdOf(e) ?? '', (counts.get(uniqueIdOf(e) ?? '') ?? 0) + 1);
    expect([...ackedIds].filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(events.filter((e) => e.event !== 'lead.created')).toEqual([]);
    const triedButRefused = new Set(refused.map((a) => a.name));
    const strays = events.filter((e) => {
      const lead = (e.data as unknown as LeadEnvelope).data;
      return !ackedIds.has(lead.uniqueId ?? '') && !triedButRefused.has(lead.data?.Name ?? '');
    });
    expect(strays).toEqual([]);

    // The JSON list of the same span: the same leads in the same order (and the stream reaches its end).
    const first = events[0]!;
    const listed = await fetch(`${url}/api/events?After=${first.id - 1}&Campaigns=${encodeURIComponent(campaign)}&Limit=10000`, {
      headers: auth,
    });
    expect(listed.status).toBe(200);
    const list = (await listed.json()) as (LeadEnvelope & { id: number })[];
    const lastListed = list.at(-1)?.id ?? 0;
    await until('the stream to reach the end of the list', () => (received().at(-1)?.id ?? 0) >= lastListed, within(RECOVERY_MS));
    const streamed = received().filter((e) => e.id <= lastListed);
    expect(list.map((e) => [e.id, e.type, e.data.uniqueId])).toEqual(streamed.map((e) => [e.id, e.event, uniqueIdOf(e)]));

    following = false;
    current?.close();
    expect(await followed).toBeUndefined();
    expect(node!.output()).not.toMatch(/uncaught|unhandled/i);
    expect(node!.running()).toBe(true);
    expect(processGroup(node!.pid)).toEqual(processes);
  }, 240_000);
});
