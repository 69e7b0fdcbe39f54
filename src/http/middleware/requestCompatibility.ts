import { METHODS } from 'node:http';
import type { RequestHandler } from 'express';
import methodOverride from 'method-override';
import { HttpProblem } from '../problem';

/**
 * What real clients send that the routes would otherwise not match (docs/decisions.md, Wire):
 * - a path with doubled slashes (`/api//calls`), which integration platforms make when a base
 *   URL ending in `/` is joined with a path starting with one;
 * - a POST that names the method it stands for in `X-HTTP-Method-Override` (or `X-HTTP-Method`,
 *   `X-Method-Override`): Java's HttpURLConnection cannot send PATCH at all. Headers that name
 *   different methods are a 400: which one was meant cannot be told.
 */
export function requestCompatibility(): RequestHandler[] {
  return [collapseSlashes, refuseDisagreeingOverrides, ...OVERRIDE_HEADERS.map((header) => methodOverride(header))];
}

const collapseSlashes: RequestHandler = (req, _res, next) => {
  // Only a path (origin form): an absolute URL as the target (`GET http://host/api/...`) keeps its `//`.
  if (!req.url.startsWith('/')) return next();
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (path.includes('//')) req.url = path.replace(/\/{2,}/g, '/') + (q < 0 ? '' : req.url.slice(q));
  next();
};

/** The headers method-override reads, in the order it applies them (the last one read would win). */
const OVERRIDE_HEADERS = ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override'] as const;

/**
 * The methods a POST's override headers name: each value of each header (Node joins a header
 * sent twice with a comma) that is a method, as method-override recognises one; other values
 * it ignores, and so does this.
 */
function overrideMethods(headers: Record<string, string | string[] | undefined>): { header: string; method: string }[] {
  const named: { header: string; method: string }[] = [];
  for (const header of OVERRIDE_HEADERS) {
    const value = headers[header.toLowerCase()];
    if (typeof value !== 'string') continue;
    for (const part of value.split(',')) {
      const method = part.trim().toUpperCase();
      if (METHODS.includes(method)) named.push({ header, method });
    }
  }
  return named;
}

/**
 * Override headers on a POST that name different methods (`X-HTTP-Method-Override: PATCH` and
 * `X-HTTP-Method: DELETE`): method-override would take the last header it reads, so a DELETE
 * could run where the client's own code meant a PATCH. A 400 naming both headers instead.
 */
const refuseDisagreeingOverrides: RequestHandler = (req, _res, next) => {
  if (req.method !== 'POST') return next();
  const named = overrideMethods(req.headers);
  const first = named[0];
  const other = named.find((n) => n.method !== first?.method);
  if (first === undefined || other === undefined) return next();
  const errors =
    first.header === other.header
      ? [{ parameter: first.header, message: `names ${first.method} and ${other.method}` }]
      : [
          { parameter: first.header, message: `names ${first.method}` },
          { parameter: other.header, message: `names ${other.method}` },
        ];
  const detail = `${errors.map((e) => `${e.parameter} ${e.message}`).join(' and ')}: send one method to stand for the POST`;
  next(new HttpProblem('invalid_parameter', detail, errors));
};
