import type { Request } from 'express';

/**
 * The client's address as `req.ip` gives it: behind a trusted proxy (TRUST_PROXY) the address
 * the proxy forwarded, else the socket's peer, read directly (req.ip would parse
 * X-Forwarded-For only to pass over it).
 */
export function clientAddress(req: Request): string | undefined {
  return req.app.enabled('trust proxy') ? req.ip : req.socket.remoteAddress;
}
