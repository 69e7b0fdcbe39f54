import type { RequestHandler } from 'express';
import methodOverride from 'method-override';

/**
 * What real clients send that the routes would otherwise not match (docs/decisions.md, Wire):
 * - a path with doubled slashes (`/api//calls`), which integration platforms make when a base
 *   URL ending in `/` is joined with a path starting with one;
 * - a POST that names the method it stands for in `X-HTTP-Method-Override` (or `X-HTTP-Method`,
 *   `X-Method-Override`): Java's HttpURLConnection cannot send PATCH at all.
 */
export function requestCompatibility(): RequestHandler[] {
  return [collapseSlashes, methodOverride('X-HTTP-Method-Override'), methodOverride('X-HTTP-Method'), methodOverride('X-Method-Override')];
}

const collapseSlashes: RequestHandler = (req, _res, next) => {
  // Only a path (origin form): an absolute URL as the target (`GET http://host/api/...`) keeps its `//`.
  if (!req.url.startsWith('/')) return next();
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (path.includes('//')) req.url = path.replace(/\/{2,}/g, '/') + (q < 0 ? '' : req.url.slice(q));
  next();
};
