import net from 'node:net';

/**
 * A TCP proxy on a free loopback port in front of another port, standing in for a separate
 * server (a read replica) in tests: it counts the bytes that pass, and stop() refuses new
 * connections and cuts the open ones (the server went away) until start().
 */
export interface TcpProxy {
  port: number;
  /** Bytes sent back to clients since the proxy was made. */
  bytesToClients(): number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let bytes = 0;
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  let port = 0;

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        sockets.add(client);
        sockets.add(upstream);
        upstream.on('data', (chunk: Buffer) => (bytes += chunk.length));
        client.pipe(upstream);
        upstream.pipe(client);
        const end = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await start();
  return {
    get port() {
      return port;
    },
    bytesToClients: () => bytes,
    stop,
    start,
    close: stop,
  };
}
