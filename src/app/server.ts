import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Settings } from '../config/settings';
import { HttpProblem } from '../http/problem';
import { startRequestDeadline } from '../http/requestDeadline';
import { whenResponseDone } from '../http/responseDone';

export interface RunningServer {
  /** The first of the listening servers (they share the port and the handler). */
  server: http.Server;
  url: string;
  port: number;
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
function serverTimeouts(
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
 * 4xx, and the socket is closed (Node's own answer is a bare status line). `responding` tells
 * whether a response is already under way on the socket (a pipelined request's): then nothing
 * more may be written, as in Node's own handler.
 */
function answerUnparsableRequest(err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex, responding: boolean): void {
  if (err.code !== 'ECONNRESET' && socket.writable && !responding) {
    const problem =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? requestLineOverflowed(err.rawPacket)
          ? new HttpProblem(
              'invalid_parameter',
              'the request line (the path and query) is over the size limit; send long lists comma-separated or in fewer requests',
              undefined,
              {},
              [414, 'URI too long'],
            )
          : new HttpProblem('invalid_parameter', 'the request line and headers are over the size limit', undefined, {}, [
              431,
              'Request header fields too large',
            ])
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new HttpProblem('invalid_body', 'the request did not arrive in time', undefined, {}, [408, 'Request timeout'])
          : new HttpProblem(
              'invalid_parameter',
              'the request line or a header is not valid HTTP (a control character, or a byte outside ASCII where none may be)',
            );
    writeProblemAndClose(socket, problem);
    return;
  }
  socket.destroy();
}

/**
 * Whether a head over the size limit (Node's `http.maxHeaderSize`) is so because of its request
 * line alone: in the bytes Node read (the error's documented `rawPacket`) the first line end
 * comes after the limit, or none has come yet. Such a request is a 414 (a URI too long), not a 431.
 */
function requestLineOverflowed(rawPacket: Buffer | undefined): boolean {
  if (rawPacket === undefined) return false;
  const lineEnd = rawPacket.indexOf('\n');
  return lineEnd < 0 || lineEnd > http.maxHeaderSize;
}

/** A problem document written straight to the socket (no response object exists), then the socket closed. */
function writeProblemAndClose(socket: Duplex, problem: HttpProblem, instance?: string): void {
  const body = JSON.stringify(problem.toJSON(instance));
  const extra = Object.entries(problem.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
  socket.once('finish', () => socket.destroy());
}

/**
 * CONNECT asks for a tunnel, which an API does not give: Node hands such a request to a
 * 'connect' listener or, without one, closes the socket with no answer. It gets a 405 problem
 * document (docs/decisions.md, Wire conventions): the method is what is refused, whatever the
 * target names.
 */
function refuseConnect(req: http.IncomingMessage, socket: Duplex): void {
  const problem = new HttpProblem(
    'invalid_parameter',
    'CONNECT is not served: this server is an API, not a proxy',
    [{ parameter: 'method', message: 'CONNECT is not served; the API uses GET, HEAD, POST, PUT, PATCH and DELETE' }],
    { Allow: 'GET, HEAD, POST, PUT, PATCH, DELETE' },
    [405, 'Method not allowed'],
  );
  writeProblemAndClose(socket, problem, req.url);
}

/** The response whose head went out on each socket and that has not finished: Node keeps this privately. */
class ResponsesInFlight {
  private readonly bySocket = new WeakMap<Duplex, http.ServerResponse>();
  /** One function for every response: it finds the socket through the response's request. */
  private readonly forget = (res: http.ServerResponse): void => {
    const socket = res.req.socket;
    if (this.bySocket.get(socket) === res) this.bySocket.delete(socket);
  };

  track(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.bySocket.set(req.socket, res);
    whenResponseDone(res, this.forget);
  }

  /** True when a response on `socket` has sent its head and not finished. */
  responding(socket: Duplex): boolean {
    const res = this.bySocket.get(socket);
    return res !== undefined && res.headersSent && !res.writableFinished;
  }
}

/**
 * An `Expect` other than 100-continue: Node would answer a bare 417 and never pass the request
 * on; it gets the same answer as a problem document.
 */
function refuseExpectation(req: http.IncomingMessage, res: http.ServerResponse): void {
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

export interface ListenOptions {
  /**
   * Listening sockets of this process on the port, each a server of its own bound with
   * SO_REUSEPORT (Linux): the kernel hands each new connection to one socket of every process's
   * sockets on the port, and a turn of the event loop accepts one connection per socket, so a
   * burst of new connections is taken several at a time while exports keep turns long. 1 (or a
   * platform without reusePort): one socket, shared with the other workers through node:cluster.
   */
  sockets?: number;
}

/** Whether this platform lets several sockets listen on one port, each with its own accept queue. */
const REUSE_PORT_SUPPORTED = process.platform === 'linux';

export async function listen(app: Express, settings: Settings, options: ListenOptions = {}): Promise<RunningServer> {
  const tls = settings.TLS_CERT_FILE && settings.TLS_KEY_FILE;
  const serverOptions = serverTimeouts(settings);
  const inFlight = new ResponsesInFlight();
  const timedOut = Object.assign(new Error('the request did not arrive in time'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight.track(req, res);
    startRequestDeadline(req, settings.REQUEST_TIMEOUT_MS, (socket) =>
      answerUnparsableRequest(timedOut, socket, inFlight.responding(socket)),
    );
    app(req, res);
  };
  const createServer = (): http.Server => {
    const server: http.Server = tls
      ? https.createServer(
          { ...serverOptions, cert: fs.readFileSync(settings.TLS_CERT_FILE!), key: fs.readFileSync(settings.TLS_KEY_FILE!) },
          handler,
        )
      : http.createServer(serverOptions, handler);
    server.on('clientError', (err: Error & { code?: string }, socket: Duplex) =>
      answerUnparsableRequest(err, socket, inFlight.responding(socket)),
    );
    // 100 Continue is sent once the request passed its checks, before its body is read (src/http/expectContinue.ts).
    server.on('checkContinue', handler);
    server.on('checkExpectation', refuseExpectation);
    server.on('connect', refuseConnect);
    return server;
  };
  const listenOn = (server: http.Server, port: number, reusePort: boolean) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // exclusive: in a cluster worker, a socket of this process's own rather than the primary's shared one.
      server.listen({ port, host: settings.HOST, reusePort, exclusive: reusePort }, () => {
        server.off('error', reject);
        resolve();
      });
    });

  const reusePort = (options.sockets ?? 1) > 1 && REUSE_PORT_SUPPORTED;
  const first = createServer();
  await listenOn(first, settings.PORT, reusePort);
  const address = first.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  // The others on the port the first one got (PORT=0 picks a free one).
  const servers = [first];
  try {
    for (let i = 1; reusePort && i < (options.sockets ?? 1); i++) {
      const server = createServer();
      await listenOn(server, port, true);
      servers.push(server);
    }
  } catch (err) {
    for (const server of servers) server.close();
    throw err;
  }
  const host = settings.HOST.includes(':') ? `[${settings.HOST}]` : settings.HOST;
  const url = `${tls ? 'https' : 'http'}://${host}:${port}`;

  const closeOne = (server: http.Server) =>
    new Promise<void>((resolve) => {
      const deadline = setTimeout(() => server.closeAllConnections(), settings.SHUTDOWN_GRACE_MS);
      deadline.unref();
      server.close(() => {
        clearTimeout(deadline);
        resolve();
      });
      // Idle keep-alive sockets would otherwise hold the close until they time out.
      server.closeIdleConnections();
    });
  return { server: first, url, port, close: () => Promise.all(servers.map(closeOne)).then(() => undefined) };
}
