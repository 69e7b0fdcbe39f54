import type { Request, Response } from 'express';
import type { RequestLogWriter } from '../data/requestLog';
import { basicCredentials } from './basicCredentials';
import { decodeQueryComponent } from './queryString';
import { whenResponseDone } from './responseDone';

/** Longer paths are cut: an entry stays small whatever a client sends. */
const MAX_PATH = 2000;

/** Query parameters whose values never reach the log, should a client put a credential there. */
const SECRET_PARAMETER = /pass|pwd|secret|token|api_?key|authorization/i;

/** What stands in the log for a text that held a credential. */
const REDACTED = '[redacted]';

/**
 * The path and query of a request as logged, cut at MAX_PATH: the values of credential-like
 * query parameters are replaced, and so is any path segment, parameter name or value holding
 * the request's own credential (its password, or its Basic token). Should the credential still
 * show across the pieces (a password with a `/` or `&` in it), the whole path or query goes.
 */
function loggedPath(url: string, holdsCredential: (text: string) => boolean): string {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  if (holdsCredential(path))
    path = redactedPieces(path, '/', (segment) => (holdsCredential(segment) ? REDACTED : segment), holdsCredential);
  if (q >= 0) {
    const query = redactedPieces(
      url.slice(q + 1),
      '&',
      (pair) => {
        const eq = pair.indexOf('=');
        if (eq < 0) return holdsCredential(pair) ? REDACTED : pair;
        const name = pair.slice(0, eq);
        const shownName = holdsCredential(name) ? REDACTED : name;
        // The name as the app reads it (src/http/queryString.ts): `%70assw%F8rd` is `passwørd`.
        const hidden = SECRET_PARAMETER.test(decodeQueryComponent(name.replace(/\+/g, ' '))) || holdsCredential(pair.slice(eq + 1));
        return hidden ? `${shownName}=${REDACTED}` : `${shownName}${pair.slice(eq)}`;
      },
      holdsCredential,
    );
    path = `${path}?${query}`;
  }
  return path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path;
}

/** A text split at `separator`, each piece as `shown` gives it, joined again; REDACTED when the credential spans pieces. */
function redactedPieces(
  text: string,
  separator: string,
  shown: (piece: string) => string,
  holdsCredential: (text: string) => boolean,
): string {
  const joined = text.split(separator).map(shown).join(separator);
  return holdsCredential(joined) ? REDACTED : joined;
}

/** Whether a text of the request (percent-encoded or not) holds the password or token of its Basic Authorization header. */
function credentialFinder(authorization: string | undefined): (text: string) => boolean {
  const credential = basicCredential(authorization);
  if (credential.length === 0) return () => false;
  return (text) => {
    if (!text.includes('%') && !text.includes('+')) return credential.some((secret) => text.includes(secret));
    const spaced = text.replace(/\+/g, ' ');
    // As the app decodes it (UTF-8 escapes, or windows-1252 ones when they are not UTF-8), and
    // every escape as a Latin-1 byte (a client that escaped its windows-1252 password).
    const forms = [
      text,
      decodeQueryComponent(spaced),
      spaced.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    ];
    return credential.some((secret) => forms.some((form) => form.includes(secret)));
  };
}

/** Passwords this short are not looked for in a query: they would redact ordinary values. */
const MIN_SECRET_LENGTH = 4;

/**
 * The last header read and what it held: a client sends the same header with every request,
 * and decoding it is most of the redaction's cost (about 0.6 µs a request).
 */
let lastHeader: { authorization: string | undefined; credential: string[] } = { authorization: undefined, credential: [] };

/** The password and the token of a Basic Authorization header (none without one). */
function basicCredential(authorization: string | undefined): string[] {
  if (authorization === lastHeader.authorization) return lastHeader.credential;
  const credentials = basicCredentials(authorization);
  const credential = credentials ? [credentials.token, credentials.password].filter((secret) => secret.length >= MIN_SECRET_LENGTH) : [];
  lastHeader = { authorization, credential };
  return credential;
}

/**
 * Writes the authenticated request to its account's request log once its response is done
 * (or cut short): time of arrival, request id, method, path and query, service, status, the
 * weight counted (res.locals.weight), duration, bytes sent on the connection for this
 * response (headers and body, after compression) and the client's address (read by the caller
 * before the credentials were checked, while the socket still has it). Never a header; a
 * request id holding the credential is replaced. A client that left before the answer began
 * has status 499.
 */
export function logAccountRequest(
  req: Request,
  res: Response,
  entry: { accountId: number; service: string; address: string | undefined },
  log: RequestLogWriter,
): void {
  const { accountId, service, address } = entry;
  const socket = req.socket;
  const bytesBefore = socket.bytesWritten;
  const time = Date.now() - (performance.now() - req.startedAt);
  whenResponseDone(res, () => {
    const holdsCredential = credentialFinder(req.headers.authorization);
    log.record({
      accountId,
      time,
      requestId: holdsCredential(req.id) ? REDACTED : req.id,
      method: req.method,
      path: loggedPath(req.originalUrl, holdsCredential),
      service,
      status: res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST,
      weight: (res.locals as { weight?: number }).weight ?? 0,
      durationMs: performance.now() - req.startedAt,
      bytesSent: socket.bytesWritten - bytesBefore,
      clientAddress: address,
    });
  });
}

/** The status logged for a request whose client left before it was answered (nginx's 499): nothing was sent. */
const CLIENT_CLOSED_REQUEST = 499;
