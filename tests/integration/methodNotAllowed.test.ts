import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * A known path with a method it does not take is a 405 with Allow, derived from the endpoint
 * declarations; an unknown path stays a 404 (docs/decisions.md, Wire conventions).
 */
describe('a method the path does not take', () => {
  const { t, w } = useTestWorld();
  type Problem = { status: number; code: string; detail: string; errors: { parameter: string; message: string }[] };

  it('when DELETE /api/calls or PUT /api/myaccount is sent, then 405 with Allow and a problem document', async () => {
    for (const [method, path] of [
      ['delete', '/api/calls'],
      ['put', '/api/myaccount'],
    ] as const) {
      const res = await request(t.app)[method](path).set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(405);
      expect(res.headers['allow']).toBe('GET, HEAD');
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body as Problem).toMatchObject({
        status: 405,
        code: 'invalid_parameter',
        errors: [{ parameter: 'method', message: 'must be one of GET, HEAD' }],
      });
    }
  });

  it('when a path has several endpoints, then Allow lists each of their methods', async () => {
    const lead = await request(t.app).delete('/api/leads/some-lead').set('Authorization', w.accounts.full.auth);
    expect([lead.status, lead.headers['allow']]).toEqual([405, 'GET, HEAD, PATCH']);
    const events = await request(t.app).patch('/api/calendars/events/some-event').set('Authorization', w.accounts.full.auth);
    expect([events.status, events.headers['allow']]).toEqual([405, 'DELETE, PUT']);
    const anonymize = await request(t.app).get('/api/leads/some-lead/anonymize').set('Authorization', w.accounts.full.auth);
    expect([anonymize.status, anonymize.headers['allow']]).toEqual([405, 'POST']);
  });

  it('when the path differs in case or ends in a slash, then it is the same path, as the routes read it', async () => {
    for (const path of ['/api/CALLS/', '/API/calls', '/Api/Calls']) {
      const res = await request(t.app).delete(path).set('Authorization', w.accounts.full.auth);
      expect([path, res.status, res.headers['allow']]).toEqual([path, 405, 'GET, HEAD']);
    }
    // A path that only begins like the API's is not one of its paths.
    expect((await request(t.app).delete('/apicalls').set('Authorization', w.accounts.full.auth)).status).toBe(404);
  });

  it('when a POST stands for a method the path does not take (X-HTTP-Method-Override), then 405 saying so', async () => {
    const res = await request(t.app).post('/api/calls').set('Authorization', w.accounts.full.auth).set('X-HTTP-Method-Override', 'DELETE');
    expect(res.status).toBe(405);
    expect(res.headers['allow']).toBe('GET, HEAD');
    expect((res.body as Problem).detail).toBe('DELETE (a POST with a method override) is not served at /api/calls; it takes GET, HEAD');
  });

  it('when the path is unknown, then it is still a 404', async () => {
    for (const path of ['/api/nothing', '/api/calls/x/y', '/api/leads/x/anonymize/y', '/nothing']) {
      const res = await request(t.app).delete(path).set('Authorization', w.accounts.full.auth);
      expect([path, res.status, res.headers['allow']]).toEqual([path, 404, undefined]);
    }
  });

  it('when the request has no credentials, then the wrong method is still the 405 (as an unknown path is a 404)', async () => {
    const res = await request(t.app).delete('/api/calls');
    expect([res.status, res.headers['allow']]).toEqual([405, 'GET, HEAD']);
  });

  it('when any path of the OpenAPI document gets a method it does not take, then 405 with the Allow its OPTIONS answer gives; HEAD and OPTIONS stay as they were', async () => {
    const doc = await request(t.app).get('/api/openapi.json');
    const paths = Object.keys((doc.body as { paths: Record<string, unknown> }).paths);
    expect(paths.length).toBeGreaterThan(30);
    for (const template of paths) {
      const path = `/api${template.replace(/\{[^}]+\}/g, 'x')}`;
      const options = await request(t.app).options(path);
      expect([path, options.status]).toEqual([path, 200]);
      const allow = options.headers['allow'] as string;
      const other = ['DELETE', 'PUT', 'PATCH', 'POST', 'GET'].find((m) => !allow.split(', ').includes(m))!;
      const res = await request(t.app)[other.toLowerCase() as 'get'](path).set('Authorization', w.accounts.full.auth);
      expect([path, other, res.status, res.headers['allow']]).toEqual([path, other, 405, allow]);
    }
    const head = await request(t.app).head('/api/myaccount').set('Authorization', w.accounts.full.auth);
    expect(head.status).toBe(200);
  });
});
