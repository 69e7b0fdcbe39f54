import { Writable } from 'node:stream';
import request from 'supertest';
import { useTestDb } from '../harness/useTestWorld';
import { testSettings } from '../harness/testApp';
import { createLogger } from '../../src/config/logger';
import { composeApp, ComposedApp } from '../../src/app/compose';

/**
 * The request log as an operator reads it: real log lines written by the real app, captured
 * from the logger's destination and parsed as text (JSON.parse would silently keep the last of
 * two equal keys, so the keys are counted in the raw line too).
 */
describe('request log lines', () => {
  const lines: string[] = [];
  const db = useTestDb({ poolMax: 2 });
  let composed: ComposedApp;

  beforeAll(async () => {
    const settings = testSettings({ LOG_LEVEL: 'info' });
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    composed = await composeApp({ settings, db, logger: createLogger(settings.LOG_LEVEL, destination) });
  });
  // Closes what compose opened (Redis clients); useTestDb destroys the pool.
  afterAll(() => composed.close());

  /** The line logged for the request with this id. */
  async function logLineOf(requestId: string): Promise<string> {
    for (let i = 0; i < 50; i++) {
      const line = lines.find((l) => l.includes(`"id":"${requestId}"`));
      if (line) return line;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`no log line for request ${requestId}`);
  }

  const keyCount = (line: string, key: string) => line.split(`"${key}":`).length - 1;

  it('when an endpoint answers, then its line has one service key (the process) and names the endpoint under endpoint', async () => {
    const res = await request(composed.app.express).get('/api/openapi.json').set('X-Request-Id', 'log-test-openapi');
    expect(res.status).toBe(200);
    const line = await logLineOf('log-test-openapi');
    expect(keyCount(line, 'service')).toBe(1);
    expect(JSON.parse(line)).toMatchObject({
      service: 'lead-call-api',
      endpoint: 'openapi',
      req: { id: 'log-test-openapi', method: 'GET', url: '/api/openapi.json' },
      res: { statusCode: 200 },
    });
  });

  it('when a counted endpoint refuses bad credentials, then the line still has one service key and the endpoint, and no credentials', async () => {
    const credentials = Buffer.from('nobody-log-test:wrong-secret').toString('base64');
    const res = await request(composed.app.express)
      .get('/api/myaccount')
      .set('Authorization', `Basic ${credentials}`)
      .set('X-Request-Id', 'log-test-401');
    expect(res.status).toBe(401);
    const line = await logLineOf('log-test-401');
    expect(keyCount(line, 'service')).toBe(1);
    expect(JSON.parse(line)).toMatchObject({ service: 'lead-call-api', endpoint: 'myaccount', res: { statusCode: 401 } });
    expect(line).not.toContain(credentials);
    expect(line).not.toContain('wrong-secret');
  });

  it('when no endpoint matches, then the line has the process service and no endpoint', async () => {
    const res = await request(composed.app.express).get('/api/no-such-thing').set('X-Request-Id', 'log-test-404');
    expect(res.status).toBe(404);
    const line = await logLineOf('log-test-404');
    expect(keyCount(line, 'service')).toBe(1);
    const parsed = JSON.parse(line) as { service: string };
    expect(parsed.service).toBe('lead-call-api');
    expect(parsed).not.toHaveProperty('endpoint');
  });
});
