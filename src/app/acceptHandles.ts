import { spawn } from 'node:child_process';
import net from 'node:net';

/**
 * More than one new connection accepted per turn of the event loop.
 *
 * Why: Node's event loop (libuv 1.45 and later, so Node 20) accepts at most one connection per
 * listening handle per turn. While bulk work makes turns long (ten exports rendering beside
 * their COPYs on two cores: 10-15 ms a turn), a burst of 50 new connections waited its turn in
 * the kernel's queue for most of a second, health checks and small requests among them.
 *
 * How: the listening socket gets more descriptors, each watched by a net.Server of its own whose
 * connections go to the HTTP server; every handle accepts one connection per turn. Node has no
 * call that duplicates a descriptor, but passing a handle over an IPC channel does (the kernel
 * installs a new descriptor of the same socket in the receiver). A short-lived helper process
 * receives the raw listening handle and sends it straight back, closing its own copy: it never
 * listens, so it never accepts a connection. Node 22.12+ has `reusePort` for the same end.
 */

/** The helper: echoes each handle back and closes its own copy once sent; exits when the parent lets go. */
const ECHO = `process.on('message', (m, h) => process.send(m, h, () => h.close()));
process.on('disconnect', () => process.exit(0));`;

export interface AcceptHandles {
  /** The extra listening servers (the HTTP server's own handle not counted). */
  readonly extra: net.Server[];
  /** Stops accepting on the extra handles; resolves when the connections each accepted have ended. */
  close(): Promise<void>;
}

/**
 * Makes `server` (listening on TCP) accept through `count` handles in all: `count - 1` extra
 * ones whose connections are handed to it as its own ('connection' events: timeouts, keep-alive
 * and shutdown treat them alike). With `count` 1, or when the handles cannot be had (no raw
 * handle, the helper fails or does not answer within `timeoutMs`), nothing is added and `reason`
 * says why.
 */
export async function addAcceptHandles(
  server: net.Server,
  count: number,
  timeoutMs = 10_000,
): Promise<AcceptHandles & { reason?: string }> {
  const extra: net.Server[] = [];
  const close = () => Promise.all(extra.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined);
  if (count <= 1) return { extra, close };
  // The raw TCP handle: sent as such, the helper gets a descriptor without listening on it.
  const handle = (server as unknown as { _handle?: object | null })._handle;
  const address = server.address();
  if (!handle || typeof address !== 'object' || address === null) return { extra, close, reason: 'not a listening TCP server' };

  const child = spawn(process.execPath, ['-e', ECHO], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: {} });
  let settled = false;
  const reason = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => done(`the helper process did not answer within ${timeoutMs} ms`), timeoutMs);
    const done = (why?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.connected) child.disconnect();
      if (why !== undefined) child.kill();
      resolve(why);
    };
    child.once('error', (err) => done(`the helper process failed: ${err.message}`));
    child.once('exit', (code) => done(`the helper process exited (${code}) early`));
    child.on('message', (_m, copy) => {
      if (!copy) return;
      if (settled) {
        // Too late (given up on the helper): this copy is not used.
        (copy as unknown as { close(): void }).close();
        return;
      }
      const s = net.createServer();
      s.on('connection', (socket) => server.emit('connection', socket));
      // Once running, as on the server's own handle (an accept that fails is its 'error').
      s.on('error', (err) => (settled ? server.emit('error', err) : done(`a copy of the handle could not listen: ${err.message}`)));
      s.listen(copy, () => {
        extra.push(s);
        if (extra.length === count - 1) done();
      });
    });
    for (let i = 1; i < count; i++) child.send('handle', handle as net.Server);
  });
  return { extra, close, reason };
}
