import request from 'supertest';
import type { z } from 'zod';
import { useTestWorld } from '../harness/useTestWorld';
import { problemCodes } from '../../src/http/problem';
import type { OpenApiDocument } from '../../src/http/openapi';
import type { problemTypeOut } from '../../src/http/schemas/problems';

type ProblemTypePage = z.infer<typeof problemTypeOut>;

/** An application/problem+json answer. */
interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
}

/**
 * Problem `type` links resolve: the `type` of a real error answer, fetched as a client would
 * (no credentials), is a 200 page about that very code, as JSON by default and as HTML for a
 * browser; `/api/problems` lists every code.
 */
describe('problem type pages', () => {
  const { t, w } = useTestWorld();

  beforeAll(async () => {
    // A daily limit of 1: the second request of the day is a real 429.
    await t.load({ type: 'requestLimit', account: w.accounts.full.username, service: 'myaccount.limits', dailyLimit: 1 });
  });

  const auth = () => w.accounts.full.auth;
  const realErrors: [string, () => Promise<request.Response>, number, string][] = [
    [
      'a TimeSpan that is not a duration',
      () => request(t.app).get('/api/calls?OrgCode=x&StartTime=2026-05-06&TimeSpan=pt2h').set('Authorization', auth()),
      400,
      'invalid_parameter',
    ],
    [
      'a missing StartTime',
      () => request(t.app).get('/api/calls?OrgCode=x&TimeSpan=PT2H').set('Authorization', auth()),
      400,
      'missing_parameter',
    ],
    [
      'an import without CampaignCode',
      () => request(t.app).post('/api/leads').set('Authorization', auth()).send({ Data: {} }),
      400,
      'invalid_body',
    ],
    ['no credentials', () => request(t.app).get('/api/calls'), 401, 'unauthorized'],
    [
      'an account without the Calls right',
      () => request(t.app).get('/api/calls?OrgCode=x&StartTime=2026-05-06&TimeSpan=PT2H').set('Authorization', w.accounts.none.auth),
      403,
      'forbidden',
    ],
    ['an unknown user', () => request(t.app).get('/api/users/nobody-here').set('Authorization', auth()), 404, 'not_found'],
    ['an unknown path', () => request(t.app).get('/api/no-such-thing'), 404, 'not_found'],
    [
      'text/html from an export',
      () =>
        request(t.app)
          .get('/api/calls?OrgCode=x&StartTime=2026-05-06&TimeSpan=PT2H')
          .set('Authorization', auth())
          .set('Accept', 'text/html'),
      406,
      'not_acceptable',
    ],
    [
      'a body over the limit',
      () =>
        request(t.app)
          .post('/api/leads')
          .set('Authorization', auth())
          .send({ CampaignCode: 'x', Data: { a: 'x'.repeat(200_000) } }),
      413,
      'payload_too_large',
    ],
    [
      'a used-up daily limit',
      async () => {
        const limits = () => request(t.app).get('/api/myaccount/request/limits').set('Authorization', auth());
        expect((await limits()).status).toBe(200);
        return limits();
      },
      429,
      'rate_limited',
    ],
  ];

  describe('GET the type of a real error', () => {
    it.each(realErrors)(
      'when the API answers %s, then its type resolves to a JSON page about that code',
      async (_what, send, status, code) => {
        const error = await send();
        const problem = error.body as Problem;
        expect({ status: error.status, code: problem.code }).toEqual({ status, code });
        expect(problem.type).toBe(`/api/problems/${code}`);

        const page = await request(t.app).get(problem.type);
        expect(page.status).toBe(200);
        expect(page.headers['content-type']).toMatch(/^application\/json/);
        const about = page.body as ProblemTypePage;
        expect(about).toMatchObject({ code, type: problem.type, status, title: problem.title });
        expect(about.meaning).toEqual(expect.any(String));
        expect(about.whenAnswered.length).toBeGreaterThan(0);
        expect(about.whatToDo).toEqual(expect.any(String));
        expect(about.example).toMatchObject({ type: problem.type, code, status, title: problem.title });
        // The example has the shape real answers have: the same keys, in the same order.
        expect(Object.keys(about.example).filter((k) => k in problem)).toEqual(Object.keys(problem).filter((k) => k in about.example));
      },
    );

    it('when a browser follows the type of a 400, then it reads an HTML page about that code', async () => {
      const error = await request(t.app).get('/api/calls?OrgCode=x&StartTime=2026-05-06&TimeSpan=pt2h').set('Authorization', auth());
      const page = await request(t.app)
        .get((error.body as Problem).type)
        .set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers.vary).toMatch(/Accept/);
      expect(page.text).toContain('<code>invalid_parameter</code>');
      expect(page.text).toContain('Invalid parameter');
      expect(page.text).toContain('What to do');
      expect(page.text).toContain('&quot;type&quot;: &quot;/api/problems/invalid_parameter&quot;');
    });
  });

  describe('GET /api/problems/{Code}', () => {
    it.each(problemCodes)(
      'when %s is asked as JSON and as HTML, then both answer 200 without credentials and count nothing',
      async (code) => {
        const json = await request(t.app).get(`/api/problems/${code}`).set('Authorization', auth());
        expect(json.status).toBe(200);
        expect((json.body as ProblemTypePage).code).toBe(code);
        expect(json.headers['x-rate-limit-limit']).toBeUndefined();
        const html = await request(t.app).get(`/api/problems/${code}`).set('Accept', 'text/html');
        expect(html.status).toBe(200);
        expect(html.text).toContain(`<code>${code}</code>`);
      },
    );

    it('when a code the API does not have is asked, then a 404 not_found problem answers', async () => {
      const res = await request(t.app).get('/api/problems/no_such_code');
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'not_found', type: '/api/problems/not_found' });
    });
  });

  describe('GET /api/problems', () => {
    it('when asked, then it lists every problem code once with its page link', async () => {
      const res = await request(t.app).get('/api/problems');
      expect(res.status).toBe(200);
      const pages = res.body as ProblemTypePage[];
      expect(pages.map((p) => p.code).sort()).toEqual([...problemCodes].sort());
      for (const p of pages) expect(p.type).toBe(`/api/problems/${p.code}`);
      const html = await request(t.app).get('/api/problems').set('Accept', 'text/html');
      for (const code of problemCodes) expect(html.text).toContain(`href="/api/problems/${code}"`);
    });

    it('when the OpenAPI document is read, then both problem pages are in it, public', async () => {
      const doc = (await request(t.app).get('/api/openapi.json')).body as OpenApiDocument;
      expect(doc.paths!['/problems']!.get).toMatchObject({ operationId: 'listProblemTypes', security: [] });
      expect(doc.paths!['/problems/{Code}']!.get).toMatchObject({ operationId: 'getProblemType', security: [] });
    });
  });
});
