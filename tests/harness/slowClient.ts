import http from 'node:http';

/**
 * Raw HTTP clients for tests of what the server does while a client is slow or gone: a
 * request whose response is held unread (the server is then stopped by backpressure), and a
 * plain GET that reads to the end and says whether the body arrived complete.
 */
export interface HeldResponse {
  /** The response stream itself, paused. */
  res: http.IncomingMessage;
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Bytes read before the client stopped reading. */
  firstBytes: number;
  /** Settles when the connection is closed (by either side); true when the body ended properly. */
  closed: Promise<boolean>;
  /** Reads the rest, to the end. */
  resume(): void;
  /** Drops the connection. */
  destroy(): void;
}

/** Sends a GET and stops reading after the first chunk of the body (or at the headers of a body-less answer). */
export function holdResponse(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<HeldResponse> {
  return new Promise((resolve, reject) => {
    const req = http.get(baseUrl + path, { headers }, (res) => {
      let complete = false;
      const closed = new Promise<boolean>((done) => {
        res.once('end', () => (complete = true));
        res.once('close', () => done(complete && !res.aborted));
        res.once('error', () => undefined);
      });
      const held = (firstBytes: number): HeldResponse => ({
        res,
        status: res.statusCode ?? 0,
        headers: res.headers,
        firstBytes,
        closed,
        resume: () => {
          res.on('data', () => undefined);
          res.resume();
        },
        destroy: () => req.destroy(),
      });
      res.once('data', (chunk: Buffer) => {
        res.pause();
        resolve(held(chunk.length));
      });
      res.once('end', () => resolve(held(0)));
    });
    req.once('error', reject);
  });
}

export interface FullResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body ended as HTTP says it should (not cut). */
  complete: boolean;
}

/** A GET read to the end; a connection cut mid-body resolves with complete: false. */
export function getFully(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<FullResponse> {
  return new Promise((resolve, reject) => {
    const req = http.get(baseUrl + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      let complete = false;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => (complete = true));
      res.once('error', () => undefined);
      res.once('close', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: complete && !res.aborted }),
      );
    });
    req.once('error', reject);
  });
}

/**
 * Starts a GET, waits for its first bytes, stops reading for a moment (the server is then held
 * by backpressure, mid-stream) and cuts the connection: a client leaving in the middle of an export.
 */
export function abortMidStream(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers }, (res) => {
      res.once('data', (chunk: Buffer) => {
        res.pause();
        setTimeout(() => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, bytes: chunk.length });
        }, 20);
      });
      res.once('error', () => undefined);
    });
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.message !== 'socket hang up') reject(err);
    });
  });
}
