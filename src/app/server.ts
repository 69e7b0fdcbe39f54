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

/**
 * Node's server timeouts from the settings (docs/operations.md, "Limits"). headersTimeout and
 * requestTimeout cover RECEIVING a request: a request whose head or body trickles in is answered
 * 408 and its socket closed, so a client cannot hold sockets open by sending slowly. Neither
 * covers sending the response: a long download runs for as long as the client keeps reading
 * (a client that stops reading is cut by EXPORT_STALL_TIMEOUT_MS instead). Node checks these
 * deadlines every connectionsCheckingInterval (30 s by default), so that interval is made short
 * enough for the timeouts to mean what they say.
 */
export function serverTimeouts(settings: Pick<Settings, 'HEADERS_TIMEOUT_MS' | 'REQUEST_TIMEOUT_MS' | 'KEEP_ALIVE_TIMEOUT_MS'>): http.ServerOptions {
  const shortest = Math.min(settings.HEADERS_TIMEOUT_MS, settings.REQUEST_TIMEOUT_MS);
  return {
    headersTimeout: settings.HEADERS_TIMEOUT_MS,
    requestTimeout: settings.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: settings.KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(30000, Math.floor(shortest / 4))),
  };
}

export async function listen(app: Express, settings: Settings): Promise<RunningServer> {
  const tls = settings.TLS_CERT_FILE && settings.TLS_KEY_FILE;
  const options = serverTimeouts(settings);
  const server: http.Server = tls
    ? https.createServer({ ...options, cert: fs.readFileSync(settings.TLS_CERT_FILE!), key: fs.readFileSync(settings.TLS_KEY_FILE!) }, app)
    : http.createServer(options, app);

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
