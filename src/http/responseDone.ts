import type { ServerResponse } from 'node:http';

/** What runs once a response is over; it is given that response. */
export type ResponseDoneCallback = (res: ServerResponse) => void;

const CALLBACKS = Symbol('responseDoneCallbacks');

type WithCallbacks = ServerResponse & { [CALLBACKS]?: ResponseDoneCallback[] };

/** The one 'close' listener of a response: a module-level function, so no closure per response. */
function runCallbacks(this: WithCallbacks): void {
  const callbacks = this[CALLBACKS];
  this[CALLBACKS] = undefined;
  if (callbacks !== undefined) for (const callback of callbacks) callback(this);
}

/**
 * Runs `callback` once the response is over: finished, or cut short by its connection closing.
 * Node emits 'close' on every server response after either (after 'finish' when it finished),
 * so the callbacks of one response, in the order given, share a single 'close' listener. The
 * request line, the metrics, the request log and the in-flight tracking each need the end of
 * every response; a `once` listener each (two, for 'finish' and 'close') would make a wrapper
 * per listener and a removal per event on every request. Unlike a listener, a callback given
 * after the response closed (a client that left while its credentials were checked) runs at
 * once: an export slot taken then is given back.
 */
export function whenResponseDone(res: ServerResponse, callback: ResponseDoneCallback): void {
  if (res.closed) {
    callback(res);
    return;
  }
  const withCallbacks = res as WithCallbacks;
  const callbacks = withCallbacks[CALLBACKS];
  if (callbacks === undefined) {
    withCallbacks[CALLBACKS] = [callback];
    res.on('close', runCallbacks);
  } else {
    callbacks.push(callback);
  }
}
