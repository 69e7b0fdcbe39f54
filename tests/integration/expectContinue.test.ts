import net from 'node:net';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { listen, RunningServer } from '../../src/app/server';

/**
 * `Expect: 100-continue` (sent by .NET Framework by default, and by curl for large bodies): the
 * server says 100 Continue only once the request passed its checks, so a refused request is
 * answered before its body is sent (src/http/expectContinue.ts).
 */
describe('Expect: 100-continue', () => {
  const { t, w } = useTestWorld();
  let server: RunningServer;

  beforeAll(async () => {
    server = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
  });
  afterAll(() => server?.close());

  /** A socket that has sent the head of an import with `Expect: 100-continue`, and what it receives. */
  async function importHead(auth: string, body: string) {
    const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    let arrived: () => void = () => undefined;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      arrived();
    });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined);
    socket.write(
      `POST /api/leads HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    /** Waits until what was received holds `text` (or the socket closed). */
    const until = async (text: string) => {
      while (!received.includes(text) && !socket.closed) await Promise.race([new Promise<void>((resolve) => (arrived = resolve)), closed]);
      return received;
    };
    return { socket, until, closed, received: () => received };
  }

  it('when the credentials are wrong, then the 401 comes without 100 Continue and before any byte of the body, and the connection closes', async () => {
    const body = JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Never sent' } });
    const wrong = `Basic ${Buffer.from(`${w.accounts.full.username}:not-the-password`).toString('base64')}`;
    const head = await importHead(wrong, body);
    const answer = await head.until('\r\n\r\n');
    expect(answer.startsWith('HTTP/1.1 401 ')).toBe(true);
    expect(answer).not.toContain('100 Continue');
    await head.closed;
  });

  it('when the body is declared larger than the body limit, then the 413 comes without 100 Continue', async () => {
    const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /api/leads HTTP/1.1\r\nHost: x\r\nAuthorization: ${w.accounts.full.auth}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${5 * 1024 * 1024}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await new Promise((resolve) => socket.once('close', resolve));
    expect(received.startsWith('HTTP/1.1 413 ')).toBe(true);
  });

  it('when the request passes its checks, then 100 Continue comes first, and the body sent after it is imported', async () => {
    const body = JSON.stringify({
      CampaignCode: w.campaigns.b2b,
      Data: { Name: 'Sent after 100', Telefon: '+45 12 34 56 78', Customer: uniq('C-') },
    });
    const head = await importHead(w.accounts.full.auth, body);
    expect(await head.until('\r\n\r\n')).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    head.socket.write(body);
    const answer = await head.until('"success"');
    head.socket.destroy();
    expect(answer).toMatch(/HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('"success":true');
  });
});
