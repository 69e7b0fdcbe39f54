import type { Request } from 'express';
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
 * Picks the representation for a request: no Accept → the service's default, `*\/*` honoured,
 * nothing acceptable → 406 (docs/decisions.md, Wire). Large-data services list only json or csv, so a
 * text/html-only client gets 406 there.
 */
export function negotiate(req: Request, offered: readonly [Representation, ...Representation[]]): Representation {
  if (!req.headers.accept || req.headers.accept.trim() === '') return offered[0];
  const chosen = req.accepts(offered.map((r) => MEDIA[r]));
  if (!chosen) {
    throw new HttpProblem('not_acceptable', `this service answers ${offered.map((r) => MEDIA[r]).join(' or ')}`);
  }
  return (Object.keys(MEDIA) as Representation[]).find((r) => MEDIA[r] === chosen)!;
}

export const mediaType = (r: Representation): string => MEDIA[r];
