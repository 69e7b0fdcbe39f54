import net from 'node:net';

/**
 * One HTTP/1.1 exchange over a bare socket, byte for byte as given. Node's own client refuses
 * to send what a hostile client would (control characters in a header, a path with raw
 * non-ASCII bytes), so the fuzz suite writes the request itself. Every request asks for
 * `Connection: close`, so the response ends where the socket does.
 */
export interface RawRequest {
  method: string;
  /** Path with query, already percent-encoded (or deliberately not). Latin-1: one char = one byte. */
  target: string;
  /** Header values in Latin-1 (one char = one byte), in order; repeated names allowed. */
  headers: [string, string][];
  /** Body bytes. */
  body?: Buffer;
}

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

export class RawHttpTimeout extends Error {}

export function rawRequestBytes(req: RawRequest, host: string): Buffer {
  const lines = [`${req.method} ${req.target} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, value] of req.headers) lines.push(`${name}: ${value}`);
  if (req.body !== undefined) lines.push(`Content-Length: ${req.body.length}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), req.body ?? Buffer.alloc(0)]);
}

/** Sends one request to 127.0.0.1:port; rejects with RawHttpTimeout when no full answer came within timeoutMs. */
export function rawHttp(port: number, req: RawRequest, timeoutMs: number): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (error: Error | undefined, response?: RawResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(response!);
    };
    const timer = setTimeout(() => finish(new RawHttpTimeout(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    // Not end(): a client that half-closes its socket has, to Node's server, gone away (the request is aborted).
    socket.on('connect', () => socket.write(rawRequestBytes(req, `127.0.0.1:${port}`)));
    socket.on('data', (c) => chunks.push(c));
    // A server that answers before reading the whole body may reset the socket: what came is the answer ('close' follows).
    socket.on('error', (e) => {
      if (chunks.length === 0) finish(e);
    });
    socket.on('close', () => {
      try {
        finish(undefined, parseResponse(Buffer.concat(chunks)));
      } catch (e) {
        finish(e as Error);
      }
    });
  });
}

function parseResponse(raw: Buffer): RawResponse {
  // Interim answers (100 Continue to `Expect: 100-continue`) come before the final one.
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 16).toString('latin1'))) {
    const interimEnd = raw.indexOf('\r\n\r\n');
    if (interimEnd < 0) break;
    raw = raw.subarray(interimEnd + 4);
  }
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`incomplete response head (${raw.length} bytes): ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  if (!Number.isInteger(status)) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let body = raw.subarray(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body);
  else if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']));
  return { status, headers, body };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
