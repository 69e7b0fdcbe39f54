import type { Response } from 'express';
import type { Duplex, Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { coalesce } from '../streams/coalesce';
import { ROWS_EVENT } from '../streams/rowsToText';

/** The part of a pino logger streamToResponse uses. */
export interface StreamLogger {
  error(obj: object, msg?: string): void;
  info?(obj: object, msg?: string): void;
}

export interface StreamOptions {
  logger?: StreamLogger;
  /** Told the rows the source reports as it writes them (the request's exported-rows metric). */
  countRows?: (rows: number) => void;
}

/**
 * Streams `source` through `transforms` and a coalescer into `res`, with backpressure end to end.
 *
 * Headers go out at once (res.flushHeaders), so status and headers must be set before the call.
 * Errors that should still become a problem response must happen before it: openCursor resolves
 * only after the first batch has arrived, so query errors surface there. From here on an error
 * cannot become a 500: it is logged and the response destroyed, so the chunked body ends without
 * its terminating chunk and a client can tell it is incomplete (a JSON body then never ends
 * with `]`).
 *
 * A client that disconnects destroys the pipeline, and with it the source (a cursor closes and
 * releases its connection). The promise always resolves, once every stream is closed; it never
 * rejects, so callers need no error handling and there is no unhandled rejection.
 */
export async function streamToResponse(res: Response, source: Readable, transforms: Duplex[], options: StreamOptions = {}): Promise<void> {
  const { logger, countRows } = options;
  // The abort signal, the pipeline's stages, the metrics and the logger each listen for 'close'
  // on a streamed response: more than the default 10, which is no leak.
  res.setMaxListeners(Math.max(res.getMaxListeners(), 20));
  const streams = [source, ...transforms];
  // Which side failed first decides how it is logged: a client leaving is not a server error.
  let cause: 'client' | 'stream' | undefined = res.destroyed && !res.writableFinished ? 'client' : undefined;
  const onStreamError = (): void => {
    cause ??= 'stream';
  };
  const onResponseClose = (): void => {
    if (!res.writableFinished) cause ??= 'client';
  };
  for (const s of streams) s.once('error', onStreamError);
  res.once('close', onResponseClose);
  const onRows = (rows: number): void => countRows?.(rows);
  source.on(ROWS_EVENT, onRows);

  try {
    if (!res.headersSent && !res.destroyed) res.flushHeaders();
    await pipeline([...streams, coalesce(), res]);
  } catch (err) {
    if (cause === 'client') {
      logger?.info?.({ err }, 'client disconnected during a streamed response');
    } else {
      logger?.error({ err }, 'streamed response failed after its headers were sent; response aborted');
    }
    // pipeline has destroyed every stream; this also covers a failure before it started.
    for (const s of streams) s.destroy();
    res.destroy();
  } finally {
    // pipeline settles when the response is done, not when a destroyed source has finished its
    // cleanup (a cursor waits for Postgres to confirm the close); wait for that too.
    await Promise.all(streams.map((s) => finished(s).catch(() => undefined)));
    for (const s of streams) s.off('error', onStreamError);
    source.off(ROWS_EVENT, onRows);
    res.off('close', onResponseClose);
  }
}

/**
 * An AbortSignal that fires when the client goes away before the response finished: pass it to
 * openCursor so a client that leaves while the query is still running releases it at once.
 */
export function responseAbortSignal(res: Response): AbortSignal {
  const controller = new AbortController();
  if (res.destroyed && !res.writableFinished) {
    controller.abort(new Error('client disconnected'));
    return controller.signal;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

/** Cursor options for a streamed list: the configured batch size, and the client's abort. */
export function cursorOptions(res: Response, batchSize: number): { batchSize: number; signal: AbortSignal } {
  return { batchSize, signal: responseAbortSignal(res) };
}
