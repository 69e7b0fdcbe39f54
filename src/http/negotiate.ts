import type { Request } from 'express';
import Negotiator from 'negotiator';
import { HttpProblem } from './problem';

/** The representations a service can send; the first listed is the default. */
export type Representation = 'json' | 'html' | 'csv' | 'events';

const MEDIA: Record<Representation, string> = {
  json: 'application/json',
  html: 'text/html',
  csv: 'text/csv',
  // Server-Sent Events (GET /events).
  events: 'text/event-stream',
};

/**
 * The Accept header with each media range's parameters left out but its `q`: a client that
 * asks for `application/json; charset=utf-8` (or `text/csv; charset=windows-1252`) asks for
 * the type, and negotiator would otherwise match a range with parameters only against an
 * offered type with the same ones. Separators inside quoted values do not split.
 */
function withoutMediaParameters(accept: string): string {
  const ranges: string[] = [];
  let range = '';
  let quoted = false;
  const parts: string[] = [];
  const endPart = () => {
    parts.push(range.trim());
    range = '';
  };
  const endRange = () => {
    endPart();
    const [type = '', ...params] = parts.splice(0);
    const q = params.find((p) => /^q\s*=/i.test(p));
    if (type !== '') ranges.push(q === undefined ? type : `${type};${q.replace(/\s+/g, '')}`);
  };
  for (let i = 0; i < accept.length; i++) {
    const c = accept[i]!;
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
      continue;
    }
    if (c === '"') quoted = true;
    else if (c === ';') endPart();
    else if (c === ',') endRange();
    else range += c;
  }
  endRange();
  return ranges.join(', ');
}

/**
 * Picks the representation for a request: no Accept → the service's default, `*\/*` honoured,
 * media type parameters other than `q` ignored, nothing acceptable → 406 (docs/decisions.md,
 * Wire). Large-data services list only json or csv, so a text/html-only client gets 406 there.
 */
export function negotiate(req: Request, offered: readonly [Representation, ...Representation[]]): Representation {
  const accept = req.headers.accept;
  if (!accept || accept.trim() === '' || isJavaDefaultAccept(accept)) return offered[0];
  const types = offered.map((r) => MEDIA[r]);
  const negotiator = new Negotiator({ headers: { accept: withoutMediaParameters(accept) } });
  // The other names of JSON go last, so a tie (`*/*`) still picks the service's default.
  const chosen = negotiator.mediaType(offered.includes('json') ? [...types, ...JSON_LIKE] : types);
  if (chosen) return JSON_LIKE.includes(chosen) ? 'json' : offered[types.indexOf(chosen)]!;
  if (isCsvExport(offered) && negotiator.mediaType([MEDIA.json, ...JSON_LIKE, ...CSV_LIKE]) !== undefined) return 'csv';
  throw new HttpProblem('not_acceptable', `this service answers ${types.join(' or ')}`);
}

/**
 * Other names clients give JSON in an Accept: ASP.NET's JSON formatter answers `text/json` as
 * well, and clients written against such services ask for it alone. They get
 * `application/json`, the one name the API writes (docs/decisions.md, Wire).
 */
const JSON_LIKE = ['text/json', 'text/x-json', 'application/x-json'];

/**
 * The Accept Java's HttpURLConnection (before JDK 23) sends when its caller set none: text/html
 * first, then a bare `*` no browser sends. It states no preference of the client's, so it is read
 * as no Accept (JSON), not as a request for the HTML page a browser gets (docs/decisions.md, Wire).
 */
function isJavaDefaultAccept(accept: string): boolean {
  return accept.replace(/\s+/g, '').toLowerCase() === 'text/html,image/gif,image/jpeg,*;q=.2,*/*;q=.2';
}

/** Other names clients give CSV, or a file download, in an Accept. */
const CSV_LIKE = [
  'text/plain',
  'application/csv',
  'text/comma-separated-values',
  'text/x-csv',
  'application/x-csv',
  'application/vnd.ms-excel',
  'application/octet-stream',
];

/**
 * A CSV export's path names its format (`/calls/csv`, `/rawleads`, `/leads/csv`), and its
 * family's other format is JSON. Clients of the live service send their stack's default Accept
 * to it (HttpClient's `application/json`, old RestSharp's list of JSON and XML types) and expect
 * the file: an Accept that allows JSON, or another name for CSV or a download (CSV_LIKE), gets
 * the CSV, which the path asked for; one that allows none of them (`text/html`) is still a 406
 * (docs/decisions.md, Wire).
 */
function isCsvExport(offered: readonly Representation[]): boolean {
  return offered.length === 1 && offered[0] === 'csv';
}

export const mediaType = (r: Representation): string => MEDIA[r];
