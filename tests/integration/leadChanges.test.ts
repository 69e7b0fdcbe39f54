import request from 'supertest';
import { keyFieldsCampaign } from '../harness/world';
import type { z } from 'zod';
import type { ProblemFieldError } from '../../src/http/problem';
import type { leadOut } from '../../src/http/schemas/leads';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

type Lead = z.infer<typeof leadOut>;

interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

interface HookEventRow {
  id: number;
  resource_id: string;
  type: string;
  previous_status: number | null;
  snapshot: unknown;
}

/**
 * PATCH /leads/{UniqueId} (JSON merge patch with ETag / If-Match) and POST
 * /leads/{UniqueId}/anonymize, through the real app on the real database: what is written,
 * what is refused (and then not written), the do-not-call effects and the hook events.
 */
describe('lead changes', () => {
  const { t, w } = useTestWorld();
  let lockedCampaign: string;
  let putOnly: string;
  let getOnly: string;

  beforeAll(async () => {
    lockedCampaign = `LOCKED-${w.id}`;
    putOnly = 'Basic ' + Buffer.from(`put-only-${w.id}:pw`).toString('base64');
    getOnly = 'Basic ' + Buffer.from(`get-only-${w.id}:pw`).toString('base64');
    await t.load(
      {
        type: 'leadDefinition',
        name: `Locked ${w.id}`,
        fields: [
          { name: 'Name', type: 'text', required: true },
          { name: 'Phone', type: 'phone' },
          { name: 'Contract', type: 'text', editable: false },
        ],
      },
      {
        type: 'campaign',
        code: lockedCampaign,
        name: 'Locked',
        project: w.projects.b2b,
        leadDefinition: `Locked ${w.id}`,
        campaignType: 'Master',
      },
      {
        type: 'account',
        username: `put-only-${w.id}`,
        password: 'pw',
        user: w.users.agent,
        projects: ['*'],
        rights: { Leads: ['Put'] },
        entryAccess: 'Full',
      },
      {
        type: 'account',
        username: `get-only-${w.id}`,
        password: 'pw',
        user: w.users.agent,
        projects: ['*'],
        rights: { Leads: ['Get'] },
        entryAccess: 'Full',
      },
    );
  });

  let phoneSeq = 0;
  /** A Danish number no other test uses: `+45 3x xx xx xx`. */
  const freshPhone = () => `+453${String(Date.now() % 1000).padStart(3, '0')}${String(++phoneSeq).padStart(4, '0')}`;

  const importLead = async (campaign = w.campaigns.b2b, data: Record<string, string> = {}) => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({
        CampaignCode: campaign,
        Data: campaign === lockedCampaign ? data : { Name: 'Karen Blixen', Telefon: freshPhone(), Customer: uniq('C-'), ...data },
      });
    const body = res.body as { success: boolean; uniqueId: string };
    expect(body.success).toBe(true);
    return body.uniqueId;
  };
  const get = (id: string, auth = w.accounts.full.auth) => request(t.app).get(`/api/leads/${id}`).set('Authorization', auth);
  const patch = (id: string, body: unknown, auth = w.accounts.full.auth, type = 'application/merge-patch+json') =>
    request(t.app)
      .patch(`/api/leads/${id}`)
      .set('Authorization', auth)
      .set('Content-Type', type)
      .send(typeof body === 'string' ? body : JSON.stringify(body));
  const anonymize = (id: string, auth = w.accounts.full.auth) =>
    request(t.app).post(`/api/leads/${id}/anonymize`).set('Authorization', auth);
  const hookEventsOf = (id: string) =>
    t.db<HookEventRow>('hook_events').where({ resource_id: id }).orderBy('id').select('type', 'previous_status', 'snapshot');

  describe('PATCH', () => {
    it('when data and priority are patched, then the answer is the changed lead with a new ETag, and GET agrees', async () => {
      const id = await importLead();
      const before = await get(id);
      expect(before.headers.etag).toMatch(/^"[^"]+"$/);
      const res = await patch(id, { Data: { email: 'karen@example.com', Telefon: '+45 40 50 60 70' }, PRIORITY: 7 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ uniqueId: id, status: 'New', priority: 7, phoneNumber: '+45 40 50 60 70' });
      expect((res.body as Lead).data).toMatchObject({ Name: 'Karen Blixen', Email: 'karen@example.com', Phone: '+45 40 50 60 70' });
      expect((res.body as Lead).lastModifiedByUser).toEqual({ orgCode: w.users.agent });
      expect(res.headers.etag).toMatch(/^"[^"]+"$/);
      expect(res.headers.etag).not.toBe(before.headers.etag);
      const after = await get(id);
      expect(after.body).toEqual(res.body);
      expect(after.headers.etag).toBe(res.headers.etag);
    });

    it('when a patch changes nothing (empty, or values the lead has), then nothing is written: the same ETag and lastModifiedTime', async () => {
      const id = await importLead(w.campaigns.b2b, { Email: 'same@example.com' });
      const before = await get(id);
      const lead = before.body as Lead;
      for (const body of [{}, { Data: {} }, { data: { Email: 'same@example.com', Name: 'Karen Blixen' }, priority: lead.priority }]) {
        const res = await patch(id, body);
        expect(res.status).toBe(200);
        expect(res.headers.etag).toBe(before.headers.etag);
        expect(res.body).toEqual(before.body);
      }
      expect((await get(id)).headers.etag).toBe(before.headers.etag);
      const changed = await patch(id, { data: { Email: 'new@example.com' } });
      expect(changed.headers.etag).not.toBe(before.headers.etag);
      expect((changed.body as Lead).lastModifiedTime).not.toBe(lead.lastModifiedTime);
    });

    it('when a value is patched to null, then it is removed; application/json is accepted as well', async () => {
      const id = await importLead(w.campaigns.b2b, { Email: 'old@example.com' });
      const res = await patch(id, { data: { Email: null } }, w.accounts.full.auth, 'application/json');
      expect(res.status).toBe(200);
      const lead = res.body as Lead;
      expect(lead.data.Email).toBeUndefined();
      expect(lead.data.Name).toBe('Karen Blixen');
    });

    it('when If-Match names an older version, then it is a 412 and nothing changes; the current ETag or * goes through', async () => {
      const id = await importLead();
      const first = (await get(id)).headers.etag as string;
      expect((await patch(id, { priority: 1 }).set('If-Match', first)).status).toBe(200);
      const stale = await patch(id, { priority: 2 }).set('If-Match', first);
      expect(stale.status).toBe(412);
      expect((stale.body as Problem).code).toBe('precondition_failed');
      expect(((await get(id)).body as Lead).priority).toBe(1);
      const current = (await get(id)).headers.etag as string;
      expect((await patch(id, { priority: 3 }).set('If-Match', `"nope", ${current}`)).status).toBe(200);
      expect((await patch(id, { priority: 4 }).set('If-Match', `W/${(await get(id)).headers.etag}`)).status).toBe(412);
      expect(((await patch(id, { priority: 5 }).set('If-Match', '*')).body as Lead).priority).toBe(5);
    });

    it('when one version is read another way (another entry access, Prefer: datetime=local), then each body has its own ETag, and If-Match of any of them names the version', async () => {
      const id = await importLead(w.campaigns.b2b, { Secret: 'hidden' });
      const full = await get(id);
      const partner = await get(id, w.accounts.b2b.auth);
      const local = await get(id).set('Prefer', 'datetime=local');
      const tags = [full, partner, local].map((r) => r.headers.etag as string);
      expect(new Set(tags).size).toBe(3);
      for (const tag of tags) expect(tag).toMatch(/^"[^"]+"$/);
      // Another body is no 304: the Partner account never reads the field through the Full account's tag.
      const seen = await get(id, w.accounts.b2b.auth).set('If-None-Match', tags[0]!);
      expect(seen.status).toBe(200);
      expect((seen.body as Lead).data).not.toHaveProperty('Secret');
      expect((await get(id).set('If-None-Match', tags[0]!)).status).toBe(304);
      expect((await patch(id, { priority: 2 }).set('If-Match', tags[1]!)).status).toBe(200);
      expect((await patch(id, { priority: 3 }).set('If-Match', tags[2]!)).status).toBe(412);
    });

    it('when priority comes as its digits in a string (as string-typed clients send every value), then it is that integer', async () => {
      const id = await importLead();
      for (const [sent, read] of [
        ['12', 12],
        [' -3 ', -3],
        ['+4', 4],
      ] as const) {
        const res = await patch(id, { priority: sent });
        expect([sent, res.status, (res.body as Lead).priority]).toEqual([sent, 200, read]);
      }
      for (const sent of ['1.5', '12abc', '', '0x10', '99999999999']) {
        const res = await patch(id, { priority: sent });
        expect([sent, res.status, (res.body as Problem).errors?.[0]?.field]).toEqual([sent, 400, 'priority']);
      }
      expect(((await get(id)).body as Lead).priority).toBe(4);
    });

    it.each([
      ['an unknown field', { data: { Shoe: '42' } }, 'data.Shoe'],
      ['a value not of the field’s type', { data: { Email: 'not-an-address' } }, 'data.Email'],
      ['removing a required field', { data: { Name: null } }, 'data.Name'],
      ['a lead property a patch cannot change', { phoneNumber: '+4511111111' }, 'phoneNumber'],
      ['a status that is no administrative move', { status: 'New' }, 'status'],
      ['Anonymized as a status', { status: 'Anonymized' }, 'status'],
      ['a priority that is no integer', { priority: 1.5 }, 'priority'],
      ['data that is not an object of strings', { data: { Name: 5 } }, 'data.Name'],
      ['one field under two names with different values', { data: { Name: 'One', NAME: 'Other' } }, 'data.NAME'],
      ['one field set and removed under two names', { data: { Name: 'One', name: null } }, 'data.name'],
    ])('when the patch holds %s, then it is a 400 naming it and the lead is unchanged', async (_case, body, field) => {
      const id = await importLead();
      const before = await get(id);
      const res = await patch(id, body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      const problem = res.body as Problem;
      expect(problem.code).toBe('invalid_body');
      expect(problem.errors.map((e) => e.field)).toContain(field);
      const after = await get(id);
      expect(after.body).toEqual(before.body);
      expect(after.headers.etag).toBe(before.headers.etag);
    });

    it('when a field is not editable, or above the account’s entry access, then it is a 400 and nothing is written', async () => {
      const locked = await importLead(lockedCampaign, { Name: 'Locked', Phone: freshPhone(), Contract: 'K-1' });
      const res = await patch(locked, { data: { Contract: 'K-2' } });
      expect(res.status).toBe(400);
      expect((res.body as Problem).errors).toEqual([{ field: 'data.Contract', message: 'is not editable' }]);
      // The Partner account does not see Secret (Full): for it the field does not exist.
      const id = await importLead(w.campaigns.b2b, { Secret: 'hush' });
      const hidden = await patch(id, { data: { Secret: 'told' } }, w.accounts.b2b.auth);
      expect(hidden.status).toBe(400);
      expect((hidden.body as Problem).errors[0]!.field).toBe('data.Secret');
      expect(((await get(id)).body as Lead).data.Secret).toBe('hush');
    });

    it('when the account does not reach the phone field, then the changed lead it is answered has no phoneNumber, as GET answers it', async () => {
      const { code, records } = keyFieldsCampaign(w);
      await t.load(...records);
      const imported = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .send({ CampaignCode: code, Data: { Name: 'Keys', Mobile: freshPhone(), Ref: 'REF-0417' } });
      const id = (imported.body as { uniqueId: string }).uniqueId;
      const res = await patch(id, { data: { Name: 'Changed', Ref: 'REF-0418' } }, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.body).not.toHaveProperty('phoneNumber');
      expect(res.body).toMatchObject({ uniqueId: id, externalKey: 'REF-0418', data: { Name: 'Changed', Ref: 'REF-0418' } });
      expect(res.body).toEqual((await get(id, w.accounts.b2b.auth)).body);
      expect((await get(id)).body).toMatchObject({ phoneNumber: expect.any(String) as unknown, externalKey: 'REF-0418' });
    });

    it('when the body is not JSON, an array, or of another media type, then it is a 400 or a 415', async () => {
      const id = await importLead();
      expect((await patch(id, '{"priority":')).status).toBe(400);
      expect((await patch(id, [{ priority: 1 }])).status).toBe(400);
      // JSON under another type is read as JSON (tests/integration/jsonBodyTypes.test.ts); another format is not.
      const text = await patch(id, '<priority>1</priority>', w.accounts.full.auth, 'application/xml');
      expect(text.status).toBe(415);
      expect((text.body as Problem).code).toBe('unsupported_media_type');
    });

    it('when the status is named in another case, then it is the administrative move of that name (enumeration names are case-insensitive)', async () => {
      const removed = await importLead();
      const res = await patch(removed, { status: 'removed' });
      expect(res.status).toBe(200);
      expect((res.body as Lead).status).toBe('Removed');
      const listed = await importLead();
      const dnc = await patch(listed, { Status: 'DONOTCALL' });
      expect(dnc.status).toBe(200);
      expect((dnc.body as Lead).status).toBe('DoNotCall');
    });

    it('when the status is set to Removed, then lead.statusChanged is recorded with the previous status in the same change', async () => {
      const hook = await request(t.app)
        .post('/api/hooks')
        .set('Authorization', w.accounts.full.auth)
        .send({
          name: `changes-${w.id}`,
          url: 'https://lead-changes.invalid/in',
          campaignCode: w.campaigns.b2b,
          events: ['lead.statusChanged'],
        });
      expect(hook.status).toBe(201);
      try {
        const id = await importLead();
        const res = await patch(id, { status: 'Removed' });
        expect(res.status).toBe(200);
        expect((res.body as Lead).status).toBe('Removed');
        const events = await hookEventsOf(id);
        // Every event is kept (the live event stream reads them), the import's lead.created too.
        expect(events.map((e) => [e.type, e.previous_status])).toEqual([
          ['lead.created', null],
          ['lead.statusChanged', 0],
        ]);
        // The same status again is no move: no second event.
        expect((await patch(id, { status: 'Removed' })).status).toBe(200);
        expect(await hookEventsOf(id)).toHaveLength(2);
      } finally {
        await t
          .db('hooks')
          .where({ unique_id: (hook.body as { uniqueId: string }).uniqueId })
          .update({ enabled: false });
      }
    });

    it('when the status is set to DoNotCall, then the number is listed for the lead’s project and that project’s other open leads with it move too', async () => {
      const phone = freshPhone();
      const id = await importLead(w.campaigns.b2b, { Telefon: phone });
      const sibling = await importLead(lockedCampaign, { Name: 'Sibling', Phone: phone.replace('+45', '0045 ') });
      const elsewhere = await importLead(w.campaigns.retail, { Telefon: phone });
      const res = await patch(id, { status: 'DoNotCall' });
      expect(res.status).toBe(200);
      expect((res.body as Lead).status).toBe('DoNotCall');
      expect(((await get(sibling)).body as Lead).status).toBe('DoNotCall');
      expect(((await get(elsewhere)).body as Lead).status).toBe('New');
      const list = await request(t.app)
        .get(`/api/donotcallnumbers?Project=${encodeURIComponent(w.projects.b2b)}`)
        .set('Authorization', w.accounts.full.auth);
      expect(JSON.parse(list.text)).toEqual(
        expect.arrayContaining([expect.objectContaining({ phoneNumber: phone, project: w.projects.b2b })]),
      );
    });

    it('when the phone number is patched to a listed number, then the open lead moves to DoNotCall as an import would', async () => {
      const listed = freshPhone();
      const listing = await request(t.app)
        .post('/api/donotcallnumbers')
        .set('Authorization', w.accounts.full.auth)
        .send({ phoneNumber: listed, project: w.projects.b2b });
      expect(listing.status).toBe(200);
      const id = await importLead();
      const res = await patch(id, { data: { Telefon: listed } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'DoNotCall', phoneNumber: listed });
    });

    it('when the lead is outside the account’s projects or unknown, then it is a 404 as for GET; without the Put right a 403', async () => {
      const retail = await importLead(w.campaigns.retail);
      const res = await patch(retail, { priority: 9 }, w.accounts.b2b.auth);
      expect(res.status).toBe(404);
      expect((res.body as Problem).code).toBe('not_found');
      expect((await get(retail, w.accounts.b2b.auth)).status).toBe(404);
      expect((await patch('no-such-lead', { priority: 9 })).status).toBe(404);
      expect((await patch(retail, { priority: 9 }, getOnly)).status).toBe(403);
      expect((await patch(retail, { priority: 9 }, putOnly)).status).toBe(200);
      expect(((await get(retail)).body as Lead).priority).toBe(9);
    });
  });

  describe('anonymize', () => {
    it('when a lead with calls and calendar events is anonymized, then no trace of its number, key or texts is left and it cannot be patched', async () => {
      const phone = freshPhone();
      const digits = phone.slice(1);
      const key = uniq('KEY-');
      const id = await importLead(w.campaigns.b2b, { Telefon: phone, Customer: key, Email: 'private@example.com' });
      const calendar = `anon-cal-${w.id}`;
      const callId = uniq('anon-call-');
      const eventId = uniq('anon-ev-');
      await t.load(
        { type: 'calendar', code: calendar, name: 'Anon', project: w.projects.b2b },
        {
          type: 'call',
          uniqueId: callId,
          campaign: w.campaigns.b2b,
          user: w.users.agent,
          uniqueLeadId: id,
          leadPhoneNumber: phone,
          leadExternalKey: key,
          endCause: 'NormalDisconnect',
          inProgress: false,
          connected: true,
          incoming: false,
          startTime: '2031-03-04T10:00:00',
          connectTime: '2031-03-04T10:00:05',
          endTime: '2031-03-04T10:02:00',
          previewDuration: 'PT2S',
        },
        {
          type: 'calendarEvent',
          uniqueId: eventId,
          calendarCode: calendar,
          leadUniqueId: id,
          title: `Call ${phone}`,
          notes: 'Lives on Strøget',
          start: '2031-03-05T10:00:00',
          end: '2031-03-05T10:30:00',
          source: 'crm',
          externalId: 'e1',
        },
      );
      // A queued hook event holds a copy of the lead as it was.
      const hook = await request(t.app)
        .post('/api/hooks')
        .set('Authorization', w.accounts.full.auth)
        .send({
          name: `anon-${w.id}`,
          url: 'https://lead-changes.invalid/in',
          campaignCode: w.campaigns.b2b,
          events: ['lead.statusChanged'],
        });
      try {
        expect((await patch(id, { priority: 2 })).status).toBe(200);
        expect((await patch(id, { status: 'Removed' })).status).toBe(200);
        expect(JSON.stringify((await hookEventsOf(id))[0]!.snapshot)).toContain(digits);

        const res = await anonymize(id);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ uniqueId: id, status: 'Anonymized', data: {}, closureData: [] });
        expect((res.body as Lead).phoneNumber).toBeUndefined();
        expect((res.body as Lead).externalKey).toBeUndefined();
        expect(res.headers.etag).toBe((await get(id)).headers.etag);

        const leadRow: unknown = await t.db('leads').where({ unique_id: id }).first();
        expect(JSON.stringify(leadRow)).not.toContain(digits);
        expect(JSON.stringify(leadRow)).not.toContain(key);
        const callRows = await t.db('calls').where({ unique_lead_id: id });
        expect(callRows).toHaveLength(1);
        expect(JSON.stringify(callRows)).not.toContain(digits);
        expect(JSON.stringify(callRows)).not.toContain(key);
        const calls = await request(t.app)
          .get(`/api/users/${encodeURIComponent(w.users.agent)}/calls?StartTime=2031-03-04&TimeSpan=P1D`)
          .set('Authorization', w.accounts.full.auth);
        expect(calls.status).toBe(200);
        const call = (JSON.parse(calls.text) as { uniqueId: string; leadPhoneNumber: string; leadExternalKey?: string }[]).find(
          (c) => c.uniqueId === callId,
        )!;
        expect(call.leadPhoneNumber).toBe('');
        expect(call.leadExternalKey).toBeUndefined();
        const event: unknown = await t.db('calendar_events').where({ unique_id: eventId }).first('title', 'notes');
        expect(event).toEqual({ title: '', notes: '' });
        const events = await hookEventsOf(id);
        expect(events.map((e) => [e.type, e.previous_status])).toEqual([
          ['lead.created', null],
          ['lead.statusChanged', 0],
          ['lead.statusChanged', 600],
        ]);
        expect(JSON.stringify(events)).not.toContain(digits);
        expect(JSON.stringify(events)).not.toContain(key);
      } finally {
        await t
          .db('hooks')
          .where({ unique_id: (hook.body as { uniqueId: string }).uniqueId })
          .update({ enabled: false });
      }

      const refused = await patch(id, { priority: 1 });
      expect(refused.status).toBe(409);
      expect((refused.body as Problem).code).toBe('conflict');
      // Anonymizing again is answered as it is (a retry succeeds).
      const again = await anonymize(id);
      expect(again.status).toBe(200);
      expect((again.body as Lead).status).toBe('Anonymized');
    });

    it('when the lead is outside the account’s projects, then it is a 404; a stale If-Match a 412; without the Delete right a 403', async () => {
      const retail = await importLead(w.campaigns.retail);
      expect((await anonymize(retail, w.accounts.b2b.auth)).status).toBe(404);
      expect((await anonymize(retail, putOnly)).status).toBe(403);
      const etag = (await get(retail)).headers.etag as string;
      expect((await patch(retail, { priority: 4 })).status).toBe(200);
      const stale = await anonymize(retail).set('If-Match', etag);
      expect(stale.status).toBe(412);
      expect(((await get(retail)).body as Lead).status).toBe('New');
    });
  });
});
