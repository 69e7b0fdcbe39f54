import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { basicAuth, createTestApp, TestApp } from '../harness/testApp';
import { ALL_RIGHTS, createWorld, World, keyFieldsCampaign } from '../harness/world';
import type { z } from 'zod';
import type { hookExampleOut, hookMetaOut, hookOut } from '../../src/http/schemas/hooks';
import type { ProblemFieldError } from '../../src/http/problem';

type Hook = z.infer<typeof hookOut>;
interface Problem {
  code: string;
  detail: string;
  errors: ProblemFieldError[];
}
const hookOf = (res: request.Response) => res.body as Hook;
const problemOf = (res: request.Response) => res.body as Problem;

/** The /hooks resource: create (both body styles), read, replace, delete, meta, example, and bad input. */
describe('/hooks', () => {
  let t: TestApp;
  let w: World;
  // This world's hooks only: other test files create hooks in the same database at the same time.
  const count = async (table: 'hooks') =>
    Number(
      (
        await t
          .db(table)
          .join('accounts', 'accounts.id', `${table}.account_id`)
          .whereIn(
            'accounts.username',
            Object.values(w.accounts).map((a) => a.username),
          )
          .count({ n: '*' })
      )[0]!.n,
    );

  beforeAll(async () => {
    t = await createTestApp({ HOOKS_ALLOW_HTTP: 'true', HOOKS_ALLOWED_HOSTS: '127.0.0.1' });
    w = await createWorld(t);
  });
  afterAll(() => t.close());

  const create = (body: unknown, auth = w.accounts.full.auth) =>
    request(t.app)
      .post('/api/hooks')
      .set('Authorization', auth)
      .send(body as object);

  describe('POST /hooks', () => {
    it('when the camelCase body of the live service is posted, then the hook is created with its secret shown once', async () => {
      const res = await create({
        name: 'Closed leads',
        campaignCode: w.campaigns.b2b,
        leadStatus: 'UserProcessed',
        method: 'post',
        urlTemplate: 'https://crm.example.com/hooks/{UniqueId}?status={LeadStatus}',
        format: 'json',
        standardTemplateName: 'Standard',
      });
      expect(res.status).toBe(201);
      const made = hookOf(res);
      expect(res.headers.location).toBe(`/api/hooks/${made.uniqueId}`);
      expect(made).toMatchObject({
        name: 'Closed leads',
        campaignCode: w.campaigns.b2b,
        leadStatus: 'UserProcessed',
        method: 'POST',
        format: 'Json',
        url: 'https://crm.example.com/hooks/{UniqueId}?status={LeadStatus}',
        events: ['lead.statusChanged'],
        standardTemplateName: 'Standard',
        enabled: true,
      });
      expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
      // The standardwebhooks package reads the secret as it is given.
      expect(() => new Webhook(made.secret!)).not.toThrow();

      const read = await request(t.app).get(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth);
      expect(read.status).toBe(200);
      const got = hookOf(read);
      expect(got.secret).toBeUndefined();
      expect(got).toEqual({ ...made, secret: undefined, modifiedTime: got.modifiedTime });
    });

    it('when the PascalCase body with a content template is posted, then names are matched case-insensitively', async () => {
      const res = await create({
        Name: 'Form hook',
        Method: 'PUT',
        UrlTemplate: 'https://crm.example.com/in',
        Format: 'Form',
        ContentTemplate: 'id={UniqueId}&email={Data.Email}&agent={AgentEmail}',
        LeadStatus: 'userprocessed',
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name: 'Form hook',
        method: 'PUT',
        format: 'Form',
        leadStatus: 'UserProcessed',
        contentTemplate: 'id={UniqueId}&email={Data.Email}&agent={AgentEmail}',
      });
    });

    it.each([
      ['a body that is not an object', [1, 2]],
      ['no name', { url: 'https://x.example.com/' }],
      ['no url', { name: 'x' }],
      ['an unknown event', { name: 'x', url: 'https://x.example.com/', events: ['lead.exploded'] }],
      ['an empty event list', { name: 'x', url: 'https://x.example.com/', events: [] }],
      ['a relative url', { name: 'x', url: '/hooks' }],
      ['an ftp url', { name: 'x', url: 'ftp://x.example.com/' }],
      ['a placeholder in the host', { name: 'x', url: 'https://{CampaignCode}.example.com/' }],
      ['credentials in the url', { name: 'x', url: 'https://user:pw@x.example.com/' }],
      ['an unknown placeholder in the url', { name: 'x', url: 'https://x.example.com/{Nope}' }],
      ['an unknown placeholder in the template', { name: 'x', url: 'https://x.example.com/', contentTemplate: '{"a":"{Nope}"}' }],
      ['a placeholder-like name in the url', { name: 'x', url: 'https://x.example.com/{Lead_Id}' }],
      ['a placeholder-like name in the template', { name: 'x', url: 'https://x.example.com/', contentTemplate: '{"a":"{ UniqueId }"}' }],
      [
        'a placeholder-like name in a Form template',
        { name: 'x', url: 'https://x.example.com/', format: 'Form', contentTemplate: 'id={lead-id}' },
      ],
      ['a Json template that is not JSON', { name: 'x', url: 'https://x.example.com/', contentTemplate: '{"a": {UniqueId}}' }],
      ['an unknown method', { name: 'x', url: 'https://x.example.com/', method: 'PATCH' }],
      ['an unknown format', { name: 'x', url: 'https://x.example.com/', format: 'Xml' }],
      ['an unknown lead status', { name: 'x', url: 'https://x.example.com/', leadStatus: 'Closed' }],
      ['a lead status without lead events', { name: 'x', url: 'https://x.example.com/', events: ['call.ended'], leadStatus: 'New' }],
      ['an unknown campaign', { name: 'x', url: 'https://x.example.com/', campaignCode: 'NO-SUCH-CAMPAIGN' }],
      [
        'a data field the campaign lacks',
        { name: 'x', url: 'https://x.example.com/', campaignCode: 'B2B', contentTemplate: '{"a":"{Data.Shoe size}"}' },
      ],
      ['a metadata address', { name: 'x', url: 'http://169.254.169.254/latest' }],
      ['a private address', { name: 'x', url: 'https://10.0.0.8/in' }],
    ])('when the body has %s, then it is a 400 and nothing is stored', async (_name, body) => {
      const b = body as Record<string, unknown>;
      if (b.campaignCode === 'B2B') b.campaignCode = w.campaigns.b2b;
      const before = await count('hooks');
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(problemOf(res).code).toBe('invalid_body');
      if (!Array.isArray(body)) expect(problemOf(res).errors.length).toBeGreaterThan(0);
      expect(await count('hooks')).toBe(before);
    });

    it('when a client sends null for every optional property, then each takes its default as if absent', async () => {
      // What a .NET client of the live service serializes for properties it leaves unset.
      const res = await create({
        Name: 'Nulls',
        Description: null,
        UrlTemplate: 'https://crm.example.com/in',
        Method: null,
        Format: null,
        Events: null,
        // Narrowed to this file's campaign: other files' events must not get deliveries from it.
        CampaignCode: w.campaigns.b2b,
        Projects: null,
        LeadStatus: null,
        LeadReleaseType: null,
        ContentTemplate: null,
        StandardTemplateName: null,
        Enabled: null,
      });
      expect(res.status).toBe(201);
      expect(hookOf(res)).toMatchObject({
        method: 'POST',
        format: 'Json',
        events: ['lead.statusChanged'],
        standardTemplateName: 'Standard',
        enabled: true,
      });
    });

    it('when events name a family as the documentation writes it (calendarEvent.*), then the hook receives each of its kinds', async () => {
      const res = await create({
        name: 'Calendar',
        url: 'https://crm.example.com/in',
        events: ['calendarEvent.*', 'lead.created', 'LEAD.CREATED'],
        projects: [w.projects.b2b],
      });
      expect(res.status).toBe(201);
      expect([...hookOf(res).events].sort()).toEqual([
        'calendarEvent.created',
        'calendarEvent.deleted',
        'calendarEvent.updated',
        'lead.created',
      ]);
    });

    it('when plain http is not allowed by the server, then an http URL is a 400', async () => {
      const strict = await createTestApp({});
      try {
        const res = await request(strict.app)
          .post('/api/hooks')
          .set('Authorization', w.accounts.full.auth)
          .send({ name: 'x', url: 'http://x.example.com/' });
        expect(res.status).toBe(400);
        expect(problemOf(res).errors[0]!.field).toBe('url');
        expect(problemOf(res).errors[0]!.message).toMatch(/^the scheme must be https .*HOOKS_ALLOW_HTTP/);
      } finally {
        await strict.close();
      }
    });

    it('when a public client of the live service sends its exact body, then the hook is a POST Json Standard hook whose answers carry id and createdDate', async () => {
      const body = {
        name: 'CRM sync',
        campaignCode: w.campaigns.b2b,
        leadStatus: 'UserProcessed',
        method: 'POST',
        urlTemplate: 'https://crm.example.com/hooks/{UniqueId}',
        format: 'Json',
        standardTemplateName: 'StandardTemplate.PostJson',
      };
      const res = await create(body);
      expect(res.status).toBe(201);
      const made = hookOf(res);
      expect(made).toMatchObject({ method: 'POST', format: 'Json', standardTemplateName: 'Standard', leadStatus: 'UserProcessed' });
      expect(made.id).toBe(made.uniqueId);
      expect(made.createdDate).toBe(made.createdTime);
      const withRelease = await create({ ...body, leadReleaseType: 'Success' });
      expect(withRelease.status).toBe(201);
      expect(hookOf(withRelease).leadReleaseType).toBe('Success');
      // Without the prefix, and a form template: the method and format come from the name.
      const form = hookOf(
        await create({ name: 'form', url: 'https://crm.example.com/f', campaignCode: w.campaigns.b2b, standardTemplateName: 'PutForm' }),
      );
      expect(form).toMatchObject({ method: 'PUT', format: 'Form', standardTemplateName: 'Standard' });
      for (const path of [`/api/hooks/${made.uniqueId}`, '/api/hooks']) {
        const read = await request(t.app).get(path).set('Authorization', w.accounts.full.auth);
        const hooks = (Array.isArray(read.body) ? read.body : [read.body]) as Hook[];
        const mine = hooks.find((h) => h.uniqueId === made.uniqueId)!;
        expect(mine).toMatchObject({ id: made.uniqueId, url: body.urlTemplate, createdDate: made.createdTime });
      }
    });

    it.each([
      ['a method the template name contradicts', { method: 'PUT', standardTemplateName: 'StandardTemplate.PostJson' }, 'method'],
      ['a format the template name contradicts', { format: 'Form', standardTemplateName: 'PostJson' }, 'format'],
      ['an unknown template name', { standardTemplateName: 'StandardTemplate.PostXml' }, 'standardTemplateName'],
      ['an unknown lead release type', { leadReleaseType: 'Sold' }, 'leadReleaseType'],
      ['a lead release type without lead.statusChanged', { events: ['lead.created'], leadReleaseType: 'Success' }, 'leadReleaseType'],
      ['a urlTemplate other than its url', { urlTemplate: 'https://y.example.com/' }, 'url'],
    ])('when the body has %s, then it is a 400 naming the field', async (_name, extra, field) => {
      const res = await create({ name: 'x', url: 'https://x.example.com/', ...extra });
      expect(res.status).toBe(400);
      expect(problemOf(res).errors.map((e) => e.field)).toContain(field);
    });

    it.each([
      ['a loopback address', 'http://127.0.0.2:9/in'],
      ['a private address', 'https://192.168.1.20/in'],
      ['localhost', 'http://localhost:3000/in'],
      ['a name under localhost', 'https://hooks.localhost./in'],
    ])('when the URL is %s, then the 400 names the settings that allow it', async (_name, url) => {
      const res = await create({ name: 'x', url });
      expect(res.status).toBe(400);
      const message = problemOf(res).errors.find((e) => e.field === 'url')!.message;
      expect(message).toMatch(/HOOKS_ALLOWED_HOSTS=/);
      expect(message).toMatch(/HOOKS_ALLOW_HTTP=true/);
    });

    it('when the campaign lies outside the account’s projects, then it is a 403 and nothing is stored', async () => {
      const before = await count('hooks');
      const res = await create({ name: 'x', url: 'https://x.example.com/', campaignCode: w.campaigns.retail }, w.accounts.b2b.auth);
      expect(res.status).toBe(403);
      expect(problemOf(res).code).toBe('forbidden');
      expect(await count('hooks')).toBe(before);
    });

    it('when the account lacks the WebHooks right, then it is a 403', async () => {
      const res = await create({ name: 'x', url: 'https://x.example.com/' }, w.accounts.none.auth);
      expect(res.status).toBe(403);
    });

    it('when the account may not read the events’ resource, then it is a 403', async () => {
      const id = w.id;
      await t.load({
        type: 'account',
        username: `hooksonly-${id}`,
        password: 'pw',
        user: w.users.agent,
        projects: ['*'],
        rights: { WebHooks: ['Get', 'Post'] },
        entryAccess: 'None',
      });
      const res = await create(
        { name: 'x', url: 'https://x.example.com/', events: ['call.ended'] },
        'Basic ' + Buffer.from(`hooksonly-${id}:pw`).toString('base64'),
      );
      expect(res.status).toBe(403);
      expect(problemOf(res).detail).toMatch(/Calls/);
    });
  });

  describe('GET, PUT, DELETE /hooks/{UniqueId}', () => {
    it('when another account asks for a hook, then it does not exist for it', async () => {
      const made = hookOf(await create({ name: 'mine', url: 'https://x.example.com/' }));
      const other = await request(t.app).get(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.b2b.auth);
      expect(other.status).toBe(404);
      const list = await request(t.app).get('/api/hooks').set('Authorization', w.accounts.b2b.auth);
      expect((list.body as Hook[]).map((h) => h.uniqueId)).not.toContain(made.uniqueId);
    });

    it('when a hook is replaced, then every property is the new one and the secret stays', async () => {
      const made = hookOf(await create({ name: 'before', url: 'https://x.example.com/a', events: ['lead.created'] }));
      const res = await request(t.app)
        .put(`/api/hooks/${made.uniqueId}`)
        .set('Authorization', w.accounts.full.auth)
        .send({ name: 'after', url: 'https://x.example.com/b', events: ['call.ended', 'calendarEvent.deleted'], enabled: false });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: 'after',
        url: 'https://x.example.com/b',
        events: ['call.ended', 'calendarEvent.deleted'],
        enabled: false,
      });
      const secret = (await t.db<{ unique_id: string; secret: string }>('hooks').where({ unique_id: made.uniqueId }).first('secret'))!;
      expect(secret.secret).toBe(made.secret);
    });

    it('when enabled comes as text or a number (Zapier and Make send every value as a string), then it is read as the boolean', async () => {
      const made = hookOf(await create({ name: 'typed', url: 'https://x.example.com/a' }));
      const put = (enabled: unknown) =>
        request(t.app)
          .put(`/api/hooks/${made.uniqueId}`)
          .set('Authorization', w.accounts.full.auth)
          .send({ name: 'typed', url: 'https://x.example.com/a', enabled });
      for (const [sent, read] of [
        ['false', false],
        ['True', true],
        ['0', false],
        [1, true],
        [' FALSE ', false],
      ] as const) {
        const res = await put(sent);
        expect([sent, res.status, (res.body as Hook).enabled]).toEqual([sent, 200, read]);
      }
      const bad = await put('yes');
      expect(bad.status).toBe(400);
      expect((bad.body as { errors: { field: string; message: string }[] }).errors).toEqual([
        { field: 'enabled', message: 'must be true or false' },
      ]);
    });

    it('when a replacement is invalid, then nothing changes', async () => {
      const made = hookOf(await create({ name: 'keep', url: 'https://x.example.com/a' }));
      const res = await request(t.app)
        .put(`/api/hooks/${made.uniqueId}`)
        .set('Authorization', w.accounts.full.auth)
        .send({ name: 'x', url: 'https://x.example.com/{Bad}' });
      expect(res.status).toBe(400);
      const read = await request(t.app).get(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth);
      expect(hookOf(read).name).toBe('keep');
    });

    it('when a hook with pending deliveries is deleted, then their queued jobs go with it in the same transaction', async () => {
      // A project no campaign has: imports by other test files on the shared database queue nothing for it.
      const made = hookOf(await create({ name: 'pending', url: 'https://x.example.com/p', projects: ['no-such-project-pending-hook'] }));
      // No worker runs in this file: the test deliveries stay pending, their jobs queued.
      for (let i = 0; i < 3; i++) {
        const queued = await request(t.app).post(`/api/hooks/${made.uniqueId}/test`).set('Authorization', w.accounts.full.auth);
        expect(queued.status).toBe(202);
      }
      const jobKeys = async () =>
        (
          await t.db.raw<{ rows: { n: number }[] }>(
            `select count(*)::int as n from graphile_worker.jobs j
              where j.key in (select 'hook-delivery:' || d.id from hook_deliveries d join hooks h on h.id = d.hook_id where h.unique_id = ?)`,
            [made.uniqueId],
          )
        ).rows[0]!.n;
      const ids = (
        await t.db('hook_deliveries as d').join('hooks as h', 'h.id', 'd.hook_id').where('h.unique_id', made.uniqueId).pluck('d.id')
      ).map(Number);
      expect(ids).toHaveLength(3);
      expect(await jobKeys()).toBe(3);
      const del = await request(t.app).delete(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth);
      expect(del.status).toBe(204);
      const left = await t.db.raw<{ rows: { n: number }[] }>(
        `select count(*)::int as n from graphile_worker.jobs where key = any(?::text[])`,
        [ids.map((id) => `hook-delivery:${id}`)],
      );
      expect(left.rows[0]!.n).toBe(0);
      expect(Number((await t.db('hook_deliveries').whereIn('id', ids).count({ n: '*' }))[0]!.n)).toBe(0);
    });

    it('when the deliveries log is asked for with a TimeSpan and no FromTime, then it covers that span up to now', async () => {
      const made = hookOf(await create({ name: 'log window', url: 'https://crm.example.com/in', campaignCode: w.campaigns.b2b }));
      const queued = await request(t.app).post(`/api/hooks/${made.uniqueId}/test`).set('Authorization', w.accounts.full.auth);
      const { deliveryId } = queued.body as { deliveryId: string };
      for (const TimeSpan of ['PT1H', 'P5000Y']) {
        const res = await request(t.app)
          .get(`/api/hooks/${made.uniqueId}/deliveries`)
          .query({ TimeSpan })
          .set('Authorization', w.accounts.full.auth);
        expect({ TimeSpan, status: res.status, ids: (res.body as { deliveryId: string }[]).map((d) => d.deliveryId) }).toEqual({
          TimeSpan,
          status: 200,
          ids: [deliveryId],
        });
      }
      const earlier = await request(t.app)
        .get(`/api/hooks/${made.uniqueId}/deliveries`)
        .query({ FromTime: new Date(Date.now() - 2 * 3_600_000).toISOString(), TimeSpan: 'PT1H' })
        .set('Authorization', w.accounts.full.auth);
      expect(earlier.body).toEqual([]);
    });

    it('when a hook is deleted, then it is gone', async () => {
      const made = hookOf(await create({ name: 'gone', url: 'https://x.example.com/' }));
      const del = await request(t.app).delete(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth);
      expect(del.status).toBe(204);
      expect((await request(t.app).get(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth)).status).toBe(404);
      expect((await request(t.app).delete(`/api/hooks/${made.uniqueId}`).set('Authorization', w.accounts.full.auth)).status).toBe(404);
    });
  });

  describe('GET /hooks/meta and /hooks/{UniqueId}/example', () => {
    it('when meta is asked for, then it names the events, placeholders and templates', async () => {
      const res = await request(t.app).get('/api/hooks/meta').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      const meta = res.body as z.infer<typeof hookMetaOut>;
      expect(meta.events.map((e) => e.name)).toEqual([
        'lead.created',
        'lead.updated',
        'lead.statusChanged',
        'call.ended',
        'calendarEvent.created',
        'calendarEvent.updated',
        'calendarEvent.deleted',
      ]);
      expect(meta.placeholders.map((p) => p.name)).toEqual(
        expect.arrayContaining([
          '{UniqueId}',
          '{CampaignCode}',
          '{LeadStatus}',
          '{PhoneNumber}',
          '{AgentEmail}',
          '{ClosedDate}',
          '{Data.FieldName}',
        ]),
      );
      expect(meta.standardTemplates.map((p) => p.name)).toEqual([
        'Standard',
        'Data',
        'StandardTemplate.PostJson',
        'StandardTemplate.PutJson',
        'StandardTemplate.PostForm',
        'StandardTemplate.PutForm',
      ]);
      expect(meta.events.every((e) => e.example.startsWith(`{"type":"${e.name}"`))).toBe(true);
    });

    it('when the example of a hook with a JSON content template is asked for, then it is a signed request with valid JSON from the campaign’s fields', async () => {
      const created = await create({
        name: 'templated',
        url: 'https://crm.example.com/leads/{UniqueId}',
        campaignCode: w.campaigns.b2b,
        contentTemplate:
          '{"id":"{UniqueId}","name":"{Data.Name}","quote":"{Data.Customer}","status":"{LeadStatus}","closed":"{ClosedDate}"}',
      });
      expect(created.status).toBe(201);
      const made = hookOf(created);
      const res = await request(t.app).get(`/api/hooks/${made.uniqueId}/example`).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      const example = res.body as z.infer<typeof hookExampleOut>;
      expect(example.method).toBe('POST');
      expect(example.url).toMatch(/^https:\/\/crm\.example\.com\/leads\/[0-9a-f-]{36}$/);
      const body = JSON.parse(example.body) as { closed: string };
      expect(body).toMatchObject({ name: 'Jane Doe', status: 'UserProcessed' });
      expect(body.closed).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(() => new Webhook(made.secret!).verify(example.body, example.headers)).not.toThrow();
    });

    it('when the campaign’s definition has an external-key field, then the example carries the sample lead’s number and key, as a delivery does', async () => {
      const { code, records } = keyFieldsCampaign(w);
      await t.load(...records);
      const created = await create({ name: 'keys', url: 'https://crm.example.com/{PhoneNumber}/{ExternalKey}', campaignCode: code });
      expect(created.status).toBe(201);
      const res = await request(t.app)
        .get(`/api/hooks/${hookOf(created).uniqueId}/example`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      const example = res.body as z.infer<typeof hookExampleOut>;
      expect(example.url).toBe('https://crm.example.com/%2B4512345678/Sample%20Ref');
      const body = JSON.parse(example.body) as { data: { phoneNumber?: string; externalKey?: string; data: Record<string, string> } };
      expect(body.data).toMatchObject({ phoneNumber: '+4512345678', externalKey: 'Sample Ref' });
    });

    it('when the hook narrows to a lead status and a release type, then its example lead has that status and closure', async () => {
      const created = await create({
        name: 'narrowed',
        url: 'https://crm.example.com/in',
        events: ['lead.statusChanged'],
        campaignCode: w.campaigns.b2b,
        leadStatus: 'Unresolved',
        leadReleaseType: 'NotInterested',
      });
      expect(created.status).toBe(201);
      const res = await request(t.app)
        .get(`/api/hooks/${hookOf(created).uniqueId}/example`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      const body = JSON.parse((res.body as z.infer<typeof hookExampleOut>).body) as { data: { status: string; closure: string } };
      expect(body.data).toMatchObject({ status: 'Unresolved', closure: 'NotInterested' });
    });

    it('when a Form hook’s example is verified as meta tells receivers to, then the standardwebhooks package accepts its signature', async () => {
      const meta = (await request(t.app).get('/api/hooks/meta').set('Authorization', w.accounts.full.auth)).body as z.infer<
        typeof hookMetaOut
      >;
      expect(meta.signature.description).toContain('verify(body, headers, { jsonParse: false })');
      const made = hookOf(await create({ name: 'form', url: 'https://crm.example.com/in', format: 'Form', campaignCode: w.campaigns.b2b }));
      const res = await request(t.app).get(`/api/hooks/${made.uniqueId}/example`).set('Authorization', w.accounts.full.auth);
      const example = res.body as z.infer<typeof hookExampleOut>;
      expect(example.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(() => new Webhook(made.secret!).verify(example.body, example.headers, { jsonParse: false })).not.toThrow();
    });

    it('when pages are asked for as HTML, then the small reads answer text/html', async () => {
      const made = hookOf(await create({ name: 'html <b>hook</b>', url: 'https://x.example.com/' }));
      for (const path of [
        '/api/hooks',
        '/api/hooks/meta',
        `/api/hooks/${made.uniqueId}`,
        `/api/hooks/${made.uniqueId}/deliveries`,
        `/api/hooks/${made.uniqueId}/example`,
      ]) {
        const res = await request(t.app).get(path).set('Authorization', w.accounts.full.auth).set('Accept', 'text/html');
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toMatch(/text\/html/);
        expect(res.text).not.toContain('<b>hook</b>');
      }
    });
  });

  describe('DateTime format of the answers', () => {
    const LOCAL = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}$/;
    const OFFSET = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/;
    let localAuth: string;

    beforeAll(async () => {
      const username = `local-hooks-${w.id}`;
      localAuth = basicAuth(username, 'local-pass');
      await t.load({
        type: 'account',
        username,
        password: 'local-pass',
        user: w.users.agent,
        projects: ['*'],
        rights: ALL_RIGHTS,
        entryAccess: 'Full',
        dateTimeFormat: 'Local',
      });
    });

    const times = (hook: Hook) => [hook.createdTime, hook.createdDate, hook.modifiedTime];

    it('when the account writes Local DateTimes, then every hook answer and the deliveries log write Local', async () => {
      const created = await create(
        { name: 'local', url: 'https://crm.example.com/in', events: ['lead.created'], campaignCode: w.campaigns.b2b },
        localAuth,
      );
      expect(created.status).toBe(201);
      const made = hookOf(created);
      expect(times(made)).toEqual([expect.stringMatching(LOCAL), expect.stringMatching(LOCAL), expect.stringMatching(LOCAL)]);

      const as = (req: request.Test) => req.set('Authorization', localAuth);
      const one = await as(request(t.app).get(`/api/hooks/${made.uniqueId}`));
      expect(times(hookOf(one)).every((v) => LOCAL.test(v))).toBe(true);
      const list = await as(request(t.app).get('/api/hooks'));
      expect((list.body as Hook[]).flatMap(times).every((v) => LOCAL.test(v))).toBe(true);
      // The replacement keeps to this world's campaign: a hook of every campaign would take other files' events.
      const replaced = await as(request(t.app).put(`/api/hooks/${made.uniqueId}`)).send({
        name: 'local 2',
        url: 'https://crm.example.com/in',
        events: ['lead.created'],
        campaignCode: w.campaigns.b2b,
      });
      expect(replaced.status).toBe(200);
      expect(times(hookOf(replaced)).every((v) => LOCAL.test(v))).toBe(true);

      expect((await as(request(t.app).post(`/api/hooks/${made.uniqueId}/test`))).status).toBe(202);
      const log = await as(request(t.app).get(`/api/hooks/${made.uniqueId}/deliveries`));
      const deliveries = log.body as { eventTime: string; createdTime: string }[];
      expect(deliveries).toHaveLength(1);
      expect([deliveries[0]!.eventTime, deliveries[0]!.createdTime]).toEqual([expect.stringMatching(LOCAL), expect.stringMatching(LOCAL)]);
    });

    it('when a request prefers datetime=local or datetime=offset, then hook answers follow it and say so', async () => {
      const made = hookOf(await create({ name: 'offset', url: 'https://crm.example.com/in', campaignCode: w.campaigns.b2b }));
      expect(times(made).every((v) => OFFSET.test(v))).toBe(true);
      const preferred = await request(t.app)
        .get(`/api/hooks/${made.uniqueId}`)
        .set('Authorization', w.accounts.full.auth)
        .set('Prefer', 'datetime=local');
      expect(times(hookOf(preferred)).every((v) => LOCAL.test(v))).toBe(true);
      expect(preferred.headers['preference-applied']).toBe('datetime=local');
      const back = await request(t.app).get('/api/hooks').set('Authorization', localAuth).set('Prefer', 'datetime=offset');
      expect((back.body as Hook[]).flatMap(times).every((v) => OFFSET.test(v))).toBe(true);
      expect(back.headers['preference-applied']).toBe('datetime=offset');
    });

    it('when the example of a Local account’s hook is asked for, then its body writes Local DateTimes, as its deliveries do', async () => {
      const made = hookOf(
        await create(
          { name: 'local example', url: 'https://crm.example.com/in', events: ['lead.created'], campaignCode: w.campaigns.b2b },
          localAuth,
        ),
      );
      const res = await request(t.app)
        .get(`/api/hooks/${made.uniqueId}/example`)
        .set('Authorization', localAuth)
        .set('Prefer', 'datetime=offset');
      expect(res.status).toBe(200);
      const body = JSON.parse((res.body as z.infer<typeof hookExampleOut>).body) as { timestamp: string; data: { uploadTime: string } };
      expect(body.timestamp).toMatch(LOCAL);
      expect(body.data.uploadTime).toMatch(LOCAL);
    });
  });
});
