import request from 'supertest';
import { createOwnDatabase, createTestApp, TestApp, uniq } from '../harness/testApp';
import { createWorld, World, keyFieldsCampaign } from '../harness/world';
import { startHookReceiver, HookReceiver, ReceivedDelivery } from '../harness/hookReceiver';
import { startHookWorker, HookWorker } from '../../src/jobs/hookWorker';
import { createLogger } from '../../src/config/logger';
import { sweepLeads } from '../../src/data/lifecycleSweep';
import { recordLeadEvents } from '../../src/data/hookEvents';

/**
 * Every event source writes its event with the change, and the delivered `data` is what the
 * API answers for that resource, for the hook's account (verified by the receiver with the
 * standardwebhooks package). Project rights and filters decide who receives what.
 */
describe('hook events', () => {
  let t: TestApp;
  let w: World;
  let receiver: HookReceiver;
  let worker: HookWorker;
  // A database of this file's own: other files' workers must not take these jobs, nor this worker theirs.
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;

  beforeAll(async () => {
    own = await createOwnDatabase('hook_events');
    t = await createTestApp({
      DATABASE_URL: own.url,
      HOOKS_ALLOW_HTTP: 'true',
      HOOKS_ALLOWED_HOSTS: '127.0.0.1',
      HOOKS_POLL_INTERVAL_MS: '200',
    });
    w = await createWorld(t);
    receiver = await startHookReceiver();
    worker = await startHookWorker({ db: t.db, settings: t.settings, logger: createLogger('silent') });
  });
  afterAll(async () => {
    await worker.stop();
    await receiver.close();
    await t.close();
    await own.drop();
  });

  async function hook(path: string, body: Record<string, unknown>, auth = w.accounts.full.auth) {
    const res = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', auth)
      .send({ name: path, url: `${receiver.url}${path}`, ...body });
    expect(res.status).toBe(201);
    const created = res.body as { uniqueId: string; secret: string };
    receiver.secret(path, created.secret);
    return created.uniqueId;
  }
  /** The answer to POST /leads. */
  const imported = (res: request.Response) => res.body as { success: boolean; uniqueId: string };
  const get = (path: string, auth = w.accounts.full.auth) => request(t.app).get(path).set('Authorization', auth);
  const envelope = (d: ReceivedDelivery) => {
    expect(d.verified).toBe(true);
    return d.json as { type: string; timestamp: string; data: Record<string, unknown> };
  };
  const byResource = (list: ReceivedDelivery[], id: string) => list.map(envelope).filter((e) => e.data.uniqueId === id);
  /** The data of a lead.statusChanged event without previousStatus: the lead as the API answers it. */
  const withoutPreviousStatus = (data: Record<string, unknown>) => {
    const lead = { ...data };
    delete lead.previousStatus;
    return lead;
  };

  it('when a lead is imported through the API, then lead.created carries the lead as GET /leads/{UniqueId} answers it', async () => {
    const path = `/created-${w.id}`;
    await hook(path, { events: ['lead.created'], campaignCode: w.campaigns.b2b });
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Hook Lead', Telefon: '+4511223344', Revenue: '12', Secret: 's3' } });
    expect(imported(res).success).toBe(true);
    const [got] = await receiver.waitFor(path, 1);
    const body = envelope(got!);
    expect(body.type).toBe('lead.created');
    const api = await get(`/api/leads/${imported(res).uniqueId}`);
    expect(body.data).toEqual(api.body);
    expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
  });

  it('when an import with OnDuplicate=Update merges into a stored lead, single or bulk, then lead.updated carries the lead as GET answers it', async () => {
    const path = `/import-updated-${w.id}`;
    await hook(path, { events: ['lead.updated'], campaignCode: w.campaigns.b2b });
    const first = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Before', Telefon: '+4531415926' } });
    const again = await request(t.app)
      .post('/api/leads?DuplicateCheck=Campaign&OnDuplicate=Update')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'After', Telefon: '31 41 59 26' } });
    expect(again.body).toEqual({ success: true, uniqueId: imported(first).uniqueId, updated: true });
    const [single] = await receiver.waitFor(path, 1);
    expect(envelope(single!).type).toBe('lead.updated');
    expect(envelope(single!).data).toEqual((await get(`/api/leads/${imported(first).uniqueId}`)).body);

    const bulk = await request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b, DuplicateCheck: 'Campaign', OnDuplicate: 'Update' })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify([{ Name: 'Bulk after', Telefon: '+45 31 41 59 26' }]));
    expect(bulk.body).toEqual([{ row: 1, success: true, uniqueId: imported(first).uniqueId, updated: true }]);
    const both = await receiver.waitFor(path, 2);
    const last = envelope(both[1]!);
    expect(last.type).toBe('lead.updated');
    expect(last.data).toEqual((await get(`/api/leads/${imported(first).uniqueId}`)).body);
    expect((last.data as { data: Record<string, string> }).data.Name).toBe('Bulk after');
  });

  it('when a hook’s projects name a project by its unique id (GET /projects), then it receives that project’s events only', async () => {
    const path = `/by-project-id-${w.id}`;
    const projects = (await get('/api/projects')).body as { uniqueId: string; name: string }[];
    const retailId = projects.find((p) => p.name === w.projects.retail)!.uniqueId;
    await hook(path, { events: ['lead.created'], projects: [retailId.toUpperCase()] });
    const b2b = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'B2B', Telefon: '+4511223350' } });
    const retail = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.retail, Data: { Name: 'Retail', Telefon: '+4511223351' } });
    await receiver.waitFor(path, 1);
    await new Promise((r) => setTimeout(r, 500));
    const ids = receiver.at(path).map((d) => envelope(d).data.uniqueId);
    expect(ids).toEqual([imported(retail).uniqueId]);
    expect(ids).not.toContain(imported(b2b).uniqueId);
  });

  it('when a lead is imported into a campaign outside a hook account’s projects, then that hook receives nothing', async () => {
    const path = `/b2b-only-${w.id}`;
    await hook(path, { events: ['lead.created'] }, w.accounts.b2b.auth);
    const retail = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.retail, Data: { Name: 'Retail', Telefon: '+4511223345' } });
    const b2b = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'B2B', Telefon: '+4511223346', Secret: 'hidden' } });
    const got = await receiver.waitFor(path, 1);
    await new Promise((r) => setTimeout(r, 500));
    const ids = receiver.at(path).map((d) => envelope(d).data.uniqueId);
    const b2bId = imported(b2b).uniqueId;
    expect(ids).toContain(b2bId);
    expect(ids).not.toContain(imported(retail).uniqueId);
    // The Partner account sees no Full field, in hooks as in the API.
    const data = envelope(got.find((d) => envelope(d).data.uniqueId === b2bId)!).data;
    expect(data).toEqual((await get(`/api/leads/${b2bId}`, w.accounts.b2b.auth)).body);
    expect((data.data as Record<string, string>).Secret).toBeUndefined();
  });

  it('when the hook account does not reach the phone field, then the lead it receives has no phoneNumber and {PhoneNumber} is empty, as data leaves the field out', async () => {
    const { code, records } = keyFieldsCampaign(w);
    await t.load(...records);
    const standard = `/keys-standard-${w.id}`;
    const templated = `/keys-template-${w.id}`;
    await hook(standard, { events: ['lead.created'], campaignCode: code }, w.accounts.b2b.auth);
    await hook(
      templated,
      {
        events: ['lead.created'],
        campaignCode: code,
        contentTemplate: '{"phone":"{PhoneNumber}","key":"{ExternalKey}","mobile":"{Data.Mobile}"}',
      },
      w.accounts.b2b.auth,
    );
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: code, Data: { Name: 'Keys', Mobile: '+45 20 30 40 50', Ref: 'REF-0417' } });
    const id = imported(res).uniqueId;
    const data = envelope((await receiver.waitFor(standard, 1))[0]!).data;
    expect(data).not.toHaveProperty('phoneNumber');
    expect(data).toMatchObject({ uniqueId: id, externalKey: 'REF-0417', data: { Name: 'Keys', Ref: 'REF-0417' } });
    expect(data).toEqual((await get(`/api/leads/${id}`, w.accounts.b2b.auth)).body);
    const [filled] = await receiver.waitFor(templated, 1);
    expect(filled!.json).toEqual({ phone: '', key: 'REF-0417', mobile: '' });
  });

  it('when the loader loads a lead and a completed call with its outcome, then lead.created, call.ended and lead.statusChanged arrive with the API’s bodies', async () => {
    const path = `/loader-${w.id}`;
    await hook(path, { events: ['lead.created', 'lead.statusChanged', 'call.ended'], campaignCode: w.campaigns.b2b });
    const leadId = uniq('hook-lead-');
    const callId = uniq('hook-call-');
    await t.load({ type: 'lead', uniqueId: leadId, campaign: w.campaigns.b2b, data: { Name: 'Loaded', Phone: '+4512121212' } });
    await t.load({
      type: 'call',
      uniqueId: callId,
      campaign: w.campaigns.b2b,
      user: w.users.agent,
      uniqueLeadId: leadId,
      leadPhoneNumber: '+4512121212',
      endCause: 'NormalDisconnect',
      inProgress: false,
      connected: true,
      incoming: false,
      startTime: '2031-03-04T10:00:00',
      connectTime: '2031-03-04T10:00:05',
      endTime: '2031-03-04T10:02:00',
      previewDuration: 'PT2S',
      conversationDuration: 'PT1M55S',
      leadStatus: 'UserProcessed',
      leadClosure: 'Success',
      applyOutcome: true,
    });
    const got = (await receiver.waitFor(path, 3)).map(envelope);
    expect(got.map((g) => g.type).sort()).toEqual(['call.ended', 'lead.created', 'lead.statusChanged']);
    const created = got.find((g) => g.type === 'lead.created')!;
    expect(created.data).toMatchObject({ uniqueId: leadId, status: 'New' });
    const changed = got.find((g) => g.type === 'lead.statusChanged')!;
    const lead = await get(`/api/leads/${leadId}`);
    expect(changed.data).toEqual({ ...lead.body, previousStatus: 'New' });
    expect(changed.data.status).toBe('UserProcessed');
    const ended = got.find((g) => g.type === 'call.ended')!;
    const calls = await get(`/api/calls?OrgCode=${encodeURIComponent(w.users.agent)}&StartTime=2031-03-04T10:00:00&TimeSpan=PT1M`);
    expect(ended.data).toEqual((calls.body as { uniqueId: string }[]).find((c) => c.uniqueId === callId));
    // Loading the same file again changes nothing and sends nothing.
    await t.load({
      type: 'lead',
      uniqueId: leadId,
      campaign: w.campaigns.b2b,
      data: { Name: 'Loaded', Phone: '+4512121212' },
      status: 'UserProcessed',
      closure: 'Success',
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.at(path)).toHaveLength(3);
  });

  it('when the sweeper abandons a lead, then lead.statusChanged says so with the previous status, and a leadStatus filter lets only that status through', async () => {
    const code = `SWEEP-${w.id}`;
    await t.load({
      type: 'campaign',
      code,
      name: 'Sweep',
      project: w.projects.b2b,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
      abandonAfter: 'P1D',
    });
    const path = `/sweep-${w.id}`;
    const filtered = `/sweep-expired-${w.id}`;
    await hook(path, { events: ['lead.statusChanged'], campaignCode: code });
    await hook(filtered, { events: ['lead.statusChanged'], campaignCode: code, leadStatus: 'Expired' });
    const leadId = uniq('sweep-');
    await t.load({
      type: 'lead',
      uniqueId: leadId,
      campaign: code,
      data: { Name: 'Old', Phone: '+4512121213' },
      status: 'Unresolved',
      lastModifiedTime: '2031-01-01T10:00:00',
    });
    const campaign = await t.db<{ id: number; code: string }>('campaigns').where({ code }).first('id');
    const result = await sweepLeads(t.db, new Date('2031-01-03T10:00:00Z'), 'Europe/Copenhagen', { campaignIds: [campaign!.id] });
    expect(result.abandoned).toBe(1);
    const [got] = await receiver.waitFor(path, 1);
    const body = envelope(got!);
    expect(body).toMatchObject({
      type: 'lead.statusChanged',
      data: { uniqueId: leadId, status: 'Abandoned', previousStatus: 'Unresolved' },
    });
    expect(withoutPreviousStatus(body.data)).toEqual((await get(`/api/leads/${leadId}`)).body);
    expect(receiver.at(filtered)).toHaveLength(0);
  });

  it('when a number is put on the do-not-call list, then each open lead it moves gets lead.statusChanged with its previous status', async () => {
    const path = `/dnc-${w.id}`;
    await hook(path, { events: ['lead.statusChanged'], campaignCode: w.campaigns.b2b });
    const number = `+4561${String(Date.now() % 1000000).padStart(6, '0')}`;
    const leadIds = [];
    for (const name of ['First', 'Second']) {
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .send({ CampaignCode: w.campaigns.b2b, Data: { Name: name, Telefon: number } });
      expect(imported(res).success).toBe(true);
      leadIds.push(imported(res).uniqueId);
    }
    const listed = await request(t.app)
      .post('/api/donotcallnumbers')
      .set('Authorization', w.accounts.full.auth)
      .send({ phoneNumber: number });
    expect(listed.status).toBe(200);
    const got = (await receiver.waitFor(path, 2)).map(envelope);
    expect(got.map((g) => g.data.uniqueId).sort()).toEqual([...leadIds].sort());
    for (const body of got) {
      expect(body).toMatchObject({ type: 'lead.statusChanged', data: { status: 'DoNotCall', previousStatus: 'New' } });
      expect(withoutPreviousStatus(body.data)).toEqual((await get(`/api/leads/${String(body.data.uniqueId)}`)).body);
    }
  });

  it('when calendar events are created, replaced and deleted, then each event carries the calendar event as the API answers it', async () => {
    const calendar = `hook-cal-${w.id}`;
    await t.load(
      { type: 'calendar', code: calendar, project: w.projects.b2b },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: `hook-cal-lead-${w.id}`, data: { name: 'Ann', telefon: '+45 12 34 56 78' } },
    );
    const path = `/calendar-${w.id}`;
    await hook(path, { events: ['calendarEvent.created', 'calendarEvent.updated', 'calendarEvent.deleted'] });
    const event = {
      calendarCode: calendar,
      leadUniqueId: `hook-cal-lead-${w.id}`,
      title: 'Call back "soon"',
      notes: 'æøå',
      start: '2031-02-03T10:00:00',
      end: '2031-02-03T10:30:00',
      source: 'crm',
      externalId: 'x1',
    };
    const created = await request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send(event);
    expect(created.status).toBe(200);
    const id = (created.body as { uniqueId: string }).uniqueId;
    const replaced = await request(t.app)
      .put(`/api/calendars/events/${id}`)
      .set('Authorization', w.accounts.full.auth)
      .send({ ...event, uniqueId: id, title: 'Moved' });
    expect(replaced.status).toBe(200);
    const deleted = await request(t.app)
      .delete(`/api/calendars/events/${id}`)
      .set('Authorization', w.accounts.full.auth)
      .send({ uniqueId: id });
    expect(deleted.status).toBe(200);
    const got = byResource(await receiver.waitFor(path, 3), id);
    const types = got.map((g) => g.type);
    expect(types.sort()).toEqual(['calendarEvent.created', 'calendarEvent.deleted', 'calendarEvent.updated']);
    expect(got.find((g) => g.type === 'calendarEvent.created')!.data).toEqual(created.body);
    expect(got.find((g) => g.type === 'calendarEvent.updated')!.data).toEqual(replaced.body);
    expect(got.find((g) => g.type === 'calendarEvent.deleted')!.data).toEqual(replaced.body);
  });

  it('when a change is rolled back, then its event is gone with it', async () => {
    const path = `/rollback-${w.id}`;
    await hook(path, { events: ['lead.created'], campaignCode: w.campaigns.retail });
    // The second line is bad: the load's one transaction rolls back, and the first lead's event with it.
    await expect(
      t.load(
        { type: 'lead', uniqueId: uniq('rb-'), campaign: w.campaigns.retail, data: { Name: 'Kept?', Phone: '+4512121214' } },
        { type: 'lead', uniqueId: uniq('rb-'), campaign: 'NO-SUCH-CAMPAIGN', data: {} },
      ),
    ).rejects.toThrow(/line 2/);
    await new Promise((r) => setTimeout(r, 800));
    expect(receiver.at(path)).toHaveLength(0);
  });

  it('when a public client of the live service posts its exact body with a leadReleaseType, then lead.statusChanged reaches it only for leads closed that way', async () => {
    const path = `/release-${w.id}`;
    const res = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', w.accounts.full.auth)
      .send({
        name: 'Closed as success',
        campaignCode: w.campaigns.b2b,
        leadStatus: 'UserProcessed',
        method: 'POST',
        urlTemplate: `${receiver.url}${path}`,
        format: 'Json',
        standardTemplateName: 'StandardTemplate.PostJson',
        leadReleaseType: 'Success',
      });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ leadReleaseType: 'Success', method: 'POST', format: 'Json', standardTemplateName: 'Standard' });
    receiver.secret(path, (res.body as { secret: string }).secret);
    const success = uniq('release-ok-');
    const other = uniq('release-no-');
    for (const id of [success, other])
      await t.load({ type: 'lead', uniqueId: id, campaign: w.campaigns.b2b, data: { Name: 'Release', Phone: '+4512121299' } });
    await t.load(
      {
        type: 'lead',
        uniqueId: other,
        campaign: w.campaigns.b2b,
        data: { Name: 'Release', Phone: '+4512121299' },
        status: 'UserProcessed',
        closure: 'NotInterested',
      },
      {
        type: 'lead',
        uniqueId: success,
        campaign: w.campaigns.b2b,
        data: { Name: 'Release', Phone: '+4512121299' },
        status: 'UserProcessed',
        closure: 'Success',
      },
    );
    const [got] = await receiver.waitFor(path, 1);
    expect(envelope(got!)).toMatchObject({
      type: 'lead.statusChanged',
      data: { uniqueId: success, closure: 'Success', status: 'UserProcessed' },
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.at(path).map((d) => envelope(d).data.uniqueId)).toEqual([success]);
  });

  it('when an import merges into an existing lead (lead.updated), then only hooks subscribed to lead.updated receive it, with the lead as the API answers it', async () => {
    const updatedPath = `/updated-${w.id}`;
    const createdPath = `/created-only-${w.id}`;
    await hook(updatedPath, { events: ['lead.updated'], campaignCode: w.campaigns.b2b });
    await hook(createdPath, { events: ['lead.created'], campaignCode: w.campaigns.b2b });
    const leadId = uniq('updated-');
    await t.load({ type: 'lead', uniqueId: leadId, campaign: w.campaigns.b2b, data: { Name: 'Before', Phone: '+4512121288' } });
    const row = (await t.db<{ id: number; unique_id: string }>('leads').where({ unique_id: leadId }).first('id'))!;
    await t.db.transaction(async (trx) => {
      await trx('leads')
        .where({ id: row.id })
        .update({ data: JSON.stringify({ Name: 'After', Phone: '+4512121288' }) });
      await recordLeadEvents(trx, 'lead.updated', [{ leadId: row.id }], new Date());
    });
    const [got] = await receiver.waitFor(updatedPath, 1);
    const body = envelope(got!);
    expect(body.type).toBe('lead.updated');
    expect(body.data).toEqual((await get(`/api/leads/${leadId}`)).body);
    await new Promise((r) => setTimeout(r, 500));
    // The lead.created-only hook got the load's lead.created, and no lead.updated.
    expect(receiver.at(createdPath).map((d) => envelope(d).type)).not.toContain('lead.updated');
  });
});
