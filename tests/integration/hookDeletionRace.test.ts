import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { until } from '../harness/until';

/**
 * A hook deleted while a write that matches it is running: the write must neither fail (its
 * delivery would name a hook that no longer exists) nor queue a delivery for the deleted hook.
 * The deleting transaction is held open by the test, so the write reaches the hook while it is
 * being deleted, whatever the machine's speed.
 */
describe('a hook deleted while a write matches it', () => {
  const { t, w } = useTestWorld({ HOOKS_ALLOW_HTTP: 'true', HOOKS_ALLOWED_HOSTS: '127.0.0.1' });

  /** Whether a backend of this database is waiting for a lock in a statement that contains `text`. */
  async function waitingFor(text: string): Promise<boolean> {
    const { rows } = await t.db.raw<{ rows: { n: number }[] }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and position(? in query) > 0`,
      [text],
    );
    return rows[0]!.n > 0;
  }

  /** A hook of the full account for `events` of this file's B2B project, by its row id. */
  async function newHook(events: string[]): Promise<number> {
    const created = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', w.accounts.full.auth)
      .send({ name: 'deleted meanwhile', url: 'http://127.0.0.1:9/deleted', events, projects: [w.projects.b2b] });
    expect(created.status).toBe(201);
    const hook = await t
      .db('hooks')
      .where({ unique_id: (created.body as { uniqueId: string }).uniqueId })
      .first<{ id: number }>('id');
    return hook.id;
  }

  /**
   * Deletes the hook in a transaction held open until `write` waits for it (a statement
   * containing `waitText` waits for a lock), then commits the deletion; `write`'s answer.
   */
  async function writeWhileDeleting(hookId: number, waitText: string, write: () => request.Test): Promise<request.Response> {
    const deleting = await t.db.transaction();
    try {
      await deleting('hooks').where({ id: hookId }).forUpdate().select('id');
      await deleting('hooks').where({ id: hookId }).delete();
      let answer: request.Response | undefined;
      const writing = write().then((res) => (answer = res));
      await until(
        'the write waiting for the deleted hook',
        async () => {
          if (answer) throw new Error(`the write answered ${answer.status} without waiting: ${JSON.stringify(answer.body)}`);
          return waitingFor(waitText);
        },
        { timeoutMs: 20_000, intervalMs: 20 },
      );
      await deleting.commit();
      return await writing;
    } finally {
      if (!deleting.isCompleted()) await deleting.rollback();
    }
  }

  const deliveriesOf = (hookId: number) => t.db('hook_deliveries').where({ hook_id: hookId }).count<{ n: number }[]>('* as n');

  it('when the hook is deleted while a lead that matches it is being imported, then the import succeeds and no delivery names the hook', async () => {
    const hookId = await newHook(['lead.created']);
    const imported = await writeWhileDeleting(hookId, 'lcm_import_lead', () =>
      request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Raced', Telefon: '+45 12 34 56 78', Customer: uniq('C-') } }),
    );
    expect({ status: imported.status, success: (imported.body as { success?: boolean }).success }).toEqual({ status: 200, success: true });
    // The lead and its event (for the live stream and other hooks) are stored; the deleted hook has no delivery.
    const uniqueId = (imported.body as { uniqueId: string }).uniqueId;
    expect(await t.db('leads').where({ unique_id: uniqueId }).first('id')).toBeDefined();
    expect(await t.db('hook_events').where({ resource_id: uniqueId }).pluck('type')).toEqual(['lead.created']);
    expect(await deliveriesOf(hookId)).toEqual([{ n: 0 }]);
  });

  it('when the hook is deleted while its test delivery is being queued, then the test is a 404 and nothing is queued for it', async () => {
    const hookId = await newHook(['lead.created']);
    const { unique_id: uniqueId } = await t.db('hooks').where({ id: hookId }).first<{ unique_id: string }>('unique_id');
    const tested = await writeWhileDeleting(hookId, 'for key share', () =>
      request(t.app).post(`/api/hooks/${uniqueId}/test`).set('Authorization', w.accounts.full.auth),
    );
    expect({ status: tested.status, code: (tested.body as { code?: string }).code }).toEqual({ status: 404, code: 'not_found' });
    expect(await deliveriesOf(hookId)).toEqual([{ n: 0 }]);
  });

  it('when the hook is deleted while a calendar event that matches it is being created, then the event is created and no delivery names the hook', async () => {
    const calendar = uniq('race-calendar-');
    const lead = uniq('race-lead-');
    await t.load(
      { type: 'calendar', code: calendar, project: w.projects.b2b },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: lead, data: { Name: 'Calendar lead', Phone: '+45 12 34 56 78' } },
    );
    const hookId = await newHook(['calendarEvent.created']);
    const created = await writeWhileDeleting(hookId, 'calendar_events', () =>
      request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send({
        calendarCode: calendar,
        leadUniqueId: lead,
        title: 'Raced',
        notes: 'After lunch',
        start: '2031-02-04T10:00:00',
        end: '2031-02-04T10:30:00',
        source: 'crm',
        externalId: 'race-1',
      }),
    );
    expect(created.status).toBe(200);
    const uniqueId = (created.body as { uniqueId: string }).uniqueId;
    expect(await t.db('hook_events').where({ resource_id: uniqueId }).pluck('type')).toEqual(['calendarEvent.created']);
    expect(await deliveriesOf(hookId)).toEqual([{ n: 0 }]);
  });
});
