import http from 'node:http';
import express from 'express';
import { listen } from '../../src/app/server';
import { loadSettings } from '../../src/config/settings';

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('graceful shutdown', () => {
  const app = express();
  // A slow stream standing in for a long export: 10 chunks, 50 ms apart.
  app.get('/slow', (_req, res) => {
    let n = 0;
    res.write('start\n');
    const timer = setInterval(() => {
      n += 1;
      if (n === 10) {
        clearInterval(timer);
        res.end('end\n');
      } else res.write(`${n}\n`);
    }, 50);
  });

  // A stream that never ends by itself: only the shutdown deadline can end it.
  app.get('/endless', (_req, res) => {
    res.write('start\n');
    const timer = setInterval(() => res.write('more\n'), 50);
    res.once('close', () => clearInterval(timer));
  });

  it('when the server closes during a stream, then the stream finishes and new connections are refused', async () => {
    const running = await listen(app, loadSettings({ PORT: '0', SHUTDOWN_GRACE_MS: '5000' }));
    const inFlight = get(`${running.url}/slow`);
    await new Promise((r) => setTimeout(r, 100));
    const closed = running.close();
    await expect(get(`${running.url}/slow`)).rejects.toThrow(/ECONNREFUSED/);
    const res = await inFlight;
    expect(res.body.endsWith('end\n')).toBe(true);
    await closed;
  });

  it('when a stream outlasts the grace period, then it is cut at the deadline', async () => {
    const running = await listen(app, loadSettings({ PORT: '0', SHUTDOWN_GRACE_MS: '120' }));
    const inFlight = get(`${running.url}/endless`).catch((err: Error) => ({ status: 0, body: err.message }));
    await new Promise((r) => setTimeout(r, 60));
    // The stream never ends by itself, so close() settling at all means the deadline cut it.
    await running.close();
    const res = await inFlight;
    expect(res.body).not.toMatch(/^start\n(more\n)*$/);
  });
});
