import request from 'supertest';
import { useTestApp } from '../harness/useTestWorld';

describe('HTTP foundation', () => {
  const t = useTestApp();

  it('when /api/healthz is asked without credentials, then it answers ok and counts nothing', async () => {
    const res = await request(t.app).get('/api/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers['x-rate-limit-limit']).toBeUndefined();
    expect(res.headers['x-request-id']).toBeDefined();
  });

  it('when /api/readyz is asked, then it reports the database and Redis up and no read replica', async () => {
    const res = await request(t.app).get('/api/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'up', redis: 'up', replica: 'not-configured' });
  });

  it('when /api/metrics is asked, then it answers Prometheus text', async () => {
    await request(t.app).get('/api/healthz');
    const res = await request(t.app).get('/api/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toContain('lcm_http_request_duration_seconds');
  });

  it('when a route does not exist, then a 404 problem+json answers', async () => {
    const res = await request(t.app).get('/api/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found', title: 'Not found' });
  });
});
