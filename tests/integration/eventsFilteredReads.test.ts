import request from 'supertest';
import type { ListeningApp } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { worldCalendarEvent } from '../harness/world';
import { openEventStream, OpenedStream } from '../harness/eventStreamClient';
import { recordCalendarEvent } from '../../src/data/hookEvents';
import * as liveEventsData from '../../src/data/liveEvents';
import { eventSelector, EventSelection, projectUniqueId } from '../../src/domain/liveEvents';
import { HOOK_EVENTS, HookEventName } from '../../src/domain/hooks';

/**
 * GET /api/events with filters that match few of the kept events: the kinds, campaigns, project
 * rights and `Projects` are conditions of the read's SQL, and one read looks at
 * EVENTS_READ_SPAN ids at most. A JSON list reads span after span until it has `Limit` events or
 * reaches the newest id, and says where the next one starts (`Last-Event-ID`); a stream reads
 * on by itself. What comes is what the rules of the
 * live batches (eventSelector) pick from every kept event, in order, once.
 */
describe('GET /api/events with filters that match few events', () => {
  const SPAN = 40;
  const { t, w } = useTestWorld({ EVENTS_READ_SPAN: String(SPAN), EVENTS_HEARTBEAT_MS: '200' });
  let server: ListeningApp;
  const open: OpenedStream[] = [];
  /** The last position before this file's events, and after them. */
  let start = 0;
  let end = 0;
  let b2bProjectId = '';

  type Listed = { id: number; type: string; data: Record<string, unknown> };

  const list = (query: string, auth = w.accounts.full.auth) => request(t.app).get(`/api/events${query}`).set('Authorization', auth);
  const importLead = async (campaign: string, name: string) => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: campaign, Data: { Name: name, Telefon: '+4511223344' } });
    const body = res.body as { success: boolean; uniqueId: string };
    expect(body.success).toBe(true);
    return body.uniqueId;
  };
  const lastPosition = async () => Number((await t.db.raw<{ rows: { p: number }[] }>('select lcm_sequence_events(true) as p')).rows[0]!.p);
  /** `n` more events like the retail lead's: events no filter of the B2B project picks. */
  const retailEvents = async (n: number, like: number) => {
    await t.db.raw(
      `insert into hook_events (type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot)
       select type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot
         from hook_events, generate_series(1, ?) where id = ?`,
      [n, like],
    );
    await lastPosition();
  };
  const calendarEvent = async (project: string, title: string) => {
    await t.db.transaction((trx) =>
      recordCalendarEvent(trx, { type: 'calendarEvent.created', event: worldCalendarEvent(w, title), project, time: new Date() }),
    );
    await lastPosition();
  };

  /** The positions after `start` that the live batches' rules pick for `selection`: what every read must give. */
  const expected = async (selection: Omit<EventSelection, 'types'> & { types?: readonly HookEventName[] }) => {
    const { rows } = await t.db.raw<{ rows: { position: number; type: string; project: string | null; campaignCode: string | null }[] }>(
      `select s.position, e.type, e.project, e.campaign_code as "campaignCode"
         from event_stream s join hook_events e on e.id = s.event_id
        where s.position > ? and s.position <= ? order by s.position`,
      [start, end],
    );
    const selects = eventSelector({ ...selection, types: new Set(selection.types ?? HOOK_EVENTS) });
    return rows.filter(selects).map((r) => r.position);
  };

  /** Every event a JSON client gets from `start`, polling with each answer's Last-Event-ID, and what each answer said. */
  const pollAll = async (query: string, limit: number, auth = w.accounts.full.auth) => {
    const ids: number[] = [];
    const answers: { after: number; count: number; next: number }[] = [];
    let after = start;
    while (after < end) {
      expect(answers.length).toBeLessThan(100);
      const res = await list(`?After=${after}&Limit=${limit}${query}`, auth);
      expect(res.status).toBe(200);
      const events = res.body as Listed[];
      const next = Number(res.headers['last-event-id']);
      answers.push({ after, count: events.length, next });
      // Each answer moves on: to its last event when it is full, else to the newest (other files
      // may have added events after this file's).
      expect(next).toBeGreaterThan(after);
      if (events.length === limit) expect(next).toBe(events.at(-1)!.id);
      else expect(next).toBeGreaterThanOrEqual(end);
      ids.push(...events.map((e) => e.id));
      after = next;
    }
    return { ids: ids.filter((id) => id <= end), answers };
  };

  /**
   * Every event a client gets that polls with the last id listed and ignores the header, as a
   * client written for a bare array does: an answer with fewer than `limit` events is caught up.
   */
  const pollByIds = async (query: string, limit: number) => {
    const ids: number[] = [];
    let after = start;
    for (;;) {
      expect(ids.length).toBeLessThan(100);
      const res = await list(`?After=${after}&Limit=${limit}${query}`);
      expect(res.status).toBe(200);
      const events = res.body as Listed[];
      ids.push(...events.map((e) => e.id));
      if (events.length < limit) return ids.filter((id) => id <= end);
      after = events.at(-1)!.id;
    }
  };

  beforeAll(async () => {
    server = await t.listen();
    const projects = (await request(t.app).get('/api/projects').set('Authorization', w.accounts.full.auth)).body as {
      uniqueId: string;
      name: string;
    }[];
    b2bProjectId = projects.find((p) => p.name === w.projects.b2b)!.uniqueId;
    expect(b2bProjectId).toBe(projectUniqueId(w.projects.b2b));

    // A few events of the B2B project among runs of retail events several read spans long.
    start = await lastPosition();
    await importLead(w.campaigns.b2b, 'First');
    const retailLead = await importLead(w.campaigns.retail, 'Retail');
    const like = (await t.db('hook_events').where({ resource_id: retailLead, type: 'lead.created' }).first<{ id: number }>('id')).id;
    await retailEvents(3 * SPAN + 7, like);
    await calendarEvent(w.projects.b2b, 'B2B meeting');
    await importLead(w.campaigns.b2b, 'Second');
    await retailEvents(2 * SPAN + 3, like);
    await calendarEvent(w.projects.retail, 'Retail meeting');
    await importLead(w.campaigns.b2b, 'Third');
    await retailEvents(SPAN + 11, like);
    end = await lastPosition();
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });

  describe('as JSON', () => {
    it('when Projects names the project by name, by pattern or by unique id, then polling with Last-Event-ID and Limit gives exactly its events, in order, once', async () => {
      const want = await expected({ projectRights: ['*'], projects: [w.projects.b2b] });
      expect(want).toHaveLength(4);
      for (const projects of [w.projects.b2b, `b2b-${w.id} SALE?`, `*${w.id} sales`, b2bProjectId, b2bProjectId.toUpperCase()]) {
        for (const limit of projects === w.projects.b2b ? [1, 3, 1000] : [2]) {
          const { ids } = await pollAll(`&Projects=${encodeURIComponent(projects)}`, limit);
          expect({ projects, limit, ids }).toEqual({ projects, limit, ids: want });
        }
      }
    });

    it('when an account restricted to the B2B project polls, then it gets exactly that project’s events, in order, once', async () => {
      const want = await expected({ projectRights: [`B2B-${w.id}*`] });
      expect(want).toHaveLength(4);
      for (const limit of [2, 1000]) {
        expect((await pollAll('', limit, w.accounts.b2b.auth)).ids).toEqual(want);
      }
      // Its rights bound Projects too: the retail project is never reached.
      expect((await pollAll(`&Projects=${encodeURIComponent(w.projects.retail)}`, 5, w.accounts.b2b.auth)).ids).toEqual([]);
    });

    it('when Projects, Campaigns and Events are combined, then the list is what the live batches’ rules pick from every kept event', async () => {
      const cases: { query: string; selection: Parameters<typeof expected>[0] }[] = [
        {
          query: `&Projects=${encodeURIComponent(`${w.projects.retail},${b2bProjectId}`)}&Events=calendarEvent.*`,
          selection: {
            projectRights: ['*'],
            projects: [w.projects.retail, b2bProjectId],
            types: ['calendarEvent.created', 'calendarEvent.updated', 'calendarEvent.deleted'],
          },
        },
        {
          query: `&Projects=${encodeURIComponent(w.projects.b2b)}&Campaigns=${w.campaigns.b2b}`,
          selection: { projectRights: ['*'], projects: [w.projects.b2b], campaignCodes: new Set([w.campaigns.b2b]) },
        },
        {
          query: `&Campaigns=${w.campaigns.retail}&Events=lead.created`,
          selection: { projectRights: ['*'], campaignCodes: new Set([w.campaigns.retail]), types: ['lead.created'] },
        },
        { query: '', selection: { projectRights: ['*'] } },
      ];
      for (const { query, selection } of cases) {
        const want = await expected(selection);
        expect(want.length).toBeGreaterThan(0);
        expect({ query, ids: (await pollAll(query, 7)).ids }).toEqual({ query, ids: want });
      }
    });

    it('when a client polls with the last id listed and ignores Last-Event-ID, then it still gets every event, across stretches of many read spans that match nothing', async () => {
      const want = await expected({ projectRights: ['*'], projects: [w.projects.b2b] });
      for (const limit of [1, 2, 1000]) {
        expect({ limit, ids: await pollByIds(`&Projects=${encodeURIComponent(w.projects.b2b)}`, limit) }).toEqual({ limit, ids: want });
      }
    });

    it('when Projects matches no event, then one answer lists none and its Last-Event-ID is the newest id, read span after span', async () => {
      const { ids, answers } = await pollAll('&Projects=NoSuchProject', 1000);
      expect(ids).toEqual([]);
      expect(answers).toHaveLength(1);
      expect(answers[0]!.next).toBeGreaterThanOrEqual(end);
      // Caught up: the next answer says the newest id again.
      const again = await list(`?After=${end}&Projects=NoSuchProject`);
      expect(again.body).toEqual([]);
      expect(Number(again.headers['last-event-id'])).toBeGreaterThanOrEqual(end);
      // Without After the list starts at the oldest kept event, and reads to the newest.
      const first = await list('?Projects=NoSuchProject');
      expect(first.body).toEqual([]);
      expect(Number(first.headers['last-event-id'])).toBeGreaterThanOrEqual(end);
    });
  });

  describe('as Server-Sent Events', () => {
    const stream = async (query: string, auth: string, lastEventId: number) => {
      const s = await openEventStream(server.url, `/api/events${query}`, { Authorization: auth, 'Last-Event-ID': String(lastEventId) });
      open.push(s);
      expect(s.status).toBe(200);
      return s;
    };

    /**
     * The rows of the stream's own reads while `work` runs (the feed reads every event for all
     * streams, without the account's project rights).
     */
    const ownReads = async (work: () => Promise<void>) => {
      const reads = jest.spyOn(liveEventsData, 'readEventsAfter');
      try {
        await work();
        const own = reads.mock.calls.flatMap((call, i) =>
          call[3].projectRights ? [reads.mock.results[i]!.value as ReturnType<typeof liveEventsData.readEventsAfter>] : [],
        );
        return await Promise.all(own);
      } finally {
        reads.mockRestore();
      }
    };

    it('when a stream resumes with Last-Event-ID before runs of other projects’ events, then it gets exactly the project’s events, in order, once, and its reads hold only those', async () => {
      const want = await expected({ projectRights: ['*'], projects: [w.projects.b2b] });
      const reads = await ownReads(async () => {
        const s = await stream(`?Projects=${encodeURIComponent(b2bProjectId)}`, w.accounts.full.auth, start);
        await s.until((x) => x.events.length >= want.length, 'the B2B project’s events');
        expect(s.events.map((e) => e.id)).toEqual(want);
      });
      // Each read looked at EVENTS_READ_SPAN ids at most, and went on.
      expect(reads.length).toBeGreaterThanOrEqual(Math.ceil((end - start) / SPAN));
      for (const read of reads) for (const row of read.rows) expect(want).toContain(row.position);
    });

    it('when a stream of an account restricted to the B2B project is cut and resumes with the last id it got, then nothing is lost or repeated, its reads hold only its events, and new events still pass its rules', async () => {
      const want = await expected({ projectRights: [`B2B-${w.id}*`] });
      let second: OpenedStream | undefined;
      let got: number[] = [];
      const reads = await ownReads(async () => {
        const first = await stream('', w.accounts.b2b.auth, start);
        await first.until((x) => x.events.length >= 2, 'two events');
        first.close();
        got = first.events.map((e) => e.id);
        second = await stream('', w.accounts.b2b.auth, got.at(-1)!);
        await second.until((x) => got.length + x.events.length >= want.length, 'the rest');
      });
      expect([...got, ...second!.events.map((e) => e.id)]).toEqual(want);
      expect(reads.length).toBeGreaterThan(0);
      for (const read of reads) for (const row of read.rows) expect(want).toContain(row.position);
      // Live: a retail lead is left out, the B2B lead after it comes.
      await importLead(w.campaigns.retail, 'Live retail');
      const live = await importLead(w.campaigns.b2b, 'Live B2B');
      await second!.until((x) => x.events.some((e) => e.data.data.uniqueId === live), 'the new B2B lead');
      expect(second!.events.slice(want.length - got.length).map((e) => e.data.data.uniqueId)).toEqual([live]);
    });
  });
});
