import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { Express } from 'express';
import type { Settings } from '../config/settings';

export interface RunningServer {
  server: http.Server;
  url: string;
  /** Stops accepting, lets in-flight responses finish up to the grace deadline, then cuts the rest. */
  close(): Promise<void>;
}

export async function listen(app: Express, settings: Settings): Promise<RunningServer> {
  const tls = settings.TLS_CERT_FILE && settings.TLS_KEY_FILE;
  const server: http.Server = tls
    ? https.createServer({ cert: fs.readFileSync(settings.TLS_CERT_FILE!), key: fs.readFileSync(settings.TLS_KEY_FILE!) }, app)
    : http.createServer(app);
  // Long exports must not be cut by Node's default request timeout.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 5000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.PORT, settings.HOST, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.PORT;
  const host = settings.HOST.includes(':') ? `[${settings.HOST}]` : settings.HOST;
  const url = `${tls ? 'https' : 'http'}://${host}:${port}`;

  const close = () =>
    new Promise<void>((resolve) => {
      const deadline = setTimeout(() => server.closeAllConnections(), settings.SHUTDOWN_GRACE_MS);
      deadline.unref();
      server.close(() => {
        clearTimeout(deadline);
        resolve();
      });
      // Idle keep-alive sockets would otherwise hold the close until they time out.
      server.closeIdleConnections();
    });
  return { server, url, close };
}
