import request from 'supertest';
import { createTestApp, ListeningApp, TestApp, uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { ALL_RIGHTS, worldCalendarEvent, keyFieldsCampaign } from '../harness/world';
import { openEventStream, OpenedStream } from '../harness/eventStreamClient';
import { untilValue } from '../harness/until';
import { leaveDuringPasswordCheck } from '../harness/leavingClient';
import { recordCalendarEvent } from '../../src/data/hookEvents';
import { pruneLiveEvents } from '../../src/data/liveEvents';

/**
 * GET /api/events: the hook events as a Server-Sent Events stream and as a JSON list, with the
 * hooks' rights, resumable across app instances (each composed app stands for a worker process
 * or a node: its own listening connection, feed and stream slots), in commit order.
 */
describe('GET /api/events', () => {
  const env = { EVENTS_HEARTBEAT_MS: '200', EVENTS_MAX_STREAMS: '3' };
  const { t, w } = useTestWorld(env);
  /** A second app instance on the same database: another worker or node. */
  let other: TestApp;
  let a: ListeningApp;
  let b: ListeningApp;
  const open: OpenedStream[] = [];

  beforeAll(async () => {
    other = await createTestApp(env);
    a = await t.listen();
    b = await other.listen();
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  afterAll(async () => {
    await other.close();
  });

  type Envelope = { type: string; timestamp: string; data: Record<string, unknown> };
  type Listed = Envelope & { id: number };

  const stream = async (server: ListeningApp, query: string, auth: string, headers: Record<string, string> = {}) => {
    const s = await openEventStream(server.url, `/api/events${query}`, { Authorization: auth, ...headers });
    open.push(s);
    return s;
  };
  const list = (query: string, auth = w.accounts.full.auth) => request(t.app).get(`/api/events${query}`).set('Authorization', auth);
  const importLead = async (campaign: string, name: string, data: Record<string, string> = {}) => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: campaign, Data: { Name: name, Telefon: '+4511223344', ...data } });
    const body = res.body as { success: boolean; uniqueId: string };
    expect(body.success).toBe(true);
    return body.uniqueId;
  };
  /** The last position after a sequencing round: events written after this call come after it. */
  const lastPosition = async () => Number((await t.db.raw<{ rows: { p: number }[] }>('select lcm_sequence_events(true) as p')).rows[0]!.p);
  const leadIdsOf = (events: { data: { data: Record<string, unknown> } }[]) => events.map((e) => e.data.data.uniqueId);

  describe('as JSON', () => {
    it('when leads are imported, then the list after After has their lead.created envelopes in order, data as GET /leads/{UniqueId} answers', async () => {
      const after = await lastPosition();
      const first = await importLead(w.campaigns.b2b, 'First');
      const second = await importLead(w.campaigns.b2b, 'Second');
      const res = await list(`?After=${after}&Campaigns=${w.campaigns.b2b}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const events = res.body as Listed[];
      expect(events.map((e) => e.data.uniqueId)).toEqual([first, second]);
      expect(events.map((e) => e.type)).toEqual(['lead.created', 'lead.created']);
      expect(events[0]!.id).toBeGreaterThan(after);
      expect(events[1]!.id).toBeGreaterThan(events[0]!.id);
      const lead = await request(t.app).get(`/api/leads/${first}`).set('Authorization', w.accounts.full.auth);
      expect(events[0]!.data).toEqual(lead.body);
      expect(events[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
    });

    it('when Limit is given, then at most that many come, and the last id continues the list', async () => {
      const after = await lastPosition();
      const ids = [
        await importLead(w.campaigns.b2b, 'L1'),
        await importLead(w.campaigns.b2b, 'L2'),
        await importLead(w.campaigns.b2b, 'L3'),
      ];
      const page1 = (await list(`?After=${after}&Campaigns=${w.campaigns.b2b}&Limit=2`)).body as Listed[];
      expect(page1.map((e) => e.data.uniqueId)).toEqual(ids.slice(0, 2));
      const page2 = (await list(`?After=${page1[1]!.id}&Campaigns=${w.campaigns.b2b}&Limit=2`)).body as Listed[];
      expect(page2.map((e) => e.data.uniqueId)).toEqual(ids.slice(2));
    });

    it('when the account prefers Local DateTimes, then the timestamps are platform wall time without offset', async () => {
      const after = await lastPosition();
      await importLead(w.campaigns.b2b, 'Local');
      const res = await list(`?After=${after}&Campaigns=${w.campaigns.b2b}`).set('Prefer', 'datetime=local');
      const [event] = res.body as Listed[];
      expect(event!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}$/);
      expect(res.headers['preference-applied']).toBe('datetime=local');
    });

    it('when After or Last-Event-ID is not an event id, then 400 naming it', async () => {
      const bad = await list('?After=abc');
      expect(bad.status).toBe(400);
      expect((bad.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('After');
      const beyond = await list('?After=999999999999');
      expect(beyond.status).toBe(400);
      // An id of 16 digits is an id (up to 2^53 - 1), just not one handed out yet; past that, the range is named.
      const sixteen = await list('?After=9007199254740991');
      expect(sixteen.status).toBe(400);
      expect(JSON.stringify(sixteen.body)).toContain('no event has an id above');
      const tooLarge = await list('?After=9007199254740992');
      expect(tooLarge.status).toBe(400);
      expect(JSON.stringify(tooLarge.body)).toContain('an integer from 0 to 9007199254740991');
      const header = await list('').set('Last-Event-ID', 'x1');
      expect(header.status).toBe(400);
      expect((header.body as { errors: { parameter: string }[] }).errors[0]!.parameter).toBe('Last-Event-ID');
    });
  });

  describe('rights', () => {
    it('when an account limited to the B2B project lists events, then it sees none of the Retail campaign, and no field above its entry access', async () => {
      const after = await lastPosition();
      const b2bLead = await importLead(w.campaigns.b2b, 'Seen', { Revenue: '12', Secret: 'hidden' });
      await importLead(w.campaigns.retail, 'Unseen');
      const res = await list(`?After=${after}`, w.accounts.b2b.auth);
      const mine = (res.body as Listed[]).filter((e) => e.data.uniqueId !== undefined);
      const campaigns = new Set(mine.map((e) => (e.data.campaign as { code: string }).code));
      expect(campaigns.has(w.campaigns.retail)).toBe(false);
      const seen = mine.find((e) => e.data.uniqueId === b2bLead)!;
      expect(seen.data.data).toMatchObject({ Name: 'Seen', Revenue: '12' });
      expect(seen.data.data).not.toHaveProperty('Secret');
      // The full account sees both campaigns' events, the field too. Its rights are every project,
      // so the list names this world's campaigns: other files' events would fill a page.
      const full = (await list(`?After=${after}&Campaigns=${w.campaigns.b2b},${w.campaigns.retail}`)).body as Listed[];
      expect(full.find((e) => e.data.uniqueId === b2bLead)!.data.data).toMatchObject({ Secret: 'hidden' });
      expect(full.some((e) => (e.data.campaign as { code: string } | undefined)?.code === w.campaigns.retail)).toBe(true);
    });

    it('when an account does not reach the phone or the external-key field, then its lead events leave phoneNumber or externalKey out, as GET does', async () => {
      const { code, records } = keyFieldsCampaign(w);
      await t.load(...records);
      const after = await lastPosition();
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .send({ CampaignCode: code, Data: { Name: 'Keys', Mobile: '+45 20 30 40 50', Ref: 'REF-0417' } });
      const id = (res.body as { uniqueId: string }).uniqueId;
      const eventOf = async (auth: string) => ((await list(`?After=${after}&Campaigns=${code}`, auth)).body as Listed[])[0]!.data;
      const getOf = async (auth: string) => (await request(t.app).get(`/api/leads/${id}`).set('Authorization', auth)).body as unknown;
      const full = await eventOf(w.accounts.full.auth);
      expect(full).toMatchObject({ uniqueId: id, phoneNumber: '+45 20 30 40 50', externalKey: 'REF-0417' });
      expect(full).toEqual(await getOf(w.accounts.full.auth));
      const partner = await eventOf(w.accounts.b2b.auth);
      expect(partner).not.toHaveProperty('phoneNumber');
      expect(partner).toMatchObject({ uniqueId: id, externalKey: 'REF-0417', data: { Name: 'Keys', Ref: 'REF-0417' } });
      expect(partner).toEqual(await getOf(w.accounts.b2b.auth));
    });

    it('when an account has no Get right on any event resource, or names events of a resource it may not read, then 403', async () => {
      const none = await list('', w.accounts.none.auth);
      expect(none.status).toBe(403);
      const username = `cal-${w.id}`;
      await t.load({
        type: 'account',
        username,
        password: 'cal-pass',
        user: w.users.agent,
        projects: ['*'],
        rights: { CalendarEvents: ['Get'] },
        entryAccess: 'None',
      });
      const auth = `Basic ${Buffer.from(`${username}:cal-pass`).toString('base64')}`;
      expect((await list('?Events=calendarEvent.created', auth)).status).toBe(200);
      const leads = await list('?Events=lead.created', auth);
      expect(leads.status).toBe(403);
      expect((leads.body as { detail: string }).detail).toMatch(/Leads/);
      const streamed = await stream(a, '?Events=call.ended', auth);
      expect(streamed.status).toBe(403);
    });

    it('when Projects names a project by the unique id GET /projects gives, then that project’s events come and no others', async () => {
      const projects = (await request(t.app).get('/api/projects').set('Authorization', w.accounts.full.auth)).body as {
        uniqueId: string;
        name: string;
      }[];
      const b2b = projects.find((p) => p.name === w.projects.b2b)!;
      const after = await lastPosition();
      const mine = await importLead(w.campaigns.b2b, 'By id');
      await importLead(w.campaigns.retail, 'Not by id');
      const listed = (await list(`?After=${after}&Projects=${b2b.uniqueId}`)).body as Listed[];
      expect(listed.map((e) => e.data.uniqueId)).toEqual([mine]);
    });

    it('when Campaigns names no campaign, or one outside the account’s projects, then the same 400 naming it', async () => {
      const unknown = await list(`?Campaigns=${w.campaigns.b2b},no-such-campaign-${w.id}`);
      expect(unknown.status).toBe(400);
      expect((unknown.body as { errors: { parameter: string; message: string }[] }).errors[0]).toMatchObject({
        parameter: 'Campaigns',
        message: expect.stringContaining(`no-such-campaign-${w.id}`) as unknown,
      });
      expect((await list(`?Campaigns=${w.campaigns.b2b.toLowerCase()}x`)).status).toBe(400);
      const outside = await list(`?Campaigns=${w.campaigns.retail}`, w.accounts.b2b.auth);
      expect(outside.status).toBe(400);
      expect((outside.body as { errors: { message: string }[] }).errors[0]!.message).toBe(
        `no campaign in this account's projects has the code or unique id ${JSON.stringify(w.campaigns.retail)}`,
      );
      expect((await stream(a, `?Campaigns=no-such-campaign-${w.id}`, w.accounts.full.auth)).status).toBe(400);
    });

    it('when Events names an unknown kind, then 400', async () => {
      expect((await list('?Events=lead.exploded')).status).toBe(400);
      expect((await list('?Events=order.*')).status).toBe(400);
    });

    it('when Events names a family as the documentation writes it (calendarEvent.*, lead.*), then it stands for its kinds', async () => {
      const after = await lastPosition();
      const id = await importLead(w.campaigns.b2b, 'Family');
      const leads = await list(`?After=${after}&Campaigns=${w.campaigns.b2b}&Events=lead.*`);
      expect(leads.status).toBe(200);
      expect((leads.body as Listed[]).map((e) => [e.type, e.data.uniqueId])).toEqual([['lead.created', id]]);
      const calendar = await list(`?After=${after}&Events=calendarEvent.*,call.ended`);
      expect(calendar.status).toBe(200);
      expect((calendar.body as Listed[]).filter((e) => e.type.startsWith('lead.'))).toEqual([]);
    });
  });

  describe('as Server-Sent Events', () => {
    it('when a stream is open and leads are imported, then each arrives as id, event and the envelope, with the same ids the list shows', async () => {
      const s = await stream(a, `?Campaigns=${w.campaigns.b2b}`, w.accounts.full.auth);
      expect(s.status).toBe(200);
      expect(s.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(s.headers['cache-control']).toBe('no-cache, no-transform');
      expect(s.headers['x-rate-limit-remaining']).toBeDefined();
      const after = await lastPosition();
      const first = await importLead(w.campaigns.b2b, 'Live 1');
      const second = await importLead(w.campaigns.b2b, 'Live 2');
      await s.until((x) => x.events.length >= 2, 'two live events');
      expect(s.events.map((e) => e.event)).toEqual(['lead.created', 'lead.created']);
      expect(leadIdsOf(s.events)).toEqual([first, second]);
      const listed = (await list(`?After=${after}&Campaigns=${w.campaigns.b2b}`)).body as Listed[];
      expect(s.events.map((e) => e.id)).toEqual(listed.map((e) => e.id));
      expect(s.events.map((e) => e.data)).toEqual(listed.map(({ id: _id, ...envelope }) => envelope));
    });

    it('when nothing happens, then heartbeat comments keep arriving, and the server suggests a reconnection delay', async () => {
      const s = await stream(a, `?Campaigns=${w.campaigns.b2b}`, w.accounts.full.auth);
      await s.until((x) => x.comments.filter((c) => c.trim() === 'heartbeat').length >= 2, 'two heartbeats');
      expect(s.retry).toBeGreaterThan(0);
    });

    it('when the client asks for gzip, then the stream is sent uncompressed all the same', async () => {
      const s = await stream(a, `?Campaigns=${w.campaigns.b2b}`, w.accounts.full.auth, { 'Accept-Encoding': 'gzip, br' });
      expect(s.status).toBe(200);
      expect(s.headers['content-encoding']).toBeUndefined();
      const id = await importLead(w.campaigns.b2b, 'Plain');
      await s.until((x) => leadIdsOf(x.events).includes(id), 'the event');
    });

    it('when the stream or the list is answered, then both say they vary by Accept (one address, two representations)', async () => {
      const s = await stream(a, `?Campaigns=${w.campaigns.b2b}`, w.accounts.full.auth);
      expect(s.status).toBe(200);
      expect(String(s.headers['vary']).split(/\s*,\s*/)).toContain('Accept');
      const res = await list(`?Campaigns=${w.campaigns.b2b}&Limit=1`);
      expect(res.status).toBe(200);
      expect(String(res.headers['vary']).split(/\s*,\s*/)).toContain('Accept');
    });

    it('when the client accepts only text/html, then 406', async () => {
      const res = await list('').set('Accept', 'text/html');
      expect(res.status).toBe(406);
    });
  });

  describe('resuming', () => {
    it('when writers import concurrently and the client reconnects to another instance with Last-Event-ID, then it gets every event once, in order', async () => {
      const campaign = `EV-${uniq()}`;
      await t.load({
        type: 'campaign',
        code: campaign,
        name: 'Events',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
      });
      const first = await stream(a, `?Campaigns=${campaign}`, w.accounts.full.auth);
      const writers = 6;
      const perWriter = 15;
      const imported: string[] = [];
      const writing = Promise.all(
        Array.from({ length: writers }, async (_, k) => {
          for (let i = 0; i < perWriter; i++) imported.push(await importLead(campaign, `W${k}-${i}`));
        }),
      );
      await first.until((x) => x.events.length >= 20, 'a first share of the events');
      first.close();
      const lastSeen = first.events.at(-1)!.id;
      const received = [...first.events];
      // Reconnect elsewhere while the writers go on.
      const second = await stream(b, `?Campaigns=${campaign}`, w.accounts.full.auth, { 'Last-Event-ID': String(lastSeen) });
      await writing;
      await second.until((x) => received.length + x.events.length >= writers * perWriter, 'every event');
      received.push(...second.events.filter((e) => e.id > lastSeen));
      const ids = received.map((e) => e.id);
      expect([...ids].sort((x, y) => x - y)).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
      expect(second.events[0]!.id).toBeGreaterThan(lastSeen);
      expect([...leadIdsOf(received)].sort()).toEqual([...imported].sort());
      // And the JSON list from the same point agrees.
      const listed = (await list(`?After=${lastSeen}&Campaigns=${campaign}`)).body as Listed[];
      expect(listed.map((e) => e.id)).toEqual(second.events.map((e) => e.id));
    });

    it('when a transaction that wrote an event earlier commits after a later one, then its event comes after it, and a client resuming in between still gets it', async () => {
      const s = await stream(a, `?Events=calendarEvent.created&Projects=${encodeURIComponent(w.projects.b2b)}`, w.accounts.full.auth);
      const early = await t.db.transaction();
      const late = await t.db.transaction();
      try {
        // `early` writes first (its row id is the smaller), `late` commits first.
        await recordCalendarEvent(early, {
          type: 'calendarEvent.created',
          event: worldCalendarEvent(w, 'early'),
          project: w.projects.b2b,
          time: new Date(),
        });
        await recordCalendarEvent(late, {
          type: 'calendarEvent.created',
          event: worldCalendarEvent(w, 'late'),
          project: w.projects.b2b,
          time: new Date(),
        });
        const idOf = async (trx: typeof early, title: string) =>
          (await trx('hook_events').where('snapshot', '@>', JSON.stringify({ title })).max<{ id: number }>('id as id').first())!.id;
        expect(await idOf(early, 'early')).toBeLessThan(await idOf(late, 'late'));
        await late.commit();
      } catch (err) {
        await late.rollback().catch(() => undefined);
        await early.rollback();
        throw err;
      }
      await s.until((x) => x.events.some((e) => e.data.data.title === 'late'), 'the later transaction’s event');
      const lateId = s.events.find((e) => e.data.data.title === 'late')!.id;
      await early.commit();
      await s.until((x) => x.events.some((e) => e.data.data.title === 'early'), 'the earlier transaction’s event');
      const earlyId = s.events.find((e) => e.data.data.title === 'early')!.id;
      expect(earlyId).toBeGreaterThan(lateId);
      // A client that had got up to `late` resumes and still gets `early`.
      const resumed = (await list(`?After=${lateId}&Events=calendarEvent.created&Projects=${encodeURIComponent(w.projects.b2b)}`))
        .body as Listed[];
      expect(resumed.map((e) => e.data.title)).toContain('early');
    });
  });

  describe('limits', () => {
    it('when an account has EVENTS_MAX_STREAMS streams open across instances, then one more is a 429 problem, and closing one frees a place', async () => {
      const auth = w.accounts.b2b.auth;
      const opened = [await stream(a, '', auth), await stream(b, '', auth), await stream(a, '', auth)];
      expect(opened.map((s) => s.status)).toEqual([200, 200, 200]);
      const refused = await stream(b, '', auth);
      expect(refused.status).toBe(429);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.headers['retry-after']).toBeDefined();
      // Refused before it was counted: it spends nothing of the daily limit.
      expect(refused.headers['x-rate-limit-remaining']).toBeDefined();
      expect(refused.headers['x-rate-limit-remaining']).toBe(opened[2]!.headers['x-rate-limit-remaining']);
      await refused.ended;
      expect(JSON.parse(refused.body()) as { code: string }).toMatchObject({ code: 'rate_limited' });
      // Another account is not affected.
      expect((await stream(b, '', w.accounts.full.auth)).status).toBe(200);
      opened[0]!.close();
      await opened[0]!.ended;
      let again: OpenedStream | undefined;
      for (let i = 0; i < 50 && again?.status !== 200; i++) {
        again?.close();
        again = await stream(b, '', auth);
        if (again.status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(again!.status).toBe(200);
    });

    it('when clients leave their streams while their password is being checked, then each gives its place back', async () => {
      const auth = w.accounts.b2b.auth;
      const head = `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: ${auth}\r\n\r\n`;
      // One more than EVENTS_MAX_STREAMS: a place kept by a client that left would refuse the last stream.
      for (let i = 0; i < 4; i++) await leaveDuringPasswordCheck(t, Number(new URL(a.url).port), head);
      let again: OpenedStream | undefined;
      for (let i = 0; i < 50 && again?.status !== 200; i++) {
        again?.close();
        again = await stream(a, '', auth);
        if (again.status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(again!.status).toBe(200);
    });

    it('when a stream is opened, then it is one counted request of the service events, however many events it carries', async () => {
      const counts = async () => {
        const res = await request(t.app).get('/api/myaccount/request/counts').set('Authorization', w.accounts.full.auth);
        return (res.body as { service: string; count: number }[]).find((c) => c.service === 'events')?.count ?? 0;
      };
      const before = await counts();
      const s = await stream(a, `?Campaigns=${w.campaigns.b2b}`, w.accounts.full.auth);
      await importLead(w.campaigns.b2b, 'Counted 1');
      await importLead(w.campaigns.b2b, 'Counted 2');
      await s.until((x) => x.events.length >= 2, 'two events');
      expect((await counts()) - before).toBe(1);
    });
  });

  describe('ending', () => {
    it('when the instance stops, then its streams end cleanly and new ones are refused with 503', async () => {
      const stopping = await createTestApp(env);
      const server = await stopping.listen();
      const s = await openEventStream(server.url, '/api/events', { Authorization: w.accounts.full.auth });
      expect(s.status).toBe(200);
      const closing = stopping.composed.events.close();
      expect(await s.ended).toBe('ended');
      await closing;
      const refused = await request(stopping.app)
        .get('/api/events')
        .set('Authorization', w.accounts.full.auth)
        .set('Accept', 'text/event-stream');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      await stopping.close();
    });

    it('when the account is disabled, then its open streams end and a reconnect is refused', async () => {
      const username = `ev-${w.id}`;
      await t.load({
        type: 'account',
        username,
        password: 'ev-pass',
        user: w.users.agent,
        projects: ['*'],
        rights: ALL_RIGHTS,
        entryAccess: 'Full',
      });
      const auth = `Basic ${Buffer.from(`${username}:ev-pass`).toString('base64')}`;
      const s = await stream(a, '', auth);
      expect(s.status).toBe(200);
      await t.db('accounts').where({ username }).update({ enabled: false });
      expect(await s.ended).toBe('ended');
      expect((await stream(a, '', auth)).status).toBe(401);
    });
  });

  describe('slow clients', () => {
    let slow: TestApp;
    let server: ListeningApp;
    beforeAll(async () => {
      slow = await createTestApp({ ...env, EXPORT_STALL_TIMEOUT_MS: '500' });
      server = await slow.listen();
    });
    afterAll(() => slow.close());

    it('when a client stops reading, then an idle stream stays open, and once events pile up unread it is cut after the stall timeout', async () => {
      const campaign = `SLOW-${uniq()}`;
      await t.load({
        type: 'campaign',
        code: campaign,
        name: 'Slow',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
      });
      const s = await stream(server, `?Campaigns=${campaign}`, w.accounts.full.auth);
      expect(s.status).toBe(200);
      s.pause();
      // Idle: nothing waits to be sent, so the stall timeout does not apply (heartbeats are tiny).
      const early = await Promise.race([s.ended, new Promise((r) => setTimeout(() => r('open'), 2000))]);
      expect(early).toBe('open');
      // About 40 MB of events: more than the sockets on both sides buffer.
      const big = 'x'.repeat(40_000);
      const leads = Array.from({ length: 1000 }, (_, i) => ({
        type: 'lead',
        campaign,
        data: { Name: `Slow ${i}`, Telefon: '+4511223344', Email: '', Customer: big },
      }));
      await t.load(...leads);
      // The server lets go of it (the client, not reading, cannot see that yet)…
      await untilValue(
        'the server to let go of the stream',
        () => slow.composed.events.open,
        (open) => open === 0,
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      // …and once the client reads on, what was sent ends without the end of the body: it was cut.
      s.resume();
      expect(await s.ended).toBe('cut');
    });
  });

  describe('retention', () => {
    it('when events are older than the retention, then pruning removes them and their positions, except those with a pending delivery', async () => {
      const hook = await request(t.app)
        .post('/api/hooks')
        .set('Authorization', w.accounts.full.auth)
        .send({ name: `keep ${w.id}`, url: 'https://example.com/hook', events: ['lead.created'], campaignCode: w.campaigns.retail });
      expect(hook.status).toBe(201);
      const after = await lastPosition();
      const gone = await importLead(w.campaigns.b2b, 'Old');
      const kept = await importLead(w.campaigns.retail, 'Old but pending');
      const ids = [gone, kept];
      await t
        .db('hook_events')
        .whereIn('resource_id', ids)
        .update({ created_time: new Date('2000-01-01T00:00:00Z') });
      // A hook of another file that runs meanwhile may take every campaign's events: the old event
      // that should go has no pending delivery because this test says so, not by chance.
      await t
        .db('hook_deliveries')
        .whereIn('event_id', t.db('hook_events').select('id').where({ resource_id: gone }))
        .update({ status: 'delivered' });
      const result = await pruneLiveEvents(t.db, new Date('2000-06-01T00:00:00Z'));
      expect(result.events).toBeGreaterThanOrEqual(1);
      const left = await t.db('hook_events').whereIn('resource_id', ids).pluck('resource_id');
      expect(left).toEqual([kept]);
      const listed = (await list(`?After=${after}`)).body as Listed[];
      expect(listed.map((e) => e.data.uniqueId)).not.toContain(gone);
      // Once its delivery is done, it goes too, with its delivery log.
      await t
        .db('hook_deliveries')
        .whereIn('event_id', t.db('hook_events').select('id').where({ resource_id: kept }))
        .update({ status: 'delivered' });
      await pruneLiveEvents(t.db, new Date('2000-06-01T00:00:00Z'));
      expect(await t.db('hook_events').where({ resource_id: kept }).count<{ count: number }[]>('* as count')).toEqual([{ count: 0 }]);
      await request(t.app)
        .delete(`/api/hooks/${(hook.body as { uniqueId: string }).uniqueId}`)
        .set('Authorization', w.accounts.full.auth);
    });
  });
});
