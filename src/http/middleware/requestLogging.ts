import type express from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../config/logger';
import { whenResponseDone } from '../responseDone';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request id: the client's X-Request-Id when it is sane, else a new one (echoed back). */
    id: string;
    /** When the request reached the app (performance.now(), ms). */
    startedAt: number;
  }
}

const SANE_REQUEST_ID = /^[\w.-]{1,100}$/;

/** The client's X-Request-Id when it is 1–100 letters, digits, `_`, `.` or `-`, else a new UUID. */
export function requestIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Requests without a log line: probes and scrapes. */
const NOT_LOGGED = new Set(['/api/healthz', '/api/metrics']);

/**
 * One JSON log line per request with a request id, echoed in `X-Request-Id`. Only method and URL
 * are logged: headers can carry credentials. The endpoint's service name (the one requests are
 * counted under) goes in `endpoint`: `service` is the logger's own key and names the process.
 *
 * The line is written once, when the response is over (src/http/responseDone.ts), by the
 * process logger itself: no child logger is made per request, and nothing at all is done for
 * the line when its level is off. A 5xx is logged as `request errored` with an error naming
 * the status; a response cut short as `request aborted`.
 */
export function requestLogging(processLogger: Logger): express.RequestHandler {
  // One child, made once: a request line holds no key the logger redacts (method, URL, status,
  // times), so it skips the redaction pass every line would otherwise make.
  const logger = processLogger.child({}, { redact: [] });
  return (req, res, next) => {
    req.startedAt = performance.now();
    const id = requestIdOf(req);
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const url = req.url;
    if (!NOT_LOGGED.has(url) && logger.isLevelEnabled('info')) {
      const started = Date.now();
      whenResponseDone(res, () => {
        const line = {
          req: { id, method: req.method, url },
          endpoint: (res.locals as { service?: string }).service,
          res: { statusCode: res.statusCode },
        };
        const responseTime = Date.now() - started;
        if (res.statusCode >= 500) {
          logger.info({ ...line, err: new Error(`failed with status code ${res.statusCode}`), responseTime }, 'request errored');
        } else {
          logger.info({ ...line, responseTime }, !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted');
        }
      });
    }
    next();
  };
}
