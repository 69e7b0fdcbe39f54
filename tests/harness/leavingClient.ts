import net from 'node:net';
import request from 'supertest';
import type { TestApp } from './testApp';
import { until } from './until';

/** Password checks of `t` that passed so far (lcm_password_checks_total). */
async function passedPasswordChecks(t: TestApp): Promise<number> {
  const metrics = (await request(t.app).get('/api/metrics')).text;
  return Number(/lcm_password_checks_total\{outcome="passed"\} (\d+)/.exec(metrics)?.[1] ?? 0);
}

/**
 * Sends `head` (a whole request head) on a new connection to `t` listening on `port`, with its
 * credentials no longer in `t`'s cache, and closes the connection as soon as the head is
 * written. Resolves once the server has checked the password: by then the client had left, and
 * the request went on after authentication (to its admission, its stream) on a closed response.
 */
export async function leaveDuringPasswordCheck(t: TestApp, port: number, head: string): Promise<void> {
  const before = await passedPasswordChecks(t);
  t.composed.app.credentials.clear();
  await new Promise<void>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head, () => socket.destroy()));
    socket.on('close', () => resolve());
  });
  await until('the password check of a client that left', async () => (await passedPasswordChecks(t)) > before, {
    timeoutMs: 10_000,
    intervalMs: 25,
  });
}
