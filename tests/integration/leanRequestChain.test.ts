import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { useTestApp } from '../harness/useTestWorld';
import { helmetOptions, securityHeaderList } from '../../src/http/securityHeaders';

/**
 * The request chain without per-request work it does not need: health probes answered first,
 * security headers computed once. What a client sees stays what the full chain and helmet give.
 */
describe('the lean request chain', () => {
  const t = useTestApp();

  /** The headers a client compares: everything but the per-response date and request id. */
  const comparable = (headers: Record<string, string>) => {
    const { date: _date, 'x-request-id': _id, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
    return rest;
  };

  it('when healthz is probed, then the probe answers with the body and headers the endpoint chain gives', async () => {
    const probe = await request(t.app).get('/api/healthz');
    // An Accept other than the plain ones takes the full chain, which answers the same representation.
    const chain = await request(t.app).get('/api/healthz').set('Accept', 'application/json;q=1');
    expect(probe.status).toBe(200);
    expect(probe.text).toBe(chain.text);
    expect(comparable(probe.headers as Record<string, string>)).toEqual(comparable(chain.headers as Record<string, string>));
    expect(probe.headers['x-request-id']).toMatch(/^[\w.-]+$/);
  });

  it('when healthz is probed with an X-Request-Id, then the probe echoes it', async () => {
    const res = await request(t.app).get('/api/healthz').set('X-Request-Id', 'probe-1');
    expect(res.headers['x-request-id']).toBe('probe-1');
  });

  it('when healthz is asked for HTML or conditionally, then the full chain answers (406, 304)', async () => {
    expect((await request(t.app).get('/api/healthz').set('Accept', 'text/html')).status).toBe(406);
    const first = await request(t.app).get('/api/healthz');
    const again = await request(t.app).get('/api/healthz').set('If-None-Match', String(first.headers.etag));
    expect(again.status).toBe(304);
  });

  it('when healthz is probed, then the probe is timed under the healthz service', async () => {
    const count = async () => {
      const text = (await request(t.app).get('/api/metrics')).text;
      return Number(/^lcm_http_request_duration_seconds_count\{service="healthz",status="200"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await count();
    await request(t.app).get('/api/healthz').expect(200);
    await request(t.app).get('/api/healthz').expect(200);
    expect((await count()) - before).toBe(2);
  });

  it.each([false, true])(
    'when the security headers are precomputed (HSTS %s), then they are exactly the ones helmet sets',
    async (https) => {
      // helmet itself, with the options the app uses, on a bare app.
      const bare = express();
      const options = securityHeaderList(https);
      expect(options.length).toBeGreaterThan(5);
      bare.use(helmet(helmetOptions(https)));
      bare.get('/', (_req, res) => void res.end());
      const fromHelmet = (await request(bare).get('/')).headers as Record<string, string>;
      const fromApp = (await request(t.app).get('/api/openapi.json')).headers as Record<string, string>;
      for (const [name, value] of options) {
        expect([name, fromHelmet[name.toLowerCase()]]).toEqual([name, value]);
        if (!https) expect([name, fromApp[name.toLowerCase()]]).toEqual([name, value]);
      }
      const helmetNames = Object.keys(fromHelmet).filter(
        (n) => !['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(n),
      );
      expect(options.map(([n]) => n.toLowerCase()).sort()).toEqual(helmetNames.sort());
    },
  );
});
