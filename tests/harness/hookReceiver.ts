import http from 'node:http';
import { Webhook } from 'standardwebhooks';

/**
 * A real HTTP receiver for hook deliveries on a free loopback port. Every request is verified
 * with the `standardwebhooks` package against the secret registered for its path; the test
 * decides per path how to answer (status, delay, connection reset, no answer at all).
 */
export interface ReceivedDelivery {
  path: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The parsed JSON body (undefined for a form body). */
  json: unknown;
  verified: boolean;
  verifyError?: string;
  receivedAt: number;
  /** When the answer went out, or the sender gave up on a hanging request (Date.now()). */
  answeredAt?: number;
}

export type Behaviour = { status?: number; delayMs?: number; reset?: boolean; hang?: boolean; body?: string };

export interface HookReceiver {
  url: string;
  port: number;
  received: ReceivedDelivery[];
  /** Registers the secret deliveries to `path` are signed with. */
  secret(path: string, secret: string): void;
  /** How `path` answers; a function is asked per request (n = the path's request number, from 1). */
  behave(path: string, behaviour: Behaviour | ((n: number, req: ReceivedDelivery) => Behaviour)): void;
  /** Deliveries to a path (verified or not). */
  at(path: string): ReceivedDelivery[];
  /** Resolves once `count` deliveries reached `path` (or rejects after timeoutMs). */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  /** Most requests in flight at once for one webhook-id. */
  maxConcurrentPerId(): number;
  close(): Promise<void>;
}

export async function startHookReceiver(): Promise<HookReceiver> {
  const secrets = new Map<string, string>();
  const behaviours = new Map<string, Behaviour | ((n: number, req: ReceivedDelivery) => Behaviour)>();
  const counts = new Map<string, number>();
  const received: ReceivedDelivery[] = [];
  const inFlight = new Map<string, number>();
  let maxPerId = 0;
  const waiters: (() => void)[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const body = Buffer.concat(chunks).toString('utf8');
      const secret = secrets.get(path);
      let verified = false;
      let verifyError: string | undefined;
      if (secret === undefined) verifyError = 'no secret registered for the path';
      else {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>, { jsonParse: false });
          verified = true;
        } catch (err) {
          verifyError = (err as Error).message;
        }
      }
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const delivery: ReceivedDelivery = {
        path,
        method: req.method ?? '',
        headers: req.headers,
        body,
        json,
        verified,
        ...(verifyError ? { verifyError } : {}),
        receivedAt: Date.now(),
      };
      const id = String(req.headers['webhook-id'] ?? '');
      const now = (inFlight.get(id) ?? 0) + 1;
      inFlight.set(id, now);
      maxPerId = Math.max(maxPerId, now);
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const rule = behaviours.get(path);
      const b: Behaviour = typeof rule === 'function' ? rule(n, delivery) : (rule ?? {});
      const done = () => {
        delivery.answeredAt = Date.now();
        inFlight.set(id, (inFlight.get(id) ?? 1) - 1);
        received.push(delivery);
        for (const w of waiters.splice(0)) w();
      };
      const answer = () => {
        if (b.reset) {
          req.socket.destroy();
          done();
          return;
        }
        if (b.hang) {
          // Never answers; the sender's deadline has to end it.
          res.on('close', done);
          return;
        }
        res.writeHead(b.status ?? 200, { 'content-type': 'text/plain' });
        res.end(b.body ?? 'ok');
        done();
      };
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;

  const at = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    secret: (path, secret) => void secrets.set(path, secret),
    behave: (path, behaviour) => void behaviours.set(path, behaviour),
    at,
    async waitFor(path, count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (at(path).length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver: ${at(path).length} of ${count} deliveries reached ${path} in time`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(left, 200));
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return at(path);
    },
    maxConcurrentPerId: () => maxPerId,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
