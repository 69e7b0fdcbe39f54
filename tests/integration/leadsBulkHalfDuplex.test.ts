import net from 'node:net';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { listen, RunningServer } from '../../src/app/server';

/**
 * A bulk import from a client that sends its whole body before it reads any of the answer, as
 * Python's requests, Java's HttpURLConnection and .NET Framework's HttpWebRequest do
 * (docs/decisions.md, "Leads"): the server keeps reading and storing while the answer waits for
 * the client, so neither side waits on the other once the socket buffers are full.
 */

const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000' });
let running: RunningServer;

beforeAll(async () => {
  running = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
}, 120_000);

afterAll(() => running.close());

/** Rows enough that their answer (about 90 bytes each) is many times what loopback socket buffers hold. */
const ROWS = 200_000;

it('when a client writes a large body to its end before reading, then every row is stored and answered', async () => {
  const tag = uniq('half-');
  const lines: string[] = [];
  for (let n = 1; n <= ROWS; n++)
    lines.push(JSON.stringify({ Name: `L${n}`, Telefon: `+45 13 ${String(n).padStart(6, '0')}`, Customer: `${tag}-${n}` }));
  const body = Buffer.from(lines.join('\n') + '\n');
  const socket = net.connect((running.server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  const received: Buffer[] = [];
  try {
    socket.write(
      `POST /api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)} HTTP/1.1\r\nHost: x\r\nAuthorization: ${w.accounts.full.auth}\r\n` +
        `Content-Type: application/x-ndjson\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    // The whole body, in the chunks a client library writes, before a byte of the answer is read.
    for (let offset = 0; offset < body.length; offset += 64 * 1024) {
      await new Promise<void>((resolve, reject) =>
        socket.write(body.subarray(offset, offset + 64 * 1024), (err) => (err ? reject(err) : resolve())),
      );
    }
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.resume();
    await new Promise((resolve) => socket.once('end', resolve));
  } finally {
    socket.destroy();
  }
  const answer = Buffer.concat(received);
  const headEnd = answer.indexOf('\r\n\r\n');
  expect(answer.subarray(0, answer.indexOf('\r\n')).toString()).toBe('HTTP/1.1 200 OK');
  const text = dechunked(answer.subarray(headEnd + 4)).toString('utf8');
  const results = JSON.parse(text) as { row: number; success: boolean }[];
  expect(results).toHaveLength(ROWS);
  expect(results.every((r, i) => r.success && r.row === i + 1)).toBe(true);
  const stored = await t.db('leads').whereLike('external_key', `${tag}-%`).count<{ count: string }[]>({ count: '*' });
  expect(Number(stored[0]!.count)).toBe(ROWS);
}, 240_000);

/** A chunked body without its framing: each chunk is a hex size line, that many bytes and a CRLF; size 0 ends it. */
function dechunked(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; ;) {
    const lineEnd = body.indexOf('\r\n', at);
    const size = parseInt(body.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) return Buffer.concat(parts);
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
