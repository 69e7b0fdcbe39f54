import type express from 'express';
import etag from 'etag';
import type { RequestMetrics } from './metrics/requestMetrics';
import { requestIdOf } from './middleware/requestLogging';

const BODY = JSON.stringify({ status: 'ok' });

/**
 * `GET /api/healthz` answered before any other middleware: a load balancer probes it many
 * times a second, and it needs nothing of the chain. The answer is the one the healthz
 * endpoint gives (body, weak ETag, content type, Vary, security headers, X-Request-Id) and it
 * is timed under the healthz service like any other request; it is not logged, as before. A
 * probe the endpoint would answer otherwise (an Accept without JSON: 406, If-None-Match: 304,
 * plain HTTP where HTTPS is required: 403, a compressed body) takes the full chain.
 */
export function healthProbe(
  securityHeaders: [string, string][],
  requests: RequestMetrics,
  requireHttps: boolean,
  /** COMPRESSION_MIN_BYTES when answers are compressed on request (COMPRESSION), else undefined. */
  compressFrom: number | undefined,
): express.RequestHandler {
  // A body the chain would compress for this client takes the chain.
  const compressible = compressFrom !== undefined && Buffer.byteLength(BODY) >= compressFrom;
  const headers = [
    ...securityHeaders.flat(),
    'Vary',
    compressFrom === undefined ? 'Accept' : 'Accept, Accept-Encoding',
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(Buffer.byteLength(BODY)),
    'ETag',
    etag(BODY, { weak: true }),
  ];
  return (req, res, next) => {
    if (req.url !== '/api/healthz' || req.method !== 'GET') return next();
    const accept = req.headers.accept;
    if ((accept !== undefined && accept !== '*/*' && accept !== 'application/json') || req.headers['if-none-match'] !== undefined) {
      return next();
    }
    if (requireHttps && !req.secure) return next();
    if (compressible && req.headers['accept-encoding'] !== undefined) return next();
    const started = performance.now();
    res.writeHead(200, ['X-Request-Id', requestIdOf(req), ...headers]);
    res.end(BODY);
    requests.observe('healthz', 200, performance.now() - started);
  };
}
