import type { IncomingMessage, ServerResponse } from 'node:http';

/** Responses whose client has been told to send its body. */
const continued = new WeakSet<ServerResponse>();

/**
 * Tells a client that sent `Expect: 100-continue` to send its body, once, when its request has
 * passed every check that needs no body (credentials, rights, quota, parameters): a request
 * refused before gets its 401/403/413/415 without the client uploading the body first (.NET
 * Framework sends the header by default; a client that authenticates only after a 401 would
 * otherwise send every body twice). The server holds back Node's automatic 100 Continue
 * (src/app/server.ts); Node closes the connection after a final answer that came without one.
 */
export function continueBody(req: IncomingMessage, res: ServerResponse): void {
  if (continued.has(res) || res.headersSent) return;
  const expect = req.headers.expect;
  if (expect === undefined || !/^\s*100-continue\s*$/i.test(expect)) return;
  continued.add(res);
  res.writeContinue();
}
