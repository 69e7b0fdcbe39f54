import net from 'node:net';
import { useTestWorld } from '../harness/useTestWorld';
import { callsWindow, insertCalls } from '../harness/bulkData';
import { holdResponse } from '../harness/slowClient';
import { listen, RunningServer } from '../../src/app/server';

/**
 * The server's own timeouts (docs/operations.md, "Limits"): a request whose head or body
 * trickles in is cut after HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS, so slow senders cannot
 * hold sockets open; a long download is not cut by them as long as the client reads.
 */

const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000', HEADERS_TIMEOUT_MS: '400', REQUEST_TIMEOUT_MS: '800' });
let running: RunningServer;

beforeAll(async () => {
  await insertCalls(t, w, 6000);
  running = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
}, 120_000);

afterAll(() => running.close());

const port = () => (running.server.address() as net.AddressInfo).port;

/** Opens a socket, writes `data`, and reports what the server sent before closing it (or 'open' after `waitMs`). */
function sendAndWait(data: string, waitMs: number): Promise<{ closed: boolean; answer: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port(), '127.0.0.1', () => socket.write(data));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, answer });
    }, waitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, answer });
    });
  });
}

describe('server timeouts', () => {
  it('when fifty clients announce a body and send five bytes of it, then every socket is answered 408 and closed', async () => {
    const head =
      `POST /api/leads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${w.accounts.full.auth}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Ca';
    const results = await Promise.all(Array.from({ length: 50 }, () => sendAndWait(head, 15_000)));
    expect(results.filter((r) => !r.closed)).toEqual([]);
    expect(results.every((r) => r.answer.startsWith('HTTP/1.1 408'))).toBe(true);
  });

  it('when a chunked body stops after its first chunk, then the socket is answered 408 and closed', async () => {
    const head =
      `POST /api/leads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${w.accounts.full.auth}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"Ca\r\n';
    const result = await sendAndWait(head, 15_000);
    expect(result.closed).toBe(true);
    expect(result.answer.startsWith('HTTP/1.1 408')).toBe(true);
  });

  it('when a request head never ends, then the socket is closed', async () => {
    const result = await sendAndWait('GET /api/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 15_000);
    expect(result.closed).toBe(true);
    expect(result.answer.startsWith('HTTP/1.1 408')).toBe(true);
  });

  it('when a download takes far longer than the request timeout, then it still completes while the client reads', async () => {
    const held = await holdResponse(running.url, `/api/calls?${callsWindow(w)}&Include=campaign,user`, {
      Authorization: w.accounts.full.auth,
    });
    expect(held.status).toBe(200);
    // Hold the response unread for longer than REQUEST_TIMEOUT_MS, then read the rest.
    await new Promise((r) => setTimeout(r, 1500));
    held.resume();
    expect(await held.closed).toBe(true);
  });
});
