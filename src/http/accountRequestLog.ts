import type { Request, Response } from 'express';
import type { RequestLogWriter } from '../data/requestLog';
import { clientAddress } from './clientAddress';
import { whenResponseDone } from './responseDone';

/** Longer paths are cut: an entry stays small whatever a client sends. */
const MAX_PATH = 2000;

/** Query parameters whose values never reach the log, should a client put a credential there. */
const SECRET_PARAMETER = /pass|pwd|secret|token|api_?key|authorization/i;

/**
 * The path and query of a request as logged, cut at MAX_PATH: the values of credential-like
 * query parameters are replaced, and so is any value holding the request's own credential (its
 * password, or its Basic token) whatever the parameter is called.
 */
function loggedPath(url: string, authorization: string | undefined): string {
  const q = url.indexOf('?');
  let path = url;
  if (q >= 0) {
    const credential = basicCredential(authorization);
    const holdsCredential = (text: string): boolean => {
      const value = safeDecode(text.replace(/\+/g, ' '));
      return credential.some((secret) => value.includes(secret));
    };
    const query = url
      .slice(q + 1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        if (eq < 0) return holdsCredential(pair) ? '[redacted]' : pair;
        const name = pair.slice(0, eq);
        return SECRET_PARAMETER.test(safeDecode(name)) || holdsCredential(pair.slice(eq + 1)) ? `${name}=[redacted]` : pair;
      })
      .join('&');
    path = `${url.slice(0, q)}?${query}`;
  }
  return path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path;
}

/** Passwords this short are not looked for in a query: they would redact ordinary values. */
const MIN_SECRET_LENGTH = 4;

/** The password and the token of a Basic Authorization header (none without one). */
function basicCredential(authorization: string | undefined): string[] {
  const match = authorization === undefined ? null : /^\s*basic\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return [];
  const token = match[1]!;
  const decoded = Buffer.from(token, 'base64').toString('utf8');
  const password = decoded.slice(decoded.indexOf(':') + 1);
  return [token, password].filter((secret) => secret.length >= MIN_SECRET_LENGTH);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * Writes the authenticated request to its account's request log once its response is done
 * (or cut short): time of arrival, request id, method, path and query, service, status, the
 * weight counted (res.locals.weight), duration, bytes sent on the connection for this
 * response (headers and body, after compression) and the client's address. Never a header.
 */
export function logAccountRequest(req: Request, res: Response, accountId: number, service: string, log: RequestLogWriter): void {
  const socket = req.socket;
  const bytesBefore = socket.bytesWritten;
  const time = Date.now() - (performance.now() - req.startedAt);
  whenResponseDone(res, () => {
    log.record({
      accountId,
      time,
      requestId: req.id,
      method: req.method,
      path: loggedPath(req.originalUrl, req.headers.authorization),
      service,
      status: res.statusCode,
      weight: (res.locals as { weight?: number }).weight ?? 0,
      durationMs: performance.now() - req.startedAt,
      bytesSent: socket.bytesWritten - bytesBefore,
      clientAddress: clientAddress(req),
    });
  });
}
