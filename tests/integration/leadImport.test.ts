import request from 'supertest';
import type { ProblemFieldError } from '../../src/http/problem';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/** The answer of POST /leads: uniqueId and pool on success, errors on failure. */
interface ImportResult {
  success: boolean;
  uniqueId: string;
  pool: string;
  errors: { field: string; message: string }[];
}

interface Problem {
  code: string;
  errors: ProblemFieldError[];
}

describe('POST /api/leads', () => {
  const { t, w } = useTestWorld();
  /** A campaign whose lead definition has one field of every type. */
  let typed: string;

  beforeAll(async () => {
    typed = `TYPED-${w.id}`;
    await t.load(
      {
        type: 'leadDefinition',
        name: `Typed ${w.id}`,
        fields: [
          { name: 'Text', type: 'text' },
          { name: 'Count', type: 'number' },
          { name: 'Born', type: 'date' },
          { name: 'Seen', type: 'datetime' },
          { name: 'Active', type: 'boolean' },
          { name: 'Mobile', type: 'phone' },
          { name: 'Mail', type: 'email' },
        ],
      },
      { type: 'campaign', code: typed, name: 'Typed', project: w.projects.b2b, leadDefinition: `Typed ${w.id}`, campaignType: 'Master' },
    );
  });

  const post = (body: unknown, auth = w.accounts.full.auth) =>
    request(t.app)
      .post('/api/leads')
      .set('Authorization', auth)
      .send(body as object);
  const validData = () => ({ Name: 'Jens Ærø', Telefon: '+45 12 34 56 78', Customer: uniq('C-') });

  describe('success', () => {
    it('when the body uses PascalCase names, then the lead is created New with its data mapped to field names', async () => {
      const data = { ...validData(), email: 'jens@example.com', REVENUE: '12.5' };
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: data });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: true,
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        pool: expect.stringMatching(/^\(auto\) \d{4}-\d{2}-\d{2}$/) as jest.AsymmetricMatcher,
      });
      const imported = res.body as ImportResult;

      const lead: unknown = await t
        .db('leads as l')
        .join('lead_pools as p', 'p.id', 'l.pool_id')
        .join('users as u', 'u.id', 'l.uploaded_by_user_id')
        .where('l.unique_id', imported.uniqueId)
        .first('l.status', 'l.closure', 'l.data', 'l.phone_number', 'l.external_key', 'p.name as pool', 'u.org_code');
      expect(lead).toEqual({
        status: 0,
        closure: 0,
        data: { Name: 'Jens Ærø', Phone: '+45 12 34 56 78', Customer: data.Customer, Email: 'jens@example.com', Revenue: '12.5' },
        phone_number: '+45 12 34 56 78',
        external_key: data.Customer,
        pool: imported.pool,
        org_code: w.users.agent,
      });
    });

    it('when the body uses camelCase names, then it is imported the same way', async () => {
      const res = await post({ campaignCode: w.campaigns.b2b, data: validData() });
      expect(res.status).toBe(200);
      expect((res.body as ImportResult).success).toBe(true);
    });

    it('when the names are in any other casing, then they are still recognised', async () => {
      const res = await post({ CAMPAIGNCODE: w.campaigns.b2b, dAtA: validData(), leadpool: `Mixed ${w.id}` });
      expect(res.body).toMatchObject({ success: true, pool: `Mixed ${w.id}` });
    });

    it('when a pool is named, then the lead goes into it, created once and reused', async () => {
      const pool = `Spring campaign ${w.id}`;
      const a = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), LeadPool: pool });
      const b = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), Pool: pool });
      expect(a.body).toMatchObject({ success: true, pool });
      expect(b.body).toMatchObject({ success: true, pool });
      const pools = await t
        .db('lead_pools as p')
        .join('campaigns as c', 'c.id', 'p.campaign_id')
        .where({ 'c.code': w.campaigns.b2b, 'p.name': pool })
        .select<{ id: number }[]>('p.id');
      expect(pools).toHaveLength(1);
      const inPool = await t
        .db('leads')
        .whereIn('unique_id', [(a.body as ImportResult).uniqueId, (b.body as ImportResult).uniqueId])
        .where('pool_id', pools[0]!.id);
      expect(inPool).toHaveLength(2);
    });

    it('when the pool name is blank or null, then the automatic pool is used', async () => {
      const blank = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), LeadPool: '  ' });
      const none = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), LeadPool: null });
      expect((blank.body as ImportResult).pool).toMatch(/^\(auto\) /);
      expect((none.body as ImportResult).pool).toMatch(/^\(auto\) /);
    });

    it('when a pool name of 200 characters comes with spaces around it, then it is trimmed and taken; 201 characters are a 400', async () => {
      const name = `${w.id} `.padEnd(200, 'p');
      const padded = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), LeadPool: `  ${name}  ` });
      expect(padded.status).toBe(200);
      expect((padded.body as ImportResult).pool).toBe(name);
      const tooLong = await post({ CampaignCode: w.campaigns.b2b, Data: validData(), LeadPool: `${name}q` });
      expect(tooLong.status).toBe(400);
      expect((tooLong.body as Problem).errors).toEqual([{ field: 'LeadPool', message: 'must be at most 200 characters' }]);
    });

    it('when every field type gets a valid value, then the lead is accepted', async () => {
      const res = await post({
        CampaignCode: typed,
        Data: {
          Text: 'x',
          Count: '-3,5',
          Born: '1980-02-29',
          Seen: '2026-05-06T10:16:41+02:00',
          Active: 'true',
          Mobile: '+45 1234',
          Mail: 'a@b.dk',
        },
      });
      expect(res.body).toMatchObject({ success: true });
    });
  });

  describe('pools by day', () => {
    const importAt = async (instant: string) => {
      t.setNow(new Date(instant));
      const res = await post({ CampaignCode: typed, Data: { Text: instant } });
      const imported = res.body as ImportResult;
      expect(imported.success).toBe(true);
      return imported.pool;
    };

    it('when an upload crosses platform midnight, then the leads land in two pools named by the local date', async () => {
      expect(await importAt('2026-01-14T22:59:59.999Z')).toBe('(auto) 2026-01-14'); // 23:59:59.999 CET
      expect(await importAt('2026-01-14T23:00:00.000Z')).toBe('(auto) 2026-01-15'); // 00:00 CET
    });

    it('when the day is 23 hours long (spring DST change), then midnight is still local midnight', async () => {
      expect(await importAt('2026-03-28T22:59:59Z')).toBe('(auto) 2026-03-28'); // 23:59:59 CET
      expect(await importAt('2026-03-28T23:00:00Z')).toBe('(auto) 2026-03-29'); // 00:00 CET, the DST day starts
      expect(await importAt('2026-03-29T01:00:00Z')).toBe('(auto) 2026-03-29'); // 03:00 CEST
      expect(await importAt('2026-03-29T21:59:59Z')).toBe('(auto) 2026-03-29'); // 23:59:59 CEST
      expect(await importAt('2026-03-29T22:00:00Z')).toBe('(auto) 2026-03-30'); // 00:00 CEST
    });

    it('when the day is 25 hours long (autumn DST change), then it is one pool from local midnight to midnight', async () => {
      expect(await importAt('2026-10-24T22:00:00Z')).toBe('(auto) 2026-10-25'); // 00:00 CEST
      expect(await importAt('2026-10-25T22:59:59Z')).toBe('(auto) 2026-10-25'); // 23:59:59 CET
      expect(await importAt('2026-10-25T23:00:00Z')).toBe('(auto) 2026-10-26'); // 00:00 CET
    });

    it('when leads are imported by day, then the pool belongs to the campaign and its leads are in it', async () => {
      const pool = await importAt('2027-01-01T12:00:00Z');
      const rows = await t
        .db('leads as l')
        .join('lead_pools as p', 'p.id', 'l.pool_id')
        .join('campaigns as c', 'c.id', 'p.campaign_id')
        .where({ 'c.code': typed, 'p.name': pool })
        .select<{ upload_time: Date }[]>('l.upload_time');
      expect(rows).toHaveLength(1);
      expect(rows[0]!.upload_time.toISOString()).toBe('2027-01-01T12:00:00.000Z');
    });
  });

  describe('validation failures (200, success false)', () => {
    it('when a required field is missing, then the error names it', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { Telefon: '12345678' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: false, errors: [{ field: 'Name', message: 'is required' }] });
    });

    it('when a required field is empty, then it counts as missing', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { Name: ' ', Telefon: '12345678' } });
      expect(res.body).toEqual({ success: false, errors: [{ field: 'Name', message: 'is required' }] });
    });

    it('when two keys name one field with different values, then the error names the second; the same value twice is one value', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), name: 'Someone Else' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: false,
        errors: [{ field: 'name', message: 'names the same field as Name with a different value: send one of them' }],
      });
      const same = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), NAME: 'Jens Ærø' } });
      expect((same.body as ImportResult).success).toBe(true);
    });

    it('when a data value is null (as .NET writes an unset string), then it counts as absent; a number is a 400', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), Email: null } });
      expect(res.status).toBe(200);
      expect((res.body as ImportResult).success).toBe(true);
      const required = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), Name: null } });
      expect(required.body).toEqual({ success: false, errors: [{ field: 'Name', message: 'is required' }] });
      const number = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), Name: 42 } });
      expect(number.status).toBe(400);
    });

    it('when a field is unknown to the lead definition, then the error names it', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), Shoe: '42' } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: false,
        errors: [{ field: 'Shoe', message: expect.stringMatching(/not a field/) as jest.AsymmetricMatcher }],
      });
    });

    it.each([
      ['Count', 'twelve', /number/],
      ['Born', '29-02-1980', /date/],
      ['Born', '1981-02-29', /date/],
      ['Born', '1980-02-29T10:30:00', /date/],
      ['Born', '1981-02-29T00:00:00', /date/],
      ['Seen', 'yesterday', /date and time/],
      ['Active', 'maybe', /true or false/],
      ['Mobile', 'call me', /phone/],
      ['Mail', 'no-at-sign', /e-mail/],
    ])('when %s gets %j, then it is refused as not of the field type', async (field, value, message) => {
      const res = await post({ CampaignCode: typed, Data: { [field]: value } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: false, errors: [{ field, message: expect.stringMatching(message) as jest.AsymmetricMatcher }] });
    });

    it.each(['1980-02-29T00:00:00', '1980-02-29T00:00:00.0000000', '1980-02-29T00:00:00.0000000+01:00', '1980-02-29T00:00Z'])(
      'when a date field gets %j (a DateTime at midnight, as .NET writes a date), then its date is stored',
      async (value) => {
        const res = await post({ CampaignCode: typed, Data: { Born: value } });
        const result = res.body as ImportResult;
        expect(result.success).toBe(true);
        expect((await t.db('leads').where({ unique_id: result.uniqueId }).first<{ data: Record<string, string> }>('data')).data.Born).toBe(
          '1980-02-29',
        );
      },
    );

    it('when several fields fail, then every error is listed and no lead is created', async () => {
      const before = await t
        .db('leads as l')
        .join('campaigns as c', 'c.id', 'l.campaign_id')
        .where('c.code', typed)
        .count<{ count: number }[]>('* as count');
      const res = await post({ CampaignCode: typed, Data: { Count: 'x', Mail: 'y', Nope: 'z' } });
      const result = res.body as ImportResult;
      expect(result.success).toBe(false);
      expect(result.errors.map((e) => e.field).sort()).toEqual(['Count', 'Mail', 'Nope']);
      const after = await t
        .db('leads as l')
        .join('campaigns as c', 'c.id', 'l.campaign_id')
        .where('c.code', typed)
        .count<{ count: number }[]>('* as count');
      expect(after[0]!.count).toBe(before[0]!.count);
    });
  });

  describe('faulty requests', () => {
    it('when the body is not JSON, then 400 invalid_body', async () => {
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/json')
        .send('{"CampaignCode": ');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect((res.body as Problem).code).toBe('invalid_body');
    });

    it('when a form-encoded body comes (plain curl -d), then 415 unsupported_media_type naming the type it reads', async () => {
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send(`CampaignCode=${encodeURIComponent(w.campaigns.b2b)}&Data=x`);
      expect(res.status).toBe(415);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({
        code: 'unsupported_media_type',
        detail: 'the request body is sent as application/x-www-form-urlencoded and is not JSON; this endpoint reads application/json',
      });
    });

    it('when JSON comes without a Content-Type or under another one, then it is read as JSON as before', async () => {
      const { url } = await t.listen();
      for (const type of [undefined, 'application/x-www-form-urlencoded', 'text/plain;charset=UTF-8']) {
        // A byte body: fetch then sends no Content-Type of its own.
        const body = Buffer.from(JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: validData() }));
        const headers: Record<string, string> = { Authorization: w.accounts.full.auth, ...(type ? { 'Content-Type': type } : {}) };
        const res = await fetch(`${url}/api/leads`, { method: 'POST', headers, body });
        const answer = (await res.json()) as ImportResult;
        expect({ type, status: res.status, success: answer.success }).toEqual({ type, status: 200, success: true });
      }
    });

    it('when there is no campaign code, then 400 naming CampaignCode', async () => {
      const res = await post({ Data: validData() });
      expect(res.status).toBe(400);
      const problem = res.body as Problem;
      expect(problem.code).toBe('invalid_body');
      expect(problem.errors).toEqual([{ field: 'CampaignCode', message: 'is required' }]);
    });

    it.each([
      ['an array', ['a']],
      ['a string', 'Name=Jens'],
      ['an object with a number', { Name: 'Jens', Age: 42 }],
      ['missing', undefined],
    ])('when the data is %s, then 400 naming Data', async (_what, data) => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: data });
      expect(res.status).toBe(400);
      const problem = res.body as Problem;
      expect(problem.code).toBe('invalid_body');
      expect(problem.errors[0]!.field).toMatch(/^Data/);
    });

    it('when the body is a JSON array, then 400', async () => {
      const res = await post([{ CampaignCode: w.campaigns.b2b, Data: validData() }]);
      expect(res.status).toBe(400);
    });

    it('when the campaign is unknown, then 400 naming CampaignCode', async () => {
      const res = await post({ CampaignCode: `NOPE-${w.id}`, Data: validData() });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_body', errors: [{ field: 'CampaignCode' }] });
    });

    it('when the body is over the size limit, then 413; values each within their limit fill a body as large as a bulk row', async () => {
      const values = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`Extra${i}`, 'x'.repeat(60_000)]));
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: { ...validData(), ...values(20) } });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ code: 'payload_too_large', detail: 'the request body is over the size limit' });
      const two = await post({
        CampaignCode: w.campaigns.b2b,
        Data: { ...validData(), Name: 'x'.repeat(60_000), Customer: uniq('C-') + 'y'.repeat(60_000) },
      });
      expect(two.status).toBe(200);
      expect((two.body as ImportResult).success).toBe(true);
    });
  });

  describe('rights and project isolation', () => {
    it('when a B2B-limited account imports into a Retail campaign, then 403 and nothing is created', async () => {
      const key = uniq('C-');
      const res = await post({ CampaignCode: w.campaigns.retail, Data: { ...validData(), Customer: key } }, w.accounts.b2b.auth);
      expect(res.status).toBe(403);
      expect((res.body as Problem).code).toBe('forbidden');
      expect(await t.db('leads').where({ external_key: key })).toHaveLength(0);
    });

    it('when the Retail campaign was just used by another account, then the B2B-limited account still gets 403, valid data or not', async () => {
      // The first import puts the campaign in the short-lived campaign cache; the project check
      // must still happen (in SQL) for the next account.
      expect(((await post({ CampaignCode: w.campaigns.retail, Data: validData() })).body as ImportResult).success).toBe(true);
      const key = uniq('C-');
      const valid = await post({ CampaignCode: w.campaigns.retail, Data: { ...validData(), Customer: key } }, w.accounts.b2b.auth);
      expect(valid.status).toBe(403);
      const invalid = await post({ CampaignCode: w.campaigns.retail, Data: { Telefon: 'x' } }, w.accounts.b2b.auth);
      expect(invalid.status).toBe(403);
      expect(await t.db('leads').where({ external_key: key })).toHaveLength(0);
    });

    it('when a B2B-limited account imports into its own project, then it succeeds', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: validData() }, w.accounts.b2b.auth);
      expect((res.body as ImportResult).success).toBe(true);
    });

    it('when the account lacks Leads: Post, then 403', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: validData() }, w.accounts.none.auth);
      expect(res.status).toBe(403);
    });

    it('when there are no credentials, then 401', async () => {
      const res = await request(t.app).post('/api/leads').send({ CampaignCode: w.campaigns.b2b, Data: validData() });
      expect(res.status).toBe(401);
    });
  });

  describe('Idempotency-Key', () => {
    const leadsWithKey = async (customer: string) => t.db('leads').where({ external_key: customer }).select('unique_id');

    it('when a request is retried with the same key, then the first answer comes back and no second lead is made', async () => {
      const key = uniq('key-');
      const body = { CampaignCode: w.campaigns.b2b, Data: validData() };
      const first = await post(body).set('Idempotency-Key', key);
      const retry = await post(body).set('Idempotency-Key', key);
      expect(first.status).toBe(200);
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual(first.body);
      expect(retry.text).toBe(first.text); // the same bytes, properties in the same order
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(await leadsWithKey(body.Data.Customer)).toHaveLength(1);
    });

    it('when 12 retries with the same key run at the same time, then exactly one lead is made and all get its answer', async () => {
      const key = uniq('key-');
      const body = { CampaignCode: w.campaigns.b2b, Data: validData() };
      const answers = await Promise.all(Array.from({ length: 12 }, () => post(body).set('Idempotency-Key', key)));
      for (const a of answers) expect(a.status).toBe(200);
      const ids = new Set(answers.map((a) => (a.body as ImportResult).uniqueId));
      expect(ids.size).toBe(1);
      const leads = await leadsWithKey(body.Data.Customer);
      expect(leads).toEqual([{ unique_id: [...ids][0] }]);
    });

    it('when the casing of the body differs on the retry, then it is the same request', async () => {
      const key = uniq('key-');
      const data = validData();
      const first = await post({ CampaignCode: w.campaigns.b2b, Data: data }).set('Idempotency-Key', key);
      const retry = await post({ campaigncode: w.campaigns.b2b, data }).set('Idempotency-Key', key);
      expect(retry.body).toEqual(first.body);
    });

    it('when the same key comes with a different body, then 409 and no lead is made', async () => {
      const key = uniq('key-');
      await post({ CampaignCode: w.campaigns.b2b, Data: validData() }).set('Idempotency-Key', key);
      const other = validData();
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: other }).set('Idempotency-Key', key);
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 409, code: 'conflict' });
      expect(await leadsWithKey(other.Customer)).toHaveLength(0);
    });

    it('when the first answer was a validation failure, then the retry gets the same failure', async () => {
      const key = uniq('key-');
      const body = { CampaignCode: w.campaigns.b2b, Data: { Telefon: '12345678' } };
      const first = await post(body).set('Idempotency-Key', key);
      const retry = await post(body).set('Idempotency-Key', key);
      expect((first.body as ImportResult).success).toBe(false);
      expect(retry.text).toBe(first.text);
    });

    it('when the first attempt was refused (403), then the key is not used up', async () => {
      const key = uniq('key-');
      const data = validData();
      const refused = await post({ CampaignCode: w.campaigns.retail, Data: data }, w.accounts.b2b.auth).set('Idempotency-Key', key);
      expect(refused.status).toBe(403);
      const ok = await post({ CampaignCode: w.campaigns.b2b, Data: data }, w.accounts.b2b.auth).set('Idempotency-Key', key);
      expect((ok.body as ImportResult).success).toBe(true);
    });

    it('when two accounts use the same key, then each gets its own lead', async () => {
      const key = uniq('key-');
      const data = validData();
      const a = await post({ CampaignCode: w.campaigns.b2b, Data: data }).set('Idempotency-Key', key);
      const b = await post({ CampaignCode: w.campaigns.b2b, Data: data }, w.accounts.b2b.auth).set('Idempotency-Key', key);
      expect((a.body as ImportResult).uniqueId).not.toBe((b.body as ImportResult).uniqueId);
      expect(await leadsWithKey(data.Customer)).toHaveLength(2);
    });

    it('when the key is not visible ASCII, then 400 naming the header', async () => {
      const res = await post({ CampaignCode: w.campaigns.b2b, Data: validData() }).set('Idempotency-Key', 'has space');
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_parameter', errors: [{ parameter: 'Idempotency-Key' }] });
    });
  });
});
