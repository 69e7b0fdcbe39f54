import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { addAcceptHandles, AcceptHandles } from '../../src/app/acceptHandles';
import { listen } from '../../src/app/server';
import { loadSettings } from '../../src/config/settings';

/**
 * The listening socket accepted through several handles (src/app/acceptHandles.ts): Node accepts
 * one connection per handle per turn of its event loop, so while turns are long a burst of new
 * connections waits in the kernel's queue. Real sockets, a real helper process.
 */

/** Burns the CPU for `ms`. */
const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/**
 * Long turns (each burns `turnMs` in its check phase), counted. A turn's accepts happen in its
 * poll phase, before that.
 */
function longTurns(turnMs: number) {
  const counter = { turn: 0, stop: () => (stopped = true) };
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    counter.turn++;
    busy(turnMs);
    setImmediate(tick);
  };
  setImmediate(tick);
  return counter;
}

async function server(handles: number): Promise<{ server: http.Server; port: number; accepting: AcceptHandles; close(): Promise<void> }> {
  const s = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const accepting = await addAcceptHandles(s, handles);
  const close = async () => {
    s.closeAllConnections();
    await Promise.all([new Promise<void>((r) => s.close(() => r())), accepting.close()]);
  };
  return { server: s, port: (s.address() as net.AddressInfo).port, accepting, close };
}

/** Opens `n` connections at once (they wait in the accept queue) and records the turn each is accepted in. */
async function burst(port: number, s: http.Server, n: number, turns: { turn: number }): Promise<Map<number, number>> {
  const perTurn = new Map<number, number>();
  let accepted = 0;
  const all = new Promise<void>((resolve) => {
    s.on('connection', () => {
      perTurn.set(turns.turn, (perTurn.get(turns.turn) ?? 0) + 1);
      if (++accepted === n) resolve();
    });
  });
  const sockets = Array.from({ length: n }, () => net.connect(port, '127.0.0.1'));
  await all;
  for (const c of sockets) c.destroy();
  return perTurn;
}

describe('accepting through several handles', () => {
  it('when a burst of connections waits while turns are long, then each turn accepts up to one per handle, where one handle accepts one', async () => {
    for (const [handles, expectMax] of [
      [1, 1],
      [4, 4],
    ] as const) {
      const srv = await server(handles);
      expect(srv.accepting.extra).toHaveLength(handles - 1);
      const turns = longTurns(5);
      const perTurn = await burst(srv.port, srv.server, 40, turns);
      turns.stop();
      await srv.close();
      const counts = [...perTurn.values()];
      expect(counts.reduce((a, b) => a + b, 0)).toBe(40);
      expect(Math.max(...counts)).toBeLessThanOrEqual(expectMax);
      // Several handles: the burst is taken several at a time (Node's one accept per turn per handle).
      if (handles > 1) expect(Math.max(...counts)).toBeGreaterThanOrEqual(2);
      else expect(perTurn.size).toBe(40);
    }
  });

  it('when connections come through the extra handles, then every request is answered and close waits for their responses', async () => {
    const app = express();
    let finished = 0;
    app.get('/slow', (_req, res) => {
      res.on('finish', () => finished++);
      setTimeout(() => res.send('done'), 300);
    });
    const settings = { ...loadSettings({}), PORT: 0, HOST: '127.0.0.1', ACCEPT_HANDLES: 4 };
    const running = await listen(app, settings);
    expect(running.accepting).toEqual({ handles: 4, reason: undefined });
    const port = (running.server.address() as net.AddressInfo).port;
    const byHandle: net.Server[] = [];
    // Before the HTTP server's own listener, which sets socket.server to itself: the handle that accepted it.
    running.server.prependListener('connection', (socket: net.Socket & { server?: net.Server }) => byHandle.push(socket.server!));
    const turns = longTurns(5);
    const answers = Array.from(
      { length: 12 },
      () =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          http
            .get(`${running.url}/slow`, { agent: false }, (res) => {
              let body = '';
              res.on('data', (c: Buffer) => (body += c.toString()));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            })
            .on('error', reject);
        }),
    );
    // Once all are accepted (in long turns: several by extra handles), the server closes while they are in flight.
    while (byHandle.length < 12) await new Promise((r) => setTimeout(r, 20));
    turns.stop();
    await running.close();
    // Closed only once every response had gone out, those of the extra handles' connections too.
    expect(finished).toBe(12);
    expect(await Promise.all(answers)).toEqual(Array(12).fill({ status: 200, body: 'done' }));
    expect(byHandle.some((h) => h !== running.server)).toBe(true);
    // Closed: nothing accepts any more, on any handle.
    await expect(
      new Promise((resolve, reject) => net.connect(port, '127.0.0.1').on('connect', resolve).on('error', reject)),
    ).rejects.toThrow(/ECONNREFUSED/);
  });

  it('when the helper does not answer in time, or the server is not on TCP, then it accepts through its own handle and says why', async () => {
    const s = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
    const late = await addAcceptHandles(s, 4, 1);
    expect(late.reason).toMatch(/did not answer within 1 ms/);
    const port = (s.address() as net.AddressInfo).port;
    const answer = await new Promise<string>((resolve, reject) =>
      http
        .get(`http://127.0.0.1:${port}/`, { agent: false }, (res) => res.on('data', (c: Buffer) => resolve(c.toString())))
        .on('error', reject),
    );
    expect(answer).toBe('ok');
    await Promise.all([new Promise<void>((r) => s.close(() => r())), late.close()]);

    const onPipe = http.createServer();
    const socketPath = path.join(os.tmpdir(), `accept-handles-${process.pid}.sock`);
    await new Promise<void>((resolve) => onPipe.listen(socketPath, () => resolve()));
    const pipe = await addAcceptHandles(onPipe, 4);
    expect(pipe).toMatchObject({ extra: [], reason: 'not a listening TCP server' });
    await new Promise<void>((r) => onPipe.close(() => r()));
  });

  it('when ACCEPT_HANDLES is 1, then the server listens through its own handle only', async () => {
    const running = await listen(express(), { ...loadSettings({}), PORT: 0, HOST: '127.0.0.1', ACCEPT_HANDLES: 1 });
    expect(running.accepting).toEqual({ handles: 1, reason: undefined });
    await running.close();
  });
});
