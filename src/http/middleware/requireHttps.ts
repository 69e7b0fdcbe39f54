import type { RequestHandler } from 'express';
import { HttpProblem } from '../problem';

/**
 * With REQUIRE_HTTPS the API refuses plain HTTP (the API is HTTPS only: docs/decisions.md, Wire). Behind a proxy the
 * scheme comes from X-Forwarded-Proto, which Express honours only when TRUST_PROXY is set.
 */
export function requireHttps(): RequestHandler {
  return (req, _res, next) => {
    if (req.secure) return next();
    next(new HttpProblem('forbidden', 'this API is served over HTTPS only'));
  };
}
