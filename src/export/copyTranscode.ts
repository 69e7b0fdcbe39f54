import { Readable } from 'node:stream';
import { ByteWriter, TupleRenderer } from './byteWriter';
import type { Tuple } from './pgBinary';
import { BufferPool } from '../streams/bufferPool';
import { ROWS_EVENT } from '../streams/rowsToText';
import { BinaryCopyReader } from './binaryCopyReader';

/**
 * Binary COPY bytes in, the export's bytes out, in one stage: each chunk of COPY data is cut
 * into tuples (BinaryCopyReader) and rendered (a TupleRenderer of src/domain) straight into
 * output buffers from a pool. A read drains whatever COPY data is buffered (the COPY stream
 * hands on what one socket read brought, up to 64 KiB) into chunks of up to ~CHUNK_SIZE, so the
 * socket gets few, large writes and a slow query's rows still leave at once. Output is
 * produced only when it is read: backpressure reaches the COPY, and through it Postgres.
 *
 * Destroying the result destroys the source (the COPY is cancelled and its connection
 * released), and the result closes only after the source has closed; an error of the source
 * or of the renderer destroys the result with that error. A COPY that ends without its end
 * marker is an error (a truncated export must never look complete).
 */

/** Output chunk size; large chunks cost fewer socket writes. */
const CHUNK_SIZE = 256 * 1024;

/** The shared pool of output buffers: a few per running export are in flight at most. */
const outputBuffers = new BufferPool(CHUNK_SIZE + 16 * 1024, 64);

export interface TranscodedStream extends Readable {
  /** Gives a chunk's buffer back to the pool once it has been written. */
  recycle(chunk: Uint8Array): void;
}

export function transcodeCopy(source: Readable, renderer: TupleRenderer, pool: BufferPool = outputBuffers): TranscodedStream {
  const reader = new BinaryCopyReader();
  const writer = new ByteWriter(
    (min) => pool.take(min),
    (buffer) => pool.give(buffer),
  );
  const onTuple = (t: Tuple): void => renderer.row(t, writer);
  let headWritten = false;
  let wanted = false;
  let finished = false;
  const out = new Readable({
    objectMode: true,
    highWaterMark: 1,
    read() {
      wanted = true;
      pump();
    },
    destroy(err, callback) {
      source.off('readable', pump);
      source.off('end', onEnd);
      writer.discard();
      if (!source.destroyed) source.destroy();
      if (source.closed) callback(err);
      else source.once('close', () => callback(err));
    },
  }) as TranscodedStream;
  out.recycle = (chunk) => pool.give(chunk);

  let counted = 0;
  const pushChunks = (): boolean => {
    const chunks = writer.take();
    for (const c of chunks) out.push(c);
    // The rows in what was just pushed, for the exported-rows metric (as rowsToText reports them).
    if (reader.rows > counted) {
      out.emit(ROWS_EVENT, reader.rows - counted);
      counted = reader.rows;
    }
    return chunks.length > 0;
  };
  const pump = (): void => {
    if (!wanted || finished || out.destroyed) return;
    try {
      if (!headWritten) {
        headWritten = true;
        renderer.head(writer);
      }
      let chunk: Buffer | null;
      while ((chunk = source.read() as Buffer | null) !== null) {
        reader.feed(chunk, onTuple);
        if (writer.size >= CHUNK_SIZE) break;
      }
    } catch (err) {
      out.destroy(err as Error);
      return;
    }
    if (writer.size > 0) {
      wanted = false;
      pushChunks();
    }
  };
  const onEnd = (): void => {
    finished = true;
    try {
      if (!reader.complete) throw new Error('the COPY data ended before its end marker');
      if (!headWritten) renderer.head(writer);
      renderer.tail(writer);
    } catch (err) {
      out.destroy(err as Error);
      return;
    }
    pushChunks();
    out.push(null);
  };
  source.on('readable', pump);
  source.once('end', onEnd);
  source.on('error', (err: Error) => {
    if (!out.destroyed) out.destroy(err);
  });
  return out;
}
