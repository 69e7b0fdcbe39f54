import http from 'node:http';
import { Socket } from 'node:net';
import type express from 'express';
import helmet from 'helmet';

/**
 * Security headers (helmet) on every response: a Content-Security-Policy that lets the HTML
 * pages and the docs page load only their own scripts, styles and fonts and never be framed,
 * `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and helmet's other defaults.
 * None changes how a client reads JSON or CSV. HSTS only where the server speaks HTTPS itself
 * or requires it (docs/decisions.md, Wire conventions).
 */
export function helmetOptions(https: boolean): Parameters<typeof helmet>[0] {
  return {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    strictTransportSecurity: https ? { maxAge: 15552000 } : false,
  };
}

function helmetFor(https: boolean): express.RequestHandler {
  return helmet(helmetOptions(https));
}

/**
 * The headers helmet sets with these options, computed once by running it on a response that
 * is never sent. They depend on the options alone (no nonces, nothing from the request), so
 * setting the same list on every response gives every response exactly what helmet gives it.
 */
export function securityHeaderList(https: boolean): [string, string][] {
  const set: [string, string][] = [];
  // Records the names as helmet spells them (getHeaders() would lower-case them).
  class Recording extends http.ServerResponse {
    override setHeader(name: string, value: number | string | readonly string[]): this {
      set.push([name, String(value)]);
      return super.setHeader(name, value);
    }
  }
  const req = new http.IncomingMessage(new Socket());
  const res = new Recording(req);
  let ran = false;
  helmetFor(https)(req as express.Request, res as unknown as express.Response, () => {
    ran = true;
  });
  if (!ran) throw new Error('helmet did not finish synchronously');
  // A name set twice keeps its last value, as on a real response.
  const last = new Map(set.map(([name], i) => [name.toLowerCase(), i]));
  return set.filter(([name], i) => last.get(name.toLowerCase()) === i);
}

/** Sets the precomputed security headers on every response. */
export function securityHeaders(https: boolean): express.RequestHandler {
  const headers = securityHeaderList(https);
  return (_req, res, next) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
