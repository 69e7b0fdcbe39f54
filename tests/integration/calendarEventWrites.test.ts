import request from 'supertest';
import { createEvent, deleteEvent, replaceEvent } from '../../src/data/calendarEventRepository';
import { projectScope } from '../../src/data/projectScope';
import { useTestWorld } from '../harness/useTestWorld';
import { statementsDuring } from '../harness/statements';

/**
 * Calendar event writes as one statement each (the write and its hook event together): what a
 * write costs in statements, that the event is written by the write's own transaction, that a
 * refused write stores nothing, and that replacements racing with moves to another calendar are
 * each applied.
 */
describe('calendar event writes in one statement', () => {
  const { t, w } = useTestWorld();
  const scope = projectScope(['*']);
  let calendars: { a: string; b: string; retail: string };
  let lead: string;

  beforeAll(async () => {
    calendars = { a: `writes-a-${w.id}`, b: `writes-b-${w.id}`, retail: `writes-retail-${w.id}` };
    lead = `writes-lead-${w.id}`;
    await t.load(
      { type: 'calendar', code: calendars.a, project: w.projects.b2b },
      { type: 'calendar', code: calendars.b, project: w.projects.b2b },
      { type: 'calendar', code: calendars.retail, project: w.projects.retail },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: lead, data: { Name: 'Calendar lead', Phone: '+45 12 34 56 78' } },
    );
  });

  const input = (calendarCode: string, title = 'Call back') => ({
    calendarCode,
    leadUniqueId: lead,
    title,
    notes: 'After lunch',
    start: new Date('2031-02-03T12:00:00Z'),
    end: new Date('2031-02-03T12:30:00Z'),
    source: 'crm',
    externalId: 'x-1',
  });

  const eventsOf = (id: string) => t.db('hook_events').where({ resource_id: id }).orderBy('id').pluck<string[]>('type');

  it('when an event is created, replaced and deleted, then each write is one statement with its event', async () => {
    let id = '';
    const created = await statementsDuring(async () => {
      const result = await createEvent(t.db, input(calendars.a), scope);
      if (result.kind !== 'ok') throw new Error(result.kind);
      id = result.event.uniqueId;
    });
    const replaced = await statementsDuring(() => replaceEvent(t.db, id, input(calendars.b, 'Moved'), scope));
    const deleted = await statementsDuring(() => deleteEvent(t.db, id, scope));
    expect([created.length, replaced.length, deleted.length]).toEqual([1, 1, 1]);
    expect(await eventsOf(id)).toEqual(['calendarEvent.created', 'calendarEvent.updated', 'calendarEvent.deleted']);
  });

  it('when an event is created, then its hook event is written by the transaction that wrote the event', async () => {
    const result = await createEvent(t.db, input(calendars.a), scope);
    if (result.kind !== 'ok') throw new Error(result.kind);
    const { rows } = await t.db.raw<{ rows: { same: boolean }[] }>(
      `select h.xmin::text = e.xmin::text as same
         from hook_events h join calendar_events e on e.unique_id = h.resource_id
        where h.resource_id = ?`,
      [result.event.uniqueId],
    );
    expect(rows).toEqual([{ same: true }]);
  });

  it('when a write is refused, then it says why and stores neither the event nor a hook event', async () => {
    const before = await t.db('hook_events').max<{ id: number }>('id as id').first();
    const b2bOnly = projectScope([`${w.projects.b2b}*`]);
    expect(await createEvent(t.db, input(calendars.retail), b2bOnly)).toEqual({ kind: 'forbidden_calendar' });
    expect(await createEvent(t.db, input(`no-such-${w.id}`), scope)).toEqual({ kind: 'unknown_calendar' });
    expect(await createEvent(t.db, { ...input(calendars.a), leadUniqueId: `no-such-lead-${w.id}` }, scope)).toEqual({
      kind: 'unknown_lead',
    });
    const created = await createEvent(t.db, input(calendars.a), scope);
    if (created.kind !== 'ok') throw new Error(created.kind);
    const id = created.event.uniqueId;
    expect(await replaceEvent(t.db, id, input(calendars.retail), b2bOnly)).toEqual({ kind: 'forbidden_calendar' });
    expect(await replaceEvent(t.db, `no-such-event-${w.id}`, input(calendars.a), scope)).toEqual({ kind: 'not_found' });
    expect(await deleteEvent(t.db, id, projectScope([`${w.projects.retail}*`]))).toBe(false);
    expect(await t.db('calendar_events').where({ calendar_id: t.db('calendars').select('id').where({ code: calendars.retail }) })).toEqual(
      [],
    );
    expect(await eventsOf(id)).toEqual(['calendarEvent.created']);
    // Other files write events meanwhile: the events of this file's lead since the refusals began.
    const after = await t
      .db('hook_events')
      .where('id', '>', before?.id ?? 0)
      .whereRaw(`snapshot->>'leadUniqueId' = ?`, [lead])
      .pluck<string[]>('resource_id');
    expect(after).toEqual([id]);
  });

  it('when replacements moving an event between two calendars run at once, then each is applied in turn', async () => {
    const created = await createEvent(t.db, input(calendars.a), scope);
    if (created.kind !== 'ok') throw new Error(created.kind);
    const id = created.event.uniqueId;
    const { version: before } = await t.db('calendar_events').where({ unique_id: id }).first<{ version: number }>('version');
    const moves = Array.from({ length: 8 }, (_, i) => input(i % 2 === 0 ? calendars.b : calendars.a, `Move ${i}`));
    const results = await Promise.all(moves.map((m) => replaceEvent(t.db, id, m, scope)));
    expect(results.map((r) => r.kind)).toEqual(moves.map(() => 'ok'));
    const { version } = await t.db('calendar_events').where({ unique_id: id }).first<{ version: number }>('version');
    expect(version).toBe(before + moves.length);
    expect((await eventsOf(id)).filter((type) => type === 'calendarEvent.updated')).toHaveLength(moves.length);
  });

  it('when the API creates an event, then the answer is the event GET lists', async () => {
    const res = await request(t.app)
      .post('/api/calendars/events')
      .set('Authorization', w.accounts.full.auth)
      .send({ ...input(calendars.a, 'Through the API'), start: '2031-02-04T10:00:00', end: '2031-02-04T10:30:00' });
    expect(res.status).toBe(200);
    const listed = await request(t.app)
      .get(`/api/calendars/${calendars.a}/events?FromDate=2031-02-04&ToDate=2031-02-05`)
      .set('Authorization', w.accounts.full.auth);
    expect(listed.body).toEqual([res.body]);
  });
});
