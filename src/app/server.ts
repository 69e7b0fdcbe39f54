import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Settings } from '../config/settings';
import { HttpProblem } from '../http/problem';
import { startRequestDeadline } from '../http/requestDeadline';
import { addAcceptHandles } from './acceptHandles';

export interface RunningServer {
  server: http.Server;
  url: string;
  /** Handles the listening socket is accepted through (ACCEPT_HANDLES, or 1 and why not). */
  accepting: { handles: number; reason?: string };
  /** Stops accepting, lets in-flight responses finish up to the grace deadline, then cuts the rest. */
  close(): Promise<void>;
}

/**
 * Node's server timeouts from the settings (docs/operations.md, "Limits"). headersTimeout covers
 * RECEIVING a request head: a head that trickles in is answered 408 and its socket closed, so a
 * client cannot hold sockets open by sending slowly. The whole-request limit (REQUEST_TIMEOUT_MS)
 * is kept per request by `startRequestDeadline` instead of Node's requestTimeout (off here):
 * Node's is one value for the whole server and would cut a bulk upload that is still flowing
 * (docs/decisions.md, "Overload and timeouts"). Neither covers sending the response: a long download
 * runs for as long as the client keeps reading (a client that stops reading is cut by
 * EXPORT_STALL_TIMEOUT_MS instead). Node checks the head deadline every
 * connectionsCheckingInterval (30 s by default), so that interval is made short enough for the
 * timeout to mean what it says.
 */
export function serverTimeouts(
  settings: Pick<Settings, 'HEADERS_TIMEOUT_MS' | 'REQUEST_TIMEOUT_MS' | 'KEEP_ALIVE_TIMEOUT_MS'>,
): http.ServerOptions {
  const shortest = Math.min(settings.HEADERS_TIMEOUT_MS, settings.REQUEST_TIMEOUT_MS);
  return {
    headersTimeout: settings.HEADERS_TIMEOUT_MS,
    requestTimeout: 0,
    keepAliveTimeout: settings.KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(30000, Math.floor(shortest / 4))),
  };
}

/**
 * Requests Node's HTTP parser refuses (a control character or a raw non-ASCII byte in the
 * request line or a header, a head over the size limit, a request that did not arrive in time)
 * never reach Express. They are answered as problem documents all the same, like every other
 * 4xx, and the socket is closed (Node's own answer is a bare status line).
 */
export function answerUnparsableRequest(err: Error & { code?: string }, socket: Duplex): void {
  // As Node's own handler: answer only when nothing of a response went out yet, then destroy
  // the socket (a half-close would leave it open until the client closes its side).
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
    const problem =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new HttpProblem('invalid_parameter', 'the request line and headers are over the size limit', undefined, {}, [
            431,
            'Request header fields too large',
          ])
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new HttpProblem('invalid_body', 'the request did not arrive in time', undefined, {}, [408, 'Request timeout'])
          : new HttpProblem(
              'invalid_parameter',
              'the request line or a header is not valid HTTP (a control character, or a byte outside ASCII where none may be)',
            );
    const body = JSON.stringify(problem.toJSON());
    socket.write(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * An `Expect` other than 100-continue: Node would answer a bare 417 and never pass the request
 * on; it gets the same answer as a problem document.
 */
export function refuseExpectation(req: http.IncomingMessage, res: http.ServerResponse): void {
  const problem = new HttpProblem(
    'invalid_parameter',
    'Expect: only 100-continue is supported',
    [{ parameter: 'Expect', message: 'only 100-continue is supported' }],
    {},
    [417, 'Expectation failed'],
  );
  res.writeHead(417, { 'Content-Type': 'application/problem+json', Connection: 'close' });
  res.end(JSON.stringify(problem.toJSON(req.url)));
}

export async function listen(app: Express, settings: Settings): Promise<RunningServer> {
  const tls = settings.TLS_CERT_FILE && settings.TLS_KEY_FILE;
  const options = serverTimeouts(settings);
  const timedOut = Object.assign(new Error('the request did not arrive in time'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    startRequestDeadline(req, settings.REQUEST_TIMEOUT_MS, (socket) => answerUnparsableRequest(timedOut, socket));
    app(req, res);
  };
  const server: http.Server = tls
    ? https.createServer(
        { ...options, cert: fs.readFileSync(settings.TLS_CERT_FILE!), key: fs.readFileSync(settings.TLS_KEY_FILE!) },
        handler,
      )
    : http.createServer(options, handler);
  server.on('clientError', answerUnparsableRequest);
  server.on('checkExpectation', refuseExpectation);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.PORT, settings.HOST, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  const host = settings.HOST.includes(':') ? `[${settings.HOST}]` : settings.HOST;
  const url = `${tls ? 'https' : 'http'}://${host}:${port}`;
  const handles = await addAcceptHandles(server, settings.ACCEPT_HANDLES);

  const close = () =>
    new Promise<void>((resolve) => {
      const deadline = setTimeout(() => server.closeAllConnections(), settings.SHUTDOWN_GRACE_MS);
      deadline.unref();
      // Each handle counts the connections it accepted: closed when its own have ended.
      void Promise.all([new Promise<void>((closed) => server.close(() => closed())), handles.close()]).then(() => {
        clearTimeout(deadline);
        resolve();
      });
      // Idle keep-alive sockets would otherwise hold the close until they time out.
      server.closeIdleConnections();
    });
  return { server, url, accepting: { handles: 1 + handles.extra.length, reason: handles.reason }, close };
}
