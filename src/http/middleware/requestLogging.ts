import type express from 'express';
import { randomUUID } from 'node:crypto';
import type { SerializedRequest, SerializedResponse } from 'pino';
import pinoHttp from 'pino-http';
import type { Logger } from '../../config/logger';

/**
 * One JSON log line per request with a request id (the client's X-Request-Id when it is sane,
 * else a new one, echoed back). Only method and URL are logged: headers can carry credentials.
 * The endpoint's service name (the one requests are counted under) goes in `endpoint`:
 * `service` is the logger's own key and names the process (`lead-call-api`).
 */
export function requestLogging(logger: Logger): express.RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req, res) => {
      const incoming = req.headers['x-request-id'];
      const id = typeof incoming === 'string' && /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customProps: (_req, res) => ({ endpoint: (res as express.Response).locals?.service as string | undefined }),
    serializers: {
      req: (req: SerializedRequest) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: SerializedResponse) => ({ statusCode: res.statusCode }),
    },
    autoLogging: { ignore: (req) => req.url === '/api/healthz' || req.url === '/api/metrics' },
  });
}
