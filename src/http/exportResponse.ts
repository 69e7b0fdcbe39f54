import type { Response } from 'express';
import type { Readable, Transform, Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream';
import { compressor, ContentCoding, flushCompressor } from './compression';
import type { StreamLogger } from './streamResponse';
import { ROWS_EVENT } from '../streams/rowsToText';

/**
 * Sends a streamed export body (chunks of bytes, or text for an encoder) to the client:
 * headers at the first chunk, then each chunk written as it comes, with backpressure (the
 * source is read only while the client takes data), optional encoding (a charset other than
 * UTF-8) and compression, and cleanup when the client leaves. Chunks are large (a transcoder
 * or rows-to-text stage fills them), so each is one write; a written chunk's buffer goes back
 * to its pool (`recycle`) once the next stage has taken its bytes.
 *
 * Compression (negotiated by the caller, src/http/compression.ts): a body that is complete
 * and below `minBytes` at its first write is sent plain, with a Content-Length; otherwise the
 * compressor is flushed after the first chunk (the time to first byte stays) and whenever the
 * source pauses. `Vary: Accept-Encoding` goes on every response of a compressible export.
 *
 * Errors after the headers cannot become a problem response: they are logged and the response
 * destroyed, so a chunked body ends without its terminating chunk and the client can tell it is
 * incomplete. The promise always resolves, after the response has ended and the source has
 * closed (a COPY or cursor has then given its connection back); it never rejects.
 */
export interface ExportSendOptions {
  logger?: StreamLogger;
  /** Told the rows the source reports as it writes them (the request's exported-rows metric). */
  countRows?: (rows: number) => void;
  /** Stages before the compression, e.g. the encoder of a charset other than UTF-8. */
  transforms?: Transform[];
  /** Present when responses may be compressed (the setting is on). */
  compression?: {
    /** The negotiated coding; undefined: the client asked for none. */
    coding: ContentCoding | undefined;
    /** A body complete below this size at its first write is sent plain. */
    minBytes: number;
  };
  /** Gives a chunk of the source back to its pool once its bytes are taken. */
  recycle?: (chunk: Uint8Array) => void;
  /**
   * Cuts the response when the client has not taken data for this long while the server has
   * more to send (undefined: never). The COPY or cursor behind it is then released.
   */
  stallTimeoutMs?: number;
}

/**
 * How many bytes of the body a compressor may hold before the source waits: several of an
 * export's 256 KiB chunks, so the event loop renders the next chunks while zlib's thread pool
 * compresses the earlier ones. Waiting whenever the compressor's own buffer (64 KiB) was full
 * made every chunk wait for the compressor, and rendering and compression took turns on a
 * machine with a core to spare for each (docs/benchmarks.md).
 */
const COMPRESSOR_AHEAD_BYTES = 1024 * 1024;

/** How long a compressed body may sit in the compressor while the source has nothing new. */
const IDLE_FLUSH_MS = 50;

const byteLength = (chunk: Buffer | string): number => (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length);

export function sendExport(res: Response, source: Readable, options: ExportSendOptions = {}): Promise<void> {
  const { logger, recycle, compression } = options;
  const transforms = options.transforms ?? [];
  // The pipeline's stages, the metrics and the logger each listen for 'close' on a streamed
  // response: more than the default 10, which is no leak.
  res.setMaxListeners(Math.max(res.getMaxListeners(), 20));
  if (compression) res.vary('Accept-Encoding');

  return new Promise<void>((resolve) => {
    let started = false;
    let sourceEnded = false;
    let bodyEnded = false;
    let done = false;
    let waitingForDrain = false;
    let cause: 'client' | 'stream' | 'stall' | undefined = res.destroyed && !res.writableFinished ? 'client' : undefined;
    const pending: (Buffer | string)[] = [];
    let pendingBytes = 0;
    let head: Writable = res;
    let chain: Transform[] = [];
    let coding: ContentCoding | undefined;
    let zipper: Transform | undefined;
    let startImmediate: NodeJS.Immediate | undefined;
    let idleTimer: NodeJS.Timeout | undefined;
    let stallTimer: NodeJS.Timeout | undefined;

    // Bytes written to the compressor (when it is the first stage) that it has not taken in yet.
    let compressing = 0;

    const onWritten = (chunk: Buffer | string, bytes: number, toCompressor: boolean) => {
      const give = recycle && typeof chunk !== 'string' ? recycle : undefined;
      if (!give && !toCompressor) return undefined;
      return (err?: Error | null): void => {
        if (toCompressor) {
          compressing -= bytes;
          if (waitingForDrain && compressing <= COMPRESSOR_AHEAD_BYTES / 2) onDrain();
        }
        if (!err) give?.(chunk as Buffer);
      };
    };

    const wait = (): void => {
      waitingForDrain = true;
      if (options.stallTimeoutMs !== undefined) stallTimer = setTimeout(onStall, options.stallTimeoutMs);
    };

    const write = (chunk: Buffer | string): boolean => {
      const toCompressor = head === zipper;
      const bytes = byteLength(chunk);
      if (toCompressor) compressing += bytes;
      const ok = head.write(chunk, onWritten(chunk, bytes, toCompressor));
      if (zipper) idleTimer = idleTimer ? idleTimer.refresh() : setTimeout(onIdle, IDLE_FLUSH_MS);
      if (waitingForDrain) return ok;
      if (toCompressor) {
        // The compressor works on zlib's thread pool: the source renders on while it holds less
        // than COMPRESSOR_AHEAD_BYTES, and reads on once it has taken in half of that.
        if (compressing > COMPRESSOR_AHEAD_BYTES) wait();
      } else if (!ok) {
        // Several writes in a row (the held-back first chunks) may each say "full": one wait suffices.
        wait();
        head.once('drain', onDrain);
      }
      return ok;
    };

    // A body is held back (at most one turn of the event loop) only to see whether it is small.
    const threshold = compression?.coding ? compression.minBytes : 0;

    const start = (): void => {
      if (started || done) return;
      started = true;
      if (startImmediate) clearImmediate(startImmediate);
      startImmediate = undefined;
      const small = sourceEnded && pendingBytes < threshold;
      coding = small ? undefined : compression?.coding;
      if (coding) {
        res.setHeader('Content-Encoding', coding);
        zipper = compressor(coding);
      } else if (sourceEnded && transforms.length === 0) {
        res.setHeader('Content-Length', pendingBytes);
      }
      chain = zipper ? [...transforms, zipper] : transforms;
      if (chain.length > 0) {
        head = chain[0]!;
        pipeline([...chain, res], (err) => {
          if (err) fail(err);
        });
      }
      if (!res.headersSent && !res.destroyed) res.flushHeaders();
      const first = pending.splice(0, pending.length);
      pendingBytes = 0;
      for (const chunk of first) write(chunk);
      // The first bytes leave now, not when the compressor's buffer is full.
      if (zipper && coding) flushCompressor(zipper, coding);
      if (sourceEnded) endBody();
    };

    const startLater = (): void => {
      startImmediate = undefined;
      start();
      onReadable();
    };

    const onReadable = (): void => {
      if (done) return;
      let chunk: Buffer | string | null;
      while (!waitingForDrain && (chunk = source.read() as Buffer | string | null) !== null) {
        if (started) {
          write(chunk);
          continue;
        }
        pending.push(chunk);
        pendingBytes += byteLength(chunk);
        if (pendingBytes >= threshold) start();
        else startImmediate ??= setImmediate(startLater);
      }
    };

    const onDrain = (): void => {
      waitingForDrain = false;
      if (stallTimer) clearTimeout(stallTimer);
      stallTimer = undefined;
      onReadable();
    };

    const onIdle = (): void => {
      if (zipper && coding && !bodyEnded && !done && !zipper.destroyed) flushCompressor(zipper, coding);
    };

    const onStall = (): void => {
      cause ??= 'stall';
      logger?.info?.({ stallTimeoutMs: options.stallTimeoutMs }, 'client stalled during a streamed response; response cut');
      res.destroy();
    };

    const onEnd = (): void => {
      sourceEnded = true;
      if (!started) start();
      else endBody();
    };

    const endBody = (): void => {
      if (bodyEnded || done) return;
      bodyEnded = true;
      head.end();
    };

    const onSourceError = (err: Error): void => fail(err);

    const fail = (err: Error): void => {
      if (done) return;
      cause ??= 'stream';
      if (cause === 'client') logger?.info?.({ err }, 'client disconnected during a streamed response');
      else if (cause === 'stream') logger?.error({ err }, 'streamed response failed after its headers were sent; response aborted');
      finish(true);
    };

    const onResponseClose = (): void => {
      if (res.writableFinished) finish(false);
      else {
        cause ??= 'client';
        if (cause === 'client') logger?.info?.({}, 'client disconnected during a streamed response');
        finish(true);
      }
    };

    const finish = (destroy: boolean): void => {
      if (done) return;
      done = true;
      if (startImmediate) clearImmediate(startImmediate);
      if (idleTimer) clearTimeout(idleTimer);
      if (stallTimer) clearTimeout(stallTimer);
      source.off('readable', onReadable);
      source.off('end', onEnd);
      source.off(ROWS_EVENT, onRows);
      res.off('close', onResponseClose);
      head.off('drain', onDrain);
      if (destroy) {
        source.destroy();
        for (const t of chain) t.destroy();
        res.destroy();
      }
      // Settled once the source has closed too: a COPY or cursor has released its connection.
      const settle = () => {
        source.off('error', onSourceError);
        // A late error of a destroyed source has nobody else to report to.
        source.on('error', () => undefined);
        resolve();
      };
      if (source.closed) settle();
      else finished(source, () => settle());
    };

    const onRows = (rows: number): void => options.countRows?.(rows);
    source.on(ROWS_EVENT, onRows);
    source.on('readable', onReadable);
    source.once('end', onEnd);
    source.on('error', onSourceError);
    res.once('close', onResponseClose);
    if (cause === 'client') finish(true);
    else onReadable();
  });
}
