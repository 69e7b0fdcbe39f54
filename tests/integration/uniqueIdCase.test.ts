import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * Unique ids as .NET, Java and Delphi clients write them (docs/decisions.md, Wire conventions): a
 * UUID in upper case, or in braces, names the same resource as the lower-case id the API writes,
 * in paths, query filters and body references; answers keep writing it in lower case.
 */
describe('unique ids in any letter case and in braces', () => {
  const { t, w } = useTestWorld();
  const upper = (id: string) => id.toUpperCase();
  const braced = (id: string) => `{${id.toUpperCase()}}`;
  const call = randomUUID();
  const calendar = () => `cal-${w.id}`;
  let lead: string;
  let leadDefinition: string;
  let campaign: string;

  beforeAll(async () => {
    await t.load(
      {
        type: 'call',
        uniqueId: call,
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueLeadId: randomUUID(),
        leadPhoneNumber: '+4512345678',
        endCause: 'NoResponse',
        inProgress: false,
        connected: false,
        incoming: false,
        startTime: '2026-05-06T10:00:00+02:00',
        endTime: '2026-05-06T10:01:00+02:00',
        previewDuration: 'PT5S',
      },
      { type: 'recording', call, startTime: '2026-05-06T10:00:05+02:00', recordingType: 'FullRecording', fileName: 'a.wav' },
      { type: 'calendar', code: calendar(), project: w.projects.b2b },
    );
    const imported = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Case', Telefon: '+45 12 34 56 78', Customer: uniq('C-') } });
    lead = (imported.body as { uniqueId: string }).uniqueId;
    const definitions = await request(t.app).get('/api/leaddefinitions').set('Authorization', w.accounts.full.auth);
    leadDefinition = (definitions.body as { uniqueId: string; name: string }[]).find((d) => d.name === w.leadDefinition)!.uniqueId;
    const campaigns = await request(t.app)
      .get(`/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}`)
      .set('Authorization', w.accounts.full.auth);
    campaign = (campaigns.body as { uniqueId: string }).uniqueId;
  });

  const get = (path: string) => request(t.app).get(path).set('Authorization', w.accounts.full.auth);

  it('when a lead, a call, a lead definition or a campaign is named by its UUID in upper case or in braces, then it is found and answered in lower case', async () => {
    expect(lead).toMatch(/^[0-9a-f-]{36}$/);
    for (const spell of [upper, braced, (id: string) => ` ${upper(id)}\t`]) {
      const byLead = await get(`/api/leads/${encodeURIComponent(spell(lead))}`);
      const recordings = await get(`/api/calls/${encodeURIComponent(spell(call))}/recordings`);
      const definition = await get(`/api/leaddefinitions/${encodeURIComponent(spell(leadDefinition))}`);
      const byCampaign = await get(`/api/campaigns/${encodeURIComponent(spell(campaign))}`);
      expect({
        lead: [byLead.status, (byLead.body as { uniqueId: string }).uniqueId],
        recordings: [recordings.status, (recordings.body as { fileName: string }[]).map((r) => r.fileName)],
        definition: [definition.status, (definition.body as { uniqueId: string }).uniqueId],
        campaign: [byCampaign.status, (byCampaign.body as { code: string }).code],
      }).toEqual({
        lead: [200, lead],
        recordings: [200, ['a.wav']],
        definition: [200, leadDefinition],
        campaign: [200, w.campaigns.b2b],
      });
    }
  });

  it('when simpleleads and events filter by UniqueId and Campaigns in upper case or in braces, then the lead is found', async () => {
    for (const spell of [upper, braced]) {
      const res = await get(
        `/api/simpleleads?UniqueId=${encodeURIComponent(spell(lead))}&Campaigns=${encodeURIComponent(spell(campaign))}`,
      );
      expect(res.status).toBe(200);
      expect((res.body as { uniqueId: string }[]).map((l) => l.uniqueId)).toEqual([lead]);
      const events = await get(`/api/events?Campaigns=${encodeURIComponent(spell(campaign))}`).set('Accept', 'application/json');
      expect(events.status).toBe(200);
    }
  });

  it('when a lead is patched by its upper-case id, then the lead is changed', async () => {
    const res = await request(t.app)
      .patch(`/api/leads/${braced(lead)}`)
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/merge-patch+json')
      .send(JSON.stringify({ priority: 7 }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uniqueId: lead, priority: 7 });
  });

  it('when a calendar event names its lead in upper case, and is replaced and deleted by its id in braces, then the ids are the lower-case ones', async () => {
    const created = await request(t.app)
      .post('/api/calendars/events')
      .set('Authorization', w.accounts.full.auth)
      .send({
        calendarCode: calendar(),
        leadUniqueId: braced(lead),
        title: 'Call back',
        notes: '',
        start: '2026-05-07T10:00:00',
        end: '2026-05-07T10:30:00',
        source: 'crm',
        externalId: 'X-1',
      });
    expect(created.status).toBe(200);
    const event = created.body as { uniqueId: string; leadUniqueId: string };
    expect(event.leadUniqueId).toBe(lead);
    const replaced = await request(t.app)
      .put(`/api/calendars/events/${encodeURIComponent(braced(event.uniqueId))}`)
      .set('Authorization', w.accounts.full.auth)
      .send({
        uniqueId: upper(event.uniqueId),
        calendarCode: calendar(),
        leadUniqueId: upper(lead),
        title: 'Call back later',
        notes: '',
        start: '2026-05-07T11:00:00',
        end: '2026-05-07T11:30:00',
        source: 'crm',
        externalId: 'X-1',
      });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ uniqueId: event.uniqueId, leadUniqueId: lead, title: 'Call back later' });
    const deleted = await request(t.app)
      .delete(`/api/calendars/events/${upper(event.uniqueId)}`)
      .set('Authorization', w.accounts.full.auth)
      .send({ uniqueId: braced(event.uniqueId) });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ uniqueId: event.uniqueId });
  });

  it('when a hook is read by its id in upper case or in braces, then it is found', async () => {
    const created = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', w.accounts.full.auth)
      .send({ name: 'Case', url: 'https://crm.example.com/hooks/{UniqueId}', events: ['lead.created'], campaignCode: w.campaigns.b2b });
    expect(created.status).toBe(201);
    const id = (created.body as { uniqueId: string }).uniqueId;
    for (const spell of [upper, braced]) {
      const res = await get(`/api/hooks/${encodeURIComponent(spell(id))}`);
      expect([res.status, (res.body as { uniqueId: string }).uniqueId]).toEqual([200, id]);
    }
  });

  it('when a loader file spells ids in upper case or in braces, then they are stored as the API writes them', async () => {
    const loaded = randomUUID();
    await t.load(
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: braced(loaded), data: { Name: 'Loaded', Phone: '+45 12 34 56 78' } },
      {
        type: 'recording',
        call: braced(call),
        startTime: '2026-05-06T10:00:30+02:00',
        recordingType: 'PartialRecording',
        fileName: 'b.wav',
      },
    );
    const res = await get(`/api/leads/${loaded}`);
    expect([res.status, (res.body as { uniqueId: string }).uniqueId]).toEqual([200, loaded]);
    const recordings = await get(`/api/calls/${call}/recordings`);
    expect((recordings.body as { fileName: string }[]).map((r) => r.fileName).sort()).toEqual(['a.wav', 'b.wav']);
  });

  it('when an id is not a UUID, then it is compared exactly; half a brace pair is not a UUID', async () => {
    expect((await get(`/api/leads/${encodeURIComponent(`{${lead}`)}`)).status).toBe(404);
    expect((await get(`/api/leads/${encodeURIComponent(`${upper(lead)}x`)}`)).status).toBe(404);
  });
});
