import type { Request, Response } from 'express';
import type { RequestLogWriter } from '../data/requestLog';
import { clientAddress } from './clientAddress';
import { whenResponseDone } from './responseDone';

/** Longer paths are cut: an entry stays small whatever a client sends. */
const MAX_PATH = 2000;

/** Query parameters whose values never reach the log, should a client put a credential there. */
const SECRET_PARAMETER = /pass|pwd|secret|token|api_?key|authorization/i;

/** The path and query of a request as logged: credential-like query values replaced, cut at MAX_PATH. */
function loggedPath(url: string): string {
  const q = url.indexOf('?');
  let path = url;
  if (q >= 0 && SECRET_PARAMETER.test(url.slice(q + 1))) {
    const query = url
      .slice(q + 1)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq < 0 ? pair : pair.slice(0, eq);
        return eq >= 0 && SECRET_PARAMETER.test(safeDecode(name)) ? `${name}=[redacted]` : pair;
      })
      .join('&');
    path = `${url.slice(0, q)}?${query}`;
  }
  return path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path;
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
      path: loggedPath(req.originalUrl),
      service,
      status: res.statusCode,
      weight: (res.locals as { weight?: number }).weight ?? 0,
      durationMs: performance.now() - req.startedAt,
      bytesSent: socket.bytesWritten - bytesBefore,
      clientAddress: clientAddress(req),
    });
  });
}
