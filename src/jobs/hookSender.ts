import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { classifyAddress, isAllowListed, literalAddress, refusedAddressMessage } from '../domain/hookAddress';

/**
 * Sends one hook request the safe way: https only (unless allowed), the host's addresses checked
 * after DNS resolution and the socket connected to the checked address itself (no second lookup
 * a rebinding DNS server could answer differently), no redirects followed, a deadline on the
 * whole exchange, and at most RESPONSE_LIMIT bytes of the answer read for the log.
 */
const RESPONSE_LIMIT = 4096;

export interface SendRules {
  timeoutMs: number;
  allowHttp: boolean;
  allowedHosts: readonly string[];
}

export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

type SendOutcome = 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused';

export interface SendResult {
  outcome: SendOutcome;
  statusCode?: number;
  durationMs: number;
  error?: string;
  responseBody?: string;
}

class RefusedError extends Error {}

/** A DNS lookup that only hands out addresses hooks may reach. */
function checkedLookup(allowed: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const usable = allowed ? addresses : addresses.filter((a) => classifyAddress(a.address).allowed);
      if (usable.length === 0) {
        const first = addresses[0];
        const why = first
          ? refusedAddressMessage(hostname, first.address, classifyAddress(first.address).range)
          : `${hostname} has no address`;
        return callback(new RefusedError(`refused: ${why}`), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}

export class HookSender {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 64 });

  constructor(private readonly rules: SendRules) {}

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  async send(request: OutgoingRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { outcome: 'refused', durationMs: 0, error: 'refused: the URL is not valid' };
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.rules.allowHttp)) {
      return {
        outcome: 'refused',
        durationMs: 0,
        error: `refused: ${url.protocol} URLs are not allowed (https only; a server allows plain http with HOOKS_ALLOW_HTTP=true)`,
      };
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const allowListed = isAllowListed(host, this.rules.allowedHosts);
    const literal = literalAddress(host);
    if (literal !== undefined && !allowListed) {
      const verdict = classifyAddress(literal);
      if (!verdict.allowed) {
        return { outcome: 'refused', durationMs: 0, error: `refused: ${refusedAddressMessage(host, literal, verdict.range)}` };
      }
    }
    const secure = url.protocol === 'https:';
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(result);
      };
      const req = (secure ? https : http).request(url, {
        method: request.method,
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        agent: secure ? this.httpsAgent : this.httpAgent,
        lookup: checkedLookup(allowListed),
      });
      const deadline = setTimeout(() => {
        finish({ outcome: 'timeout', durationMs: elapsed(), error: `no complete answer within ${this.rules.timeoutMs} ms` });
        req.destroy();
      }, this.rules.timeoutMs);
      req.on('error', (err) => {
        if (err instanceof RefusedError) finish({ outcome: 'refused', durationMs: elapsed(), error: err.message });
        else
          finish({
            outcome: 'network_error',
            durationMs: elapsed(),
            error: `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}`,
          });
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          finish({
            outcome: ok ? 'delivered' : 'http_error',
            statusCode: status,
            durationMs: elapsed(),
            responseBody: Buffer.concat(chunks).subarray(0, RESPONSE_LIMIT).toString('utf8'),
            ...(ok
              ? {}
              : { error: status >= 300 && status < 400 ? `answered ${status} (redirects are not followed)` : `answered ${status}` }),
          });
        };
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_LIMIT) chunks.push(chunk);
          size += chunk.length;
          // Enough for the log: stop reading, and do not keep the connection.
          if (size >= RESPONSE_LIMIT) {
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', (err) =>
          finish({ outcome: 'network_error', statusCode: res.statusCode, durationMs: elapsed(), error: err.message }),
        );
      });
      req.end(request.body);
    });
  }
}
