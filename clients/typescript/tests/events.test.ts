import request from 'supertest';
import { useTestWorld } from '../../../tests/harness/useTestWorld';
import { createTestApp, type ListeningApp, type TestApp } from '../../../tests/harness/testApp';
import { EventStreamError, liveEvents, type LiveEvent } from '../src/events';

/**
 * The client's live event iterator against the real API (real Postgres and Redis, over
 * loopback): it resumes by itself with Last-Event-ID when a server stops and another answers,
 * obeys Retry-After, and gives up on a refusal that would not change.
 */
describe('liveEvents', () => {
  const env = { EVENTS_HEARTBEAT_MS: '200', EVENTS_MAX_STREAMS: '1' };
  const { t, w } = useTestWorld(env);
  let other: TestApp;
  let first: ListeningApp;
  let second: ListeningApp;

  beforeAll(async () => {
    other = await createTestApp(env);
    first = await t.listen();
    second = await other.listen();
  });
  afterAll(() => other.close());

  const importLead = async (name: string) => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: name, Telefon: '+4511223344' } });
    return (res.body as { uniqueId: string }).uniqueId;
  };
  const lastPosition = async () => Number((await t.db.raw<{ rows: { p: number }[] }>('select lcm_sequence_events(true) as p')).rows[0]!.p);
  /** A load balancer in front of the two servers: requests go to `target`. */
  let target: ListeningApp;
  const balanced = (req: Request) => {
    const url = new URL(req.url);
    url.port = String(target.port);
    return fetch(new Request(url, req));
  };
  const credentials = () => ({ baseUrl: 'http://127.0.0.1:1', username: w.accounts.full.username, password: w.accounts.full.password });
  async function take(events: AsyncGenerator<LiveEvent>, n: number): Promise<LiveEvent[]> {
    const got: LiveEvent[] = [];
    while (got.length < n) {
      const next = await events.next();
      if (next.done) break;
      got.push(next.value);
    }
    return got;
  }

  it('when the server ends the stream and another one answers, then the loop goes on with the next event, none missed or repeated', async () => {
    target = first;
    const reconnects: string[] = [];
    const events = liveEvents({
      ...credentials(),
      fetch: balanced,
      query: { Campaigns: [w.campaigns.b2b] },
      lastEventId: await lastPosition(),
      onReconnect: (reason) => reconnects.push(reason),
    });
    try {
      const before = [await importLead('C1'), await importLead('C2')];
      const got = await take(events, 2);
      expect(got.map((e) => e.data.uniqueId)).toEqual(before);
      // The first server stops: its stream ends, the balancer sends the reconnect elsewhere.
      target = second;
      await t.composed.events.close();
      const after = [await importLead('C3'), await importLead('C4')];
      const more = await take(events, 2);
      expect(more.map((e) => e.data.uniqueId)).toEqual(after);
      expect(more[0]!.id).toBeGreaterThan(got[1]!.id);
      expect(more.map((e) => e.type)).toEqual(['lead.created', 'lead.created']);
      expect(reconnects).toContain('the stream ended');
    } finally {
      await events.return();
    }
  });

  it('when the account’s streams are all open, then it waits Retry-After and connects once one is free', async () => {
    target = second;
    // The one stream the account may have (the last test's may take a moment to be let go).
    let blocker = new AbortController();
    for (let i = 0; i < 50; i++) {
      blocker = new AbortController();
      const held = await fetch(`${second.url}/api/events`, {
        headers: { Accept: 'text/event-stream', Authorization: w.accounts.full.auth },
        signal: blocker.signal,
      });
      if (held.status === 200) break;
      blocker.abort();
      await new Promise((r) => setTimeout(r, 100));
    }
    const waits: number[] = [];
    const events = liveEvents({
      ...credentials(),
      fetch: balanced,
      query: { Campaigns: [w.campaigns.b2b] },
      lastEventId: await lastPosition(),
      sleep: async (ms) => {
        waits.push(ms);
        blocker.abort();
        await new Promise((r) => setTimeout(r, 300));
      },
    });
    try {
      const id = await importLead('After the wait');
      const [event] = await take(events, 1);
      expect(event!.data.uniqueId).toBe(id);
      expect(waits[0]).toBe(5000);
    } finally {
      await events.return();
    }
  });

  it('when the account may not read events, then the iteration ends with an EventStreamError', async () => {
    target = second;
    const events = liveEvents({
      ...credentials(),
      username: w.accounts.none.username,
      password: w.accounts.none.password,
      fetch: balanced,
    });
    await expect(events.next()).rejects.toThrow(EventStreamError);
  });
});
