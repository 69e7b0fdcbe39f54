import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * Every JSON-body endpoint reads its body the same way (docs/decisions.md, Wire conventions):
 * JSON is read as JSON whatever the Content-Type says (none, text/plain, application/octet-stream,
 * a form type from `curl -d`), and a body that is not JSON under another type is a 415 naming
 * the types the endpoint reads. PATCH had its own stricter check and refused JSON sent so.
 */
describe('JSON bodies under any Content-Type', () => {
  const { t, w } = useTestWorld();
  const NONE = '(no Content-Type)';
  const TYPES = [NONE, 'text/plain', 'text/plain; charset=utf-8', 'application/octet-stream', 'application/x-www-form-urlencoded'];
  let url: string;

  beforeAll(async () => {
    ({ url } = await t.listen());
    await t.load({ type: 'calendar', code: `cal-${w.id}`, project: w.projects.b2b });
  });

  /** A byte body, so fetch adds no Content-Type of its own. */
  const send = (method: string, path: string, body: unknown, type: string | undefined) =>
    fetch(`${url}${path}`, {
      method,
      headers: { Authorization: w.accounts.full.auth, ...(type && type !== NONE ? { 'Content-Type': type } : {}) },
      body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    });

  const importLead = async () => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Typed', Telefon: '+45 12 34 56 78', Customer: uniq('C-') } });
    return (res.body as { uniqueId: string }).uniqueId;
  };

  it.each(TYPES)('when a merge patch comes as %s, then the lead is patched', async (type) => {
    const id = await importLead();
    const res = await send('PATCH', `/api/leads/${id}`, { priority: 4 }, type);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ uniqueId: id, priority: 4 });
  });

  it.each(TYPES)('when a calendar event replacement or a hook replacement comes as %s, then it is read as JSON', async (type) => {
    const event = {
      calendarCode: `cal-${w.id}`,
      title: 'Typed',
      notes: '',
      start: '2026-05-07T10:00:00',
      end: '2026-05-07T10:30:00',
      source: 'crm',
      externalId: 'T-1',
    };
    const created = await request(t.app).post('/api/calendars/events').set('Authorization', w.accounts.full.auth).send(event);
    const put = await send(
      'PUT',
      `/api/calendars/events/${(created.body as { uniqueId: string }).uniqueId}`,
      { ...event, title: 'Moved' },
      type,
    );
    expect(put.status).toBe(200);
    const hook = { name: 'Typed', url: 'https://crm.example.com/hooks/{UniqueId}', events: ['lead.created'] };
    const hookCreated = await request(t.app).post('/api/hooks').set('Authorization', w.accounts.full.auth).send(hook);
    const hookPut = await send(
      'PUT',
      `/api/hooks/${(hookCreated.body as { uniqueId: string }).uniqueId}`,
      { ...hook, name: 'Moved' },
      type,
    );
    expect(hookPut.status).toBe(200);
  });

  it('when a patch body is not JSON and came as another type, then 415 naming the types it is read as; without a type, 400', async () => {
    const id = await importLead();
    for (const type of ['application/xml', 'multipart/form-data; boundary=x', 'text/plain']) {
      const res = await send('PATCH', `/api/leads/${id}`, '<priority>4</priority>', type);
      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({
        code: 'unsupported_media_type',
        detail: `the request body is sent as ${type.split(';')[0]} and is not JSON; this endpoint reads application/merge-patch+json or application/json`,
      });
    }
    const untyped = await send('PATCH', `/api/leads/${id}`, '<priority>4</priority>', undefined);
    expect(untyped.status).toBe(400);
    expect(((await untyped.json()) as { code: string }).code).toBe('invalid_body');
  });
});
