import type { Request, RequestHandler } from 'express';
import type { Endpoint } from './endpoint';
import { HttpProblem } from './problem';

/** One endpoint's path as segments: a literal in lower case (routes match any case), or null for a `{Parameter}`. */
type Template = (string | null)[];

function segmentsOf(path: string): string[] {
  // As the router matches: one trailing slash is allowed; doubled ones were collapsed before.
  return path.split('/').filter((s, i, all) => s !== '' || (i > 0 && i < all.length - 1));
}

function matches(template: Template, segments: readonly string[]): boolean {
  return (
    template.length === segments.length && template.every((t, i) => (t === null ? segments[i] !== '' : t === segments[i]!.toLowerCase()))
  );
}

/**
 * A request to a path the API serves with a method it does not serve there (`DELETE /api/calls`,
 * `PUT /api/myaccount`) is a 405 with `Allow`, not a 404 (docs/decisions.md, Wire conventions).
 * Runs after the routes found nothing, so it sees only requests no endpoint took. The methods
 * come from the endpoint declarations the routes are mounted from, so `Allow` cannot drift from
 * them; a GET brings HEAD, and the list is sorted as the router's own OPTIONS answer writes it.
 * A path no endpoint has goes on to the 404.
 */
export function methodNotAllowed(endpoints: readonly Endpoint[], base: string): RequestHandler {
  const routes = endpoints.map((e) => ({
    template: segmentsOf(e.path).map((s) => (/^\{[^}]+\}$/.test(s) ? null : s.toLowerCase())),
    methods: e.method === 'get' ? ['GET', 'HEAD'] : [e.method.toUpperCase()],
  }));
  return (req, _res, next) => {
    const path = req.path;
    // The prefix matches in any letter case, as the router's does (`/API/calls`).
    const prefix = path.slice(0, base.length).toLowerCase();
    if (prefix !== base.toLowerCase() || (path.length > base.length && path[base.length] !== '/')) return next();
    const segments = segmentsOf(path.slice(base.length));
    const allowed = new Set(routes.filter((r) => matches(r.template, segments)).flatMap((r) => r.methods));
    if (allowed.size === 0) return next();
    const allow = [...allowed].sort().join(', ');
    next(
      new HttpProblem(
        'invalid_parameter',
        `${describeMethod(req)} is not served at ${path}; it takes ${allow}`,
        [{ parameter: 'method', message: `must be one of ${allow}` }],
        { Allow: allow },
        [405, 'Method not allowed'],
      ),
    );
  };
}

/** The method as the request named it, with the POST it came as when an override header named it. */
function describeMethod(req: Request): string {
  const original = (req as Request & { originalMethod?: string }).originalMethod;
  return original !== undefined && original !== req.method ? `${req.method} (a POST with a method override)` : req.method;
}
