import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * Conditional requests through the real HTTP stack (docs/decisions.md, Wire conventions): the
 * small reads carry an ETag and answer a matching If-None-Match with a 304 that has no body
 * but keeps the rate-limit headers and counts; a change gives a 200 with a new tag; a lead's
 * tag is its strong row-version tag; streamed exports and errors carry none.
 */

describe('ETag and If-None-Match', () => {
  const { t, w } = useTestWorld();
  const leadId = () => `${w.id}-etag`;

  beforeAll(async () => {
    await t.load(
      { type: 'calendar', code: `cal-${w.id}`, name: 'Cal', project: w.projects.b2b },
      {
        type: 'lead',
        uniqueId: leadId(),
        campaign: w.campaigns.b2b,
        status: 'New',
        lastModifiedTime: '2026-05-01T10:00:00',
        data: { Name: 'Tagged', Telefon: '+45 11 22 33 44' },
      },
    );
  });

  const get = (path: string, auth = w.accounts.full.auth) => request(t.app).get(path).set('Authorization', auth);
  const remaining = (res: request.Response) => Number(res.headers['x-rate-limit-remaining']);

  /** The small reads: every one answers 200 with an ETag and a 304 to its own tag. */
  const smallReads = (): string[] => [
    '/api/orgunits',
    `/api/orgunits/${encodeURIComponent(w.units.team)}`,
    '/api/organizationalunits?Include=users',
    '/api/users',
    `/api/users/${encodeURIComponent(w.users.agent)}`,
    '/api/campaigns',
    `/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}?Include=leadDefinition`,
    '/api/projects',
    '/api/myaccount',
    '/api/myaccount/request/limits',
    `/api/leads/${encodeURIComponent(leadId())}`,
    '/api/leaddefinitions',
    '/api/hooks',
    '/api/hooks/meta',
    `/api/calendars/${encodeURIComponent(`cal-${w.id}`)}/events?FromDate=2031-01-01&ToDate=2031-01-02`,
    '/api/calendars/events?FromDate=2031-01-01&ToDate=2031-01-02',
    '/api/openapi.json',
  ];

  it('when a small read is repeated with If-None-Match of its ETag, then it is a 304 with no body', async () => {
    for (const path of smallReads()) {
      // Lists such as /api/campaigns span the database other test files write to at the same
      // time: a 200 with a *new* tag is the right answer when the data changed in between, so
      // that pair is read again (a 200 with the same tag still fails).
      for (let attempt = 1; ; attempt++) {
        const first = await get(path);
        expect({ path, status: first.status }).toEqual({ path, status: 200 });
        expect({ path, etag: first.headers.etag }).toEqual({
          path,
          etag: expect.stringMatching(/^(W\/)?"[^"]+"$/) as jest.AsymmetricMatcher,
        });
        const again = await get(path).set('If-None-Match', first.headers.etag!);
        const changed = again.status === 200 && again.headers.etag !== first.headers.etag;
        if (changed && attempt < 3) continue;
        expect({ path, status: again.status, etag: again.headers.etag, body: again.text }).toEqual({
          path,
          status: 304,
          etag: first.headers.etag,
          body: '',
        });
        break;
      }
    }
  });

  describe('a fetch client (it adds Cache-Control: no-cache to every conditional request)', () => {
    it('when fetch sends If-None-Match, then it also sends Cache-Control: no-cache and Pragma: no-cache', async () => {
      // What the tests below rely on: fetch itself adds the reload headers to a conditional request.
      const echo = http.createServer((req, res) => res.end(JSON.stringify(req.headers)));
      await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
      try {
        const res = await fetch(`http://127.0.0.1:${(echo.address() as AddressInfo).port}/`, { headers: { 'If-None-Match': 'W/"x"' } });
        expect(await res.json()).toMatchObject({ 'if-none-match': 'W/"x"', 'cache-control': 'no-cache', pragma: 'no-cache' });
      } finally {
        echo.close();
      }
    });

    it('when fetch repeats a small read with its ETag, then the answer is a 304 with no body', async () => {
      const { url } = await t.listen();
      const auth = { Authorization: w.accounts.b2b.auth };
      for (const path of ['/api/myaccount', '/api/campaigns', `/api/leads/${encodeURIComponent(leadId())}`, '/api/openapi.json']) {
        const first = await fetch(`${url}${path}`, { headers: auth });
        await first.arrayBuffer();
        const tag = first.headers.get('etag')!;
        expect({ path, status: first.status, tagged: /^(W\/)?"[^"]+"$/.test(tag) }).toEqual({ path, status: 200, tagged: true });
        const again = await fetch(`${url}${path}`, { headers: { ...auth, 'If-None-Match': tag } });
        expect({ path, status: again.status, body: await again.text(), etag: again.headers.get('etag') }).toEqual({
          path,
          status: 304,
          body: '',
          etag: tag,
        });
      }
    });

    it('when fetch sends a list of tags, the weak form of a strong tag, or *, then a match is a 304 and no match a 200', async () => {
      const { url } = await t.listen();
      const path = `${url}/api/leads/${encodeURIComponent(leadId())}`;
      const auth = { Authorization: w.accounts.full.auth };
      const first = await fetch(path, { headers: auth });
      await first.arrayBuffer();
      const tag = first.headers.get('etag')!;
      const status = async (ifNoneMatch: string) => {
        const res = await fetch(path, { headers: { ...auth, 'If-None-Match': ifNoneMatch } });
        await res.arrayBuffer();
        return res.status;
      };
      expect(await status(`"older", W/"other",${tag}`)).toBe(304);
      expect(await status(`W/${tag}`)).toBe(304);
      expect(await status('*')).toBe(304);
      expect(await status('"older", W/"other"')).toBe(200);
    });
  });

  it('when an answer differs on every request (the counts, which include it), then it carries no ETag', async () => {
    const res = await get('/api/myaccount/request/counts', w.accounts.b2b.auth);
    expect(res.status).toBe(200);
    expect(res.headers.etag).toBeUndefined();
  });

  it('when a 304 is answered, then it counts as a request and carries the rate-limit headers', async () => {
    // The B2B account sees only this world's campaigns, which no other test file changes.
    const first = await get('/api/campaigns', w.accounts.b2b.auth);
    const again = await get('/api/campaigns', w.accounts.b2b.auth).set('If-None-Match', first.headers.etag!);
    expect(again.status).toBe(304);
    expect(again.headers).toHaveProperty('x-rate-limit-limit');
    expect(again.headers).toHaveProperty('x-rate-limit-reset');
    expect(again.headers).toHaveProperty('ratelimit');
    expect(remaining(again)).toBeLessThan(remaining(first));
    const third = await get('/api/campaigns', w.accounts.b2b.auth);
    expect(remaining(third)).toBeLessThan(remaining(again));
  });

  it('when the tag no longer matches after a change, then it is a 200 with the new body and a new tag', async () => {
    const before = await get('/api/projects', w.accounts.b2b.auth);
    expect(before.status).toBe(200);
    const code = `ETAG-${w.id}`;
    await t.load({
      type: 'campaign',
      code,
      name: code,
      project: `B2B-${w.id} Later`,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
    });
    const after = await get('/api/projects', w.accounts.b2b.auth).set('If-None-Match', before.headers.etag!);
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect((after.body as { name: string }[]).map((p) => p.name)).toContain(`B2B-${w.id} Later`);
  });

  it('when the account differs, the representation differs, or the tag is someone else’s, then the answer is a 200', async () => {
    const full = await get('/api/projects');
    expect((await get('/api/projects', w.accounts.b2b.auth).set('If-None-Match', full.headers.etag!)).status).toBe(200);
    const html = await get('/api/projects').set('Accept', 'text/html').set('If-None-Match', full.headers.etag!);
    expect(html.status).toBe(200);
    expect(html.headers.etag).toMatch(/^W\//);
    expect(html.headers.etag).not.toBe(full.headers.etag);
    expect((await get('/api/projects').set('If-None-Match', 'W/"not-it", "nor-this"')).status).toBe(200);
  });

  it('when a lead is read, then its ETag is the strong version tag; If-None-Match with it is a 304 until a PATCH changes it', async () => {
    const path = `/api/leads/${encodeURIComponent(leadId())}`;
    const first = await get(path);
    expect(first.headers.etag).toMatch(/^"[^"]+"$/);
    expect((await get(path).set('If-None-Match', first.headers.etag!)).status).toBe(304);
    // If-None-Match compares weakly: the weak form of the same tag matches too.
    expect((await get(path).set('If-None-Match', `W/${first.headers.etag}`)).status).toBe(304);
    // A strong tag names one representation: the lead's HTML page has a weak tag of its own.
    const page = await get(path).set('Accept', 'text/html').set('If-None-Match', first.headers.etag!);
    expect(page.status).toBe(200);
    expect(page.headers.etag).toMatch(/^W\//);
    const patched = await request(t.app)
      .patch(path)
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/merge-patch+json')
      .set('If-Match', first.headers.etag!)
      .send(JSON.stringify({ priority: 7 }));
    expect(patched.status).toBe(200);
    const after = await get(path).set('If-None-Match', first.headers.etag!);
    expect(after.status).toBe(200);
    expect(after.headers.etag).toBe(patched.headers.etag);
    expect((after.body as { priority: number }).priority).toBe(7);
  });

  it('when a streamed export is read, then it has no ETag and If-None-Match changes nothing', async () => {
    const query = `UniqueId=${encodeURIComponent(leadId())}`;
    for (const path of [`/api/simpleleads?${query}`, `/api/rawleads?${query}`, '/api/donotcallnumbers']) {
      const res = await get(path).set('If-None-Match', '*').buffer(true);
      expect({ path, status: res.status, etag: res.headers.etag }).toEqual({ path, status: 200, etag: undefined });
      expect(res.text.length).toBeGreaterThan(0);
    }
  });

  it('when the answer is an error, then it carries no ETag', async () => {
    const res = await get(`/api/leads/no-such-${w.id}`).set('If-None-Match', '*');
    expect(res.status).toBe(404);
    expect(res.headers.etag).toBeUndefined();
  });
});
