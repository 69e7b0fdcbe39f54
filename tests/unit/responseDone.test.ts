import http from 'node:http';
import net from 'node:net';
import { whenResponseDone } from '../../src/http/responseDone';

/** A server whose handler is `handle`, on a free loopback port, closed after `use`. */
async function withServer(handle: http.RequestListener, use: (port: number) => Promise<void>): Promise<void> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await use((server.address() as net.AddressInfo).port);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('whenResponseDone', () => {
  it('when a response finishes, then each callback runs once, in order, given the response, through one close listener', async () => {
    const calls: string[] = [];
    let listeners = -1;
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finished = resolve));
    await withServer(
      (_req, res) => {
        const before = res.listenerCount('close');
        whenResponseDone(res, (r) => calls.push(`first ${r === res} ${r.writableFinished}`));
        whenResponseDone(res, () => calls.push('second'));
        whenResponseDone(res, () => {
          calls.push('third');
          finished();
        });
        listeners = res.listenerCount('close') - before;
        res.end('ok');
      },
      async (port) => {
        const answer = await fetch(`http://127.0.0.1:${port}/`);
        expect(await answer.text()).toBe('ok');
        await done;
      },
    );
    expect(listeners).toBe(1);
    expect(calls).toEqual(['first true true', 'second', 'third']);
  });

  it('when the client leaves before the response ends, then the callbacks run with the response unfinished', async () => {
    let resolveDone: (finished: boolean) => void = () => undefined;
    const done = new Promise<boolean>((resolve) => (resolveDone = resolve));
    await withServer(
      (_req, res) => {
        whenResponseDone(res, (r) => resolveDone(r.writableFinished));
        res.write('partial');
      },
      async (port) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
        socket.once('data', () => socket.destroy());
        expect(await done).toBe(false);
      },
    );
  });

  it('when a callback is given after the response closed, then it runs at once', async () => {
    let resolveLate: (ran: boolean) => void = () => undefined;
    const late = new Promise<boolean>((resolve) => (resolveLate = resolve));
    await withServer(
      (_req, res) => {
        res.once('close', () =>
          setImmediate(() => {
            let ran = false;
            whenResponseDone(res, () => (ran = true));
            resolveLate(ran);
          }),
        );
      },
      async (port) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n', () => socket.destroy()));
        expect(await late).toBe(true);
      },
    );
  });

  it('when two responses go out on one keep-alive connection, then each runs only its own callbacks', async () => {
    const ran: string[] = [];
    await withServer(
      (req, res) => {
        whenResponseDone(res, () => ran.push(req.url ?? ''));
        res.end(req.url);
      },
      async (port) => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        for (const path of ['/a', '/b']) {
          await new Promise<void>((resolve) => http.get({ port, host: '127.0.0.1', path, agent }, (r) => r.resume().on('end', resolve)));
        }
        agent.destroy();
        await new Promise((r) => setImmediate(r));
      },
    );
    expect(ran).toEqual(['/a', '/b']);
  });
});
