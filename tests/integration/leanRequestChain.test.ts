import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { useTestApp, useTestWorld } from '../harness/useTestWorld';
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

/**
 * Answers are written without Express's res.send (it parses and re-formats the Content-Type on
 * every call): their status and headers stay the ones res.send gives the same text.
 */
describe('answers written without res.send', () => {
  const { t, w } = useTestWorld();
  const leadId = () => `${w.id}-sent`;

  beforeAll(async () => {
    await t.load({
      type: 'lead',
      uniqueId: leadId(),
      campaign: w.campaigns.b2b,
      status: 'New',
      // Not ASCII: Content-Length counts bytes.
      data: { Name: 'Åse Ødegård ✓', Telefon: '+45 11 22 33 55' },
    });
  });

  /** What res.send made of the same status and text, for the same method and request headers. */
  async function asExpressSends(res: request.Response, method: 'get' | 'head' | 'post', headers: Record<string, string>) {
    const bare = express();
    // What the chain had put in Vary before the answer was written (Prefer, for answers with DateTimes).
    // Accept and then Accept-Encoding (when answers are compressed on request) are added as the answer is written.
    const vary = String(res.headers.vary ?? '').split(', ');
    const before = vary.filter((v) => v !== 'Accept' && v !== 'Accept-Encoding' && v !== '').join(', ');
    bare.all('/', (_req, out) => {
      if (before !== '') out.setHeader('Vary', before);
      out.status(res.status);
      out.vary('Accept');
      if (vary.includes('Accept-Encoding')) out.vary('Accept-Encoding');
      out.type(String(res.headers['content-type'])).send(res.text ?? '');
    });
    let req = request(bare)[method]('/');
    for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
    return req;
  }

  const compared = (res: request.Response) => ({
    status: res.status,
    type: res.headers['content-type'] as unknown,
    length: res.headers['content-length'] as unknown,
    vary: res.headers.vary as unknown,
    body: res.text,
  });

  it('when JSON, HTML and HEAD answers are sent, then status, Content-Type, Content-Length, Vary and body are what res.send gives', async () => {
    // Plain bodies: what res.send gives is compared byte for byte (compression: exportsCompression.test.ts).
    const auth = { Authorization: w.accounts.full.auth, 'Accept-Encoding': 'identity' };
    const cases: { method: 'get' | 'head' | 'post'; path: string; headers: Record<string, string>; body?: object }[] = [
      { method: 'get', path: '/api/myaccount', headers: auth },
      { method: 'get', path: `/api/leads/${encodeURIComponent(leadId())}`, headers: auth },
      { method: 'get', path: `/api/leads/${encodeURIComponent(leadId())}`, headers: { ...auth, Accept: 'text/html' } },
      { method: 'get', path: '/api/myaccount', headers: { ...auth, 'If-Modified-Since': new Date().toUTCString() } },
      {
        method: 'post',
        path: '/api/leads',
        headers: auth,
        body: { CampaignCode: w.campaigns.b2b, Data: { Name: 'Sendt Ø', Telefon: '+45 11 22 33 66' } },
      },
    ];
    for (const c of cases) {
      let req = request(t.app)[c.method](c.path);
      for (const [name, value] of Object.entries(c.headers)) req = req.set(name, value);
      const res = c.body ? await req.send(c.body) : await req;
      expect({ path: c.path, status: res.status }).toEqual({ path: c.path, status: 200 });
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
      expect({ path: c.path, ...compared(res) }).toEqual({ path: c.path, ...compared(await asExpressSends(res, c.method, c.headers)) });
    }
    // HEAD: the GET's headers, no body.
    const get = await request(t.app).get('/api/myaccount').set(auth);
    const head = await request(t.app).head('/api/myaccount').set(auth);
    expect(head.status).toBe(200);
    expect(head.text ?? '').toBe('');
    expect([head.headers['content-type'], head.headers['content-length'], head.headers.vary]).toEqual([
      get.headers['content-type'],
      get.headers['content-length'],
      get.headers.vary,
    ]);
  });
});
