import { Writable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { createLogger } from '../../src/config/logger';
import { errorHandler } from '../../src/http/middleware/errorHandler';
import { requestLogging } from '../../src/http/middleware/requestLogging';
import { HttpProblem } from '../../src/http/problem';

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { id: string };
  err?: { message: string };
}

/**
 * What the error handler logs for a 5xx, read from the log lines the real middleware writes:
 * a failure is logged with its error, load shed on purpose (a 503 with Retry-After and no
 * cause: exports at their cap, no connection free in time) only by its request line.
 */
describe('error log lines', () => {
  const lines: LogLine[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk, _encoding, done) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as LogLine);
        done();
      },
    }),
  );
  const app = express();
  app.use(requestLogging(logger));
  app.get('/shed', () => {
    throw new HttpProblem('service_unavailable', 'the server runs as many exports as it may at once; retry in 5 s', undefined, {
      'Retry-After': '5',
    });
  });
  app.get('/unreachable', () => {
    const problem = new HttpProblem('service_unavailable', 'the database cannot be reached; retry shortly', undefined, {
      'Retry-After': '2',
    });
    problem.cause = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    throw problem;
  });
  app.get('/broken', () => {
    throw new Error('a bug');
  });
  app.use(errorHandler(logger));

  const failuresOf = (id: string) => lines.filter((l) => l.msg === 'request failed' && l.reqId === id);
  const requestLineOf = (id: string) => lines.find((l) => l.req?.id === id && l.msg !== 'request failed');

  it('when the server sheds load with a 503 and Retry-After, then only the request line records it, no failure', async () => {
    const res = await request(app).get('/shed').set('X-Request-Id', 'shed-1');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    await new Promise((r) => setImmediate(r));
    expect(failuresOf('shed-1')).toEqual([]);
    expect(requestLineOf('shed-1')).toMatchObject({ res: { statusCode: 503 } });
  });

  it('when a 503 has a cause (the database cannot be reached) or a route fails, then the failure is logged at error with its error', async () => {
    expect((await request(app).get('/unreachable').set('X-Request-Id', 'down-1')).status).toBe(503);
    expect((await request(app).get('/broken').set('X-Request-Id', 'bug-1')).status).toBe(500);
    await new Promise((r) => setImmediate(r));
    expect(failuresOf('down-1')).toHaveLength(1);
    expect(failuresOf('down-1')[0]!.level).toBe(50);
    expect(failuresOf('bug-1')).toHaveLength(1);
    expect(failuresOf('bug-1')[0]!.err?.message).toBe('a bug');
  });
});
