import http from 'node:http';
import net from 'node:net';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { bulkImportRequest } from '../harness/bulkRequest';
import { listen, RunningServer } from '../../src/app/server';

/**
 * Request timeouts of a bulk upload, through the real server on a real socket
 * (docs/decisions.md, "Overload and timeouts"): a bulk body that keeps flowing is never cut for its
 * total duration (REQUEST_TIMEOUT_MS does not apply to it); one that stalls for
 * BULK_BODY_IDLE_TIMEOUT_MS is cut, its earlier rows stored and answered. Other routes keep
 * the whole-request limit.
 */

const { t, w } = useTestWorld({
  AUTH_CACHE_TTL_MS: '600000',
  HEADERS_TIMEOUT_MS: '1000',
  REQUEST_TIMEOUT_MS: '2000',
  BULK_BODY_IDLE_TIMEOUT_MS: '1500',
  BULK_BATCH_SIZE: '10',
});
let running: RunningServer;

beforeAll(async () => {
  running = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
}, 120_000);

afterAll(() => running.close());

const port = () => (running.server.address() as net.AddressInfo).port;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  text: string;
  /** The socket was closed by the server (or the answer ended). */
  elapsedMs: number;
}

/** Sends NDJSON lines in `parts`, waiting `pauseMs` before each part, and collects the answer. */
function pacedBulk(parts: string[][], pauseMs: number, stallAfter = false): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      bulkImportRequest(port(), w.campaigns.b2b, { Authorization: w.accounts.full.auth, 'Content-Type': 'application/x-ndjson' }),
    );
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, text, elapsedMs: Date.now() - started }));
      res.on('error', () => resolve({ status: res.statusCode!, text, elapsedMs: Date.now() - started }));
    });
    req.on('error', reject);
    req.flushHeaders();
    void (async () => {
      for (const part of parts) {
        await sleep(pauseMs);
        if (req.destroyed) return;
        req.write(part.join(''));
      }
      if (!stallAfter) req.end();
    })();
  });
}

function leadLines(tag: string, from: number, count: number): string[] {
  return Array.from(
    { length: count },
    (_, i) =>
      JSON.stringify({ Name: `Lead ${from + i}`, Telefon: `+45 12 ${String(from + i).padStart(6, '0')}`, Customer: `${tag}-${from + i}` }) +
      '\n',
  );
}

async function storedCount(tag: string): Promise<number> {
  const rows = await t
    .db('leads')
    .whereRaw(`data->>'Customer' like ?`, [`${tag}-%`])
    .count<{ n: string }[]>({ n: '*' });
  return Number(rows[0]!.n);
}

describe('bulk upload timeouts', () => {
  it('when a bulk body keeps flowing for longer than REQUEST_TIMEOUT_MS, then it completes with every row stored', async () => {
    const tag = uniq('PACE-');
    // 10 parts of 10 rows, 500 ms apart: about 5 s in all, never idle for 1.5 s.
    const parts = Array.from({ length: 10 }, (_, i) => leadLines(tag, i * 10 + 1, 10));
    const answer = await pacedBulk(parts, 500);
    expect(answer.elapsedMs).toBeGreaterThan(4000);
    expect(answer.status).toBe(200);
    const results = JSON.parse(answer.text) as { row: number; success: boolean }[];
    expect(results).toHaveLength(100);
    expect(results.every((r, i) => r.success && r.row === i + 1)).toBe(true);
    expect(await storedCount(tag)).toBe(100);
  }, 30_000);

  it('when a bulk body stalls after some rows, then it is cut after the idle time, the earlier rows stored and answered', async () => {
    const tag = uniq('STALL-');
    const answer = await pacedBulk([leadLines(tag, 1, 20), leadLines(tag, 21, 5)], 300, true);
    expect(answer.status).toBe(200);
    const elements = JSON.parse(answer.text) as (
      { row: number; success: boolean } | { status: number; code: string; rows: number; detail: string }
    )[];
    const last = elements.pop() as { status: number; code: string; rows: number; detail: string };
    expect(last).toMatchObject({ status: 408, code: 'invalid_body', rows: 25 });
    expect(last.detail).toContain('BULK_BODY_IDLE_TIMEOUT_MS');
    expect(elements).toHaveLength(25);
    expect(elements.every((r, i) => 'success' in r && r.success && r.row === i + 1)).toBe(true);
    expect(await storedCount(tag)).toBe(25);
    // Cut after the idle time (1.5 s after the last bytes), not at once and not never.
    expect(answer.elapsedMs).toBeGreaterThan(1500);
    expect(answer.elapsedMs).toBeLessThan(8000);
  }, 30_000);

  it('when clients leave in the middle of their bulk bodies, over and over, then no promise is left to reject unhandled (which ends a server)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const body = Buffer.from(leadLines(uniq('LEFT-'), 1, 3000).join(''));
      for (let i = 0; i < 60; i++) {
        await new Promise<void>((resolve) => {
          const socket = net.connect(port(), '127.0.0.1', () => {
            socket.write(
              `POST /api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)} HTTP/1.1\r\nHost: x\r\n` +
                `Authorization: ${w.accounts.full.auth}\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${body.length}\r\n\r\n`,
            );
            socket.write(body.subarray(0, ((i * 7919) % 97) * 700));
            setTimeout(() => {
              socket.destroy();
              resolve();
            }, i % 40);
          });
          socket.on('error', () => resolve());
        });
      }
      // The imports that were left finish their batches and end.
      await sleep(1500);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  }, 60_000);

  it('when a bulk body stalls before its first row, then the answer is a 408 problem', async () => {
    const answer = await pacedBulk([['{"Name": "half']], 100, true);
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.text)).toMatchObject({ status: 408, code: 'invalid_body' });
  }, 30_000);

  it('when a non-bulk body trickles in, then it is still cut at REQUEST_TIMEOUT_MS', async () => {
    const started = Date.now();
    const result = await new Promise<{ answer: string; closed: boolean }>((resolve) => {
      const socket = net.connect(port(), '127.0.0.1', () =>
        socket.write(
          `POST /api/leads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${w.accounts.full.auth}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Ca`,
        ),
      );
      let answer = '';
      // Keep sending a byte every 300 ms: never idle, but never complete.
      const drip = setInterval(() => socket.writable && socket.write(' '), 300);
      socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
      socket.on('error', () => undefined);
      const giveUp = setTimeout(() => socket.destroy(), 15_000);
      socket.once('close', () => {
        clearInterval(drip);
        clearTimeout(giveUp);
        resolve({ answer, closed: Date.now() - started < 15_000 });
      });
    });
    expect(result.closed).toBe(true);
    expect(result.answer.startsWith('HTTP/1.1 408')).toBe(true);
    expect(Date.now() - started).toBeLessThan(6000);
  }, 30_000);
});
