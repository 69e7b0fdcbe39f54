import { useTestWorld } from '../harness/useTestWorld';
import { listen, RunningServer } from '../../src/app/server';
import { rawHttp, RawResponse } from '../harness/rawHttp';

/**
 * Requests Node's HTTP server answers itself never reach Express; the server answers them as
 * problem documents all the same (src/app/server.ts), like every other 4xx. Found by the fuzz
 * suite (fuzz.test.ts): control characters in a header and raw non-ASCII bytes in the request
 * line were answered with a bare `400 Bad Request`, `Expect: foo` with a bare 417.
 */
describe('requests the HTTP parser refuses', () => {
  const { t, w } = useTestWorld();
  let server: RunningServer;
  const port = () => Number(new URL(server.url).port);

  beforeAll(async () => {
    server = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
  });
  afterAll(() => server?.close());

  const expectProblem = (res: RawResponse, status: number) => {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json');
    const problem: unknown = JSON.parse(res.body.toString('utf8'));
    expect(problem).toMatchObject({ status, type: expect.stringMatching(/^\/api\/problems\/[a-z_]+$/) as jest.AsymmetricMatcher });
  };

  it.each([
    ['a NUL', 'Minute rat\u0000ed'],
    ['a DEL', 'Minute rate\u007fd'],
    ['a C0 control character', '\u0002Minute rated'],
  ])('when a header value holds %s, then the answer is a 400 problem document', async (_name, value) => {
    const res = await rawHttp(
      port(),
      {
        method: 'GET',
        target: '/api/myaccount',
        headers: [
          ['Authorization', w.accounts.full.auth],
          ['X-Rate-Limit-Fair-Use-Policy', value],
        ],
      },
      10_000,
    );
    expectProblem(res, 400);
  });

  it.each([
    ['a raw C1 byte in a query value', '/api/calls?TimeSpan=P1D\xc2\x98'],
    ['raw UTF-8 bytes in a query value', '/api/leads?modifiedFrom=\xe2\x82\xac'],
    ['a raw line separator in the path', '/api/calendars/events/\xe2\x80\xa8'],
  ])('when the request line holds %s, then the answer is a 400 problem document', async (_name, target) => {
    const res = await rawHttp(port(), { method: 'GET', target, headers: [['Authorization', w.accounts.full.auth]] }, 10_000);
    expectProblem(res, 400);
  });

  it('when the request head is over the size limit, then the answer is a 431 problem document', async () => {
    const res = await rawHttp(
      port(),
      {
        method: 'GET',
        target: '/api/myaccount',
        headers: [
          ['Authorization', w.accounts.full.auth],
          ['X-Padding', 'x'.repeat(40_000)],
        ],
      },
      10_000,
    );
    expectProblem(res, 431);
  });

  it('when the request line alone is over the size limit (a long query), then the answer is a 414 problem document', async () => {
    const res = await rawHttp(
      port(),
      { method: 'GET', target: `/api/simpleleads?${'UniqueId=x&'.repeat(4000)}`, headers: [['Authorization', w.accounts.full.auth]] },
      10_000,
    );
    expectProblem(res, 414);
  });

  it('when a request was refused, then the server goes on answering', async () => {
    const res = await rawHttp(
      port(),
      { method: 'GET', target: '/api/myaccount', headers: [['Authorization', w.accounts.full.auth]] },
      10_000,
    );
    expect(res.status).toBe(200);
  });

  it('when Expect is not 100-continue, then the answer is a 417 problem document naming Expect', async () => {
    const res = await rawHttp(
      port(),
      {
        method: 'GET',
        target: '/api/users',
        headers: [
          ['Authorization', w.accounts.full.auth],
          ['Expect', 'foo'],
        ],
      },
      10_000,
    );
    expect(res.status).toBe(417);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({
      status: 417,
      type: '/api/problems/invalid_parameter',
      errors: [{ parameter: 'Expect' }],
    });
  });

  it.each([
    ['a host and port (a tunnel)', 'example.com:443'],
    ['a path of the API', '/api/myaccount'],
  ])(
    'when the method is CONNECT to %s, then the answer is a 405 problem document naming the method, and the server goes on',
    async (_name, target) => {
      const res = await rawHttp(port(), { method: 'CONNECT', target, headers: [['Authorization', w.accounts.full.auth]] }, 10_000);
      expect(res.status).toBe(405);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE');
      expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({
        status: 405,
        type: '/api/problems/invalid_parameter',
        errors: [{ parameter: 'method' }],
      });
      const after = await rawHttp(
        port(),
        { method: 'GET', target: '/api/myaccount', headers: [['Authorization', w.accounts.full.auth]] },
        10_000,
      );
      expect(after.status).toBe(200);
    },
  );

  it('when the target is an absolute URL (absolute form), then it is served as its path', async () => {
    const res = await rawHttp(
      port(),
      { method: 'GET', target: `http://127.0.0.1:${port()}/api/myaccount`, headers: [['Authorization', w.accounts.full.auth]] },
      10_000,
    );
    expect(res.status).toBe(200);
  });

  it('when Expect is 100-continue on a request without a body, then it is served', async () => {
    const res = await rawHttp(
      port(),
      {
        method: 'GET',
        target: '/api/myaccount',
        headers: [
          ['Authorization', w.accounts.full.auth],
          ['Expect', '100-continue'],
        ],
      },
      10_000,
    );
    expect(res.status).toBe(200);
  });
});
