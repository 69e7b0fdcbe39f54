import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpProblem } from './problem';

/** Responses whose client has been told to send its body. */
const continued = new WeakSet<ServerResponse>();

/**
 * Tells a client that sent `Expect: 100-continue` to send its body, once, when its request has
 * passed every check that needs no body (credentials, rights, quota, parameters, a declared
 * length within `maxBytes`, else a 413): a request refused before gets its 401/403/413/415
 * without the client uploading the body first (.NET Framework sends the header by default; a
 * client that authenticates only after a 401 would otherwise send every body twice). The server
 * holds back Node's automatic 100 Continue (src/app/server.ts); Node closes the connection after
 * a final answer that came without one.
 */
export function continueBody(req: IncomingMessage, res: ServerResponse, maxBytes = Infinity): void {
  if (continued.has(res) || res.headersSent) return;
  const expect = req.headers.expect;
  if (expect === undefined || !/^\s*100-continue\s*$/i.test(expect)) return;
  // Refused here, not by the body reader, which answers a body over its limit only once the
  // whole body has arrived: this one would never come.
  if (Number(req.headers['content-length']) > maxBytes)
    throw new HttpProblem('payload_too_large', 'the request body is over the size limit');
  continued.add(res);
  res.writeContinue();
}
