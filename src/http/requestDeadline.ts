import type http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The whole-request time limit (REQUEST_TIMEOUT_MS), kept per request instead of by Node's
 * server.requestTimeout, which is one value for the whole server and would cut a long bulk
 * upload that is still flowing (docs/decisions.md, "Overload and timeouts"). A request whose body
 * has not fully arrived by the deadline is answered 408 (when nothing of its response went out
 * yet) and its socket closed, as Node's own requestTimeout does. A route that reads its body
 * under an idle limit of its own (POST /leads/bulk, BULK_BODY_IDLE_TIMEOUT_MS) lifts the
 * deadline with `liftRequestDeadline`.
 */

const DEADLINE = Symbol('requestDeadline');

type WithDeadline = http.IncomingMessage & { [DEADLINE]?: NodeJS.Timeout };

/**
 * Whether a body follows the head: a request with neither Transfer-Encoding nor a Content-Length
 * above 0 has none (RFC 9112, 6.3), so its head, which headersTimeout covers, was all of it.
 */
function bodyFollows(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Starts the deadline of `req`; `onExpired` answers and closes its socket. A request without a
 * body needs none: Node reports it complete only after the request handler has run.
 */
export function startRequestDeadline(req: http.IncomingMessage, ms: number, onExpired: (socket: Duplex) => void): void {
  if (req.complete || !bodyFollows(req)) return;
  const timer = setTimeout(() => {
    if (!req.complete) onExpired(req.socket);
  }, ms);
  timer.unref();
  (req as WithDeadline)[DEADLINE] = timer;
  // 'end' only fires once the body was read; a request whose body is never read (an early
  // answer) is released when its response ends or its socket closes.
  const clear = () => clearTimeout(timer);
  req.once('end', clear);
  req.once('close', clear);
}

/** The request's body is read under a limit of the route's own: the whole-request deadline no longer applies. */
export function liftRequestDeadline(req: http.IncomingMessage): void {
  clearTimeout((req as WithDeadline)[DEADLINE]);
}
