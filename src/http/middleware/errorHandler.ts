import type { ErrorRequestHandler } from 'express';
import type { Logger } from '../../config/logger';
import { HttpProblem } from '../problem';
import { PREFERENCE_APPLIED } from '../preferDateTime';

function toProblem(err: unknown): HttpProblem {
  if (err instanceof HttpProblem) return err;
  const e = err as { type?: string; status?: number; statusCode?: number };
  // body-parser's errors: a body over the limit, or a body that is not JSON.
  if (e?.type === 'entity.too.large') return new HttpProblem('payload_too_large', 'the request body is over the size limit');
  if (e?.type === 'entity.parse.failed') return new HttpProblem('invalid_body', 'the request body is not valid JSON');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new HttpProblem('unsupported_media_type', 'the request body encoding is not supported');
  }
  // Express reports a path segment that is not valid percent-encoding as a 400 URIError.
  if (err instanceof URIError) return new HttpProblem('invalid_parameter', 'the path is not valid percent-encoded UTF-8');
  if ((e?.status ?? e?.statusCode) === 400) return new HttpProblem('invalid_body', 'the request could not be read');
  return new HttpProblem('internal_error', 'an internal error occurred');
}

/**
 * A 503 the server gives on purpose to shed load (exports at their cap, no connection free in
 * time): a problem with Retry-After and no cause behind it. Not a failure: under load there are
 * hundreds a second, so it is not logged as one (its request line and the refusal metrics
 * record it). A 503 with a cause (the database cannot be reached) is.
 */
function isLoadShedding(err: unknown): boolean {
  return err instanceof HttpProblem && err.status === 503 && err.cause === undefined && 'Retry-After' in err.headers;
}

/**
 * One error handler for every route. A request error is never fatal to the process; a 500
 * never shows a stack trace. Once the response has started, the error cannot become a
 * problem document: the connection is cut so the client sees an incomplete response.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    // The client left before the answer (an export it gave up on while its first rows were
    // read): what failed is the work it abandoned, not the server, and there is no one to answer.
    if (res.destroyed && !res.writableFinished) {
      logger.info({ err, reqId: req.id }, 'client disconnected before the answer was sent');
      return;
    }
    const problem = toProblem(err);
    if (problem.status >= 500 && !isLoadShedding(err)) logger.error({ err, reqId: req.id }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A problem document writes no DateTimes: no preference shaped it.
    res.removeHeader(PREFERENCE_APPLIED);
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    res
      .status(problem.status)
      .type('application/problem+json')
      .send(JSON.stringify(problem.toJSON(req.originalUrl)));
  };
}
