import { Readable } from 'node:stream';

export interface RowsToTextOptions<Row> {
  /** Before the first row, also when there is none (`[`, a CSV header line). Default ''. */
  head?: string;
  /** Between two rows (`,` in a JSON array). Default ''. */
  separator?: string;
  /** After the last row, also when there is none (`]`). Default ''. */
  tail?: string;
  /** One row's text, separator excluded (a CSV line brings its own CRLF). */
  format: (row: Row) => string;
  /**
   * UTF-8 output: the text is encoded here, a few hundred kilobytes at a time, so the
   * coalescer passes the buffers on as they are and the socket gets large writes. Without it
   * the chunks are strings, for an encoder stream of another encoding.
   */
  utf8?: boolean;
}

/**
 * Emitted by the stream rowsToText returns, with the number of rows in the chunk just pushed:
 * lets the HTTP layer count exported rows without a stage of its own.
 */
export const ROWS_EVENT = 'rows';

/**
 * Object rows in, text out, in one stage: `head`, the rows' texts joined by `separator`, then
 * `tail`. Each read drains whatever rows the source holds (a cursor pushes a batch at a time)
 * into one chunk of a few hundred kilobytes, so a row costs one format call and one append
 * rather than a stream hop per row and per stage, and the socket gets large writes (the
 * coalescer passes chunks this large on as they are). Rows are read only when the result is
 * read, so backpressure reaches the source.
 *
 * Destroying the result destroys the source (the cursor closes and releases its connection),
 * and the result closes only after the source has closed (the source must emit 'close', as
 * every stream with the default emitClose does); an error of the source or of `format`
 * destroys the result with that error.
 */
export function rowsToText<Row>(source: Readable, options: RowsToTextOptions<Row>): Readable {
  const { format } = options;
  const head = options.head ?? '';
  const separator = options.separator ?? '';
  const tail = options.tail ?? '';
  const out: ChunkBuilder = options.utf8 ? new Utf8ChunkBuilder() : new TextChunkBuilder();
  let headSent = false;
  let anyRow = false;
  let wanted = false;
  let finished = false;
  const text = new Readable({
    // Strings (for an encoder stream) or Buffers, never split by the stream machinery.
    objectMode: true,
    highWaterMark: 1,
    read() {
      wanted = true;
      pump();
    },
    destroy(err, callback) {
      source.off('readable', pump);
      source.off('end', onEnd);
      // The error listener stays: a source destroyed with a reason (the client-abort signal
      // of openCursor) still emits 'error' after this.
      if (!source.destroyed) source.destroy();
      // Closed only once the source is: a cursor closes after it has released its connection,
      // and whoever waits for this stream to close (streamToResponse) waits for that too.
      if (source.closed) callback(err);
      else source.once('close', () => callback(err));
    },
  });
  const pump = (): void => {
    if (!wanted || finished || text.destroyed) return;
    if (!headSent) {
      headSent = true;
      out.add(head);
    }
    let rows = 0;
    try {
      let row: Row | null;
      while ((row = source.read() as Row | null) !== null) {
        out.add(anyRow ? separator + format(row) : format(row));
        anyRow = true;
        rows++;
        if (out.size >= CHUNK_SIZE) break;
      }
    } catch (err) {
      text.destroy(err as Error);
      return;
    }
    const chunk = out.take();
    if (chunk !== undefined) {
      wanted = false;
      text.push(chunk);
    }
    if (rows > 0) text.emit(ROWS_EVENT, rows);
  };
  const onEnd = (): void => {
    finished = true;
    if (!headSent) out.add(head);
    out.add(tail);
    const chunk = out.take();
    if (chunk !== undefined) text.push(chunk);
    text.push(null);
  };
  const onError = (err: Error): void => {
    if (!text.destroyed) text.destroy(err);
  };
  source.on('readable', pump);
  source.once('end', onEnd);
  source.on('error', onError);
  return text;
}

/**
 * A JSON array of the rows' JSON texts as UTF-8: `[`, the texts joined by `,`, `]` (`[]` for no
 * rows). `toJson` returns one row's JSON text (e.g. JSON.stringify of the row's object).
 */
export function jsonArrayText<Row>(source: Readable, toJson: (row: Row) => string): Readable {
  return rowsToText<Row>(source, { head: '[', separator: ',', tail: ']', format: toJson, utf8: true });
}

/** About this much output per chunk handed on. */
const CHUNK_SIZE = 256 * 1024;

interface ChunkBuilder {
  add(piece: string): void;
  /** Pending size (UTF-16 units or bytes: close enough for a chunk size). */
  readonly size: number;
  take(): string | Buffer | undefined;
}

/** Text for an encoder stream: V8 concatenates strings as ropes, so += is cheap. */
class TextChunkBuilder implements ChunkBuilder {
  private text = '';
  get size(): number {
    return this.text.length;
  }
  add(piece: string): void {
    this.text += piece;
  }
  take(): string | undefined {
    const t = this.text;
    this.text = '';
    return t === '' ? undefined : t;
  }
}

/**
 * UTF-8 bytes written row by row into one buffer: measured about three times cheaper than
 * flattening a rope of a few hundred rows and encoding it with Buffer.from.
 */
class Utf8ChunkBuilder implements ChunkBuilder {
  private buffer = Buffer.allocUnsafe(0);
  private offset = 0;
  private readonly full: Buffer[] = [];
  get size(): number {
    return this.offset;
  }
  add(piece: string): void {
    // A UTF-16 unit is at most three UTF-8 bytes.
    if (this.offset + piece.length * 3 > this.buffer.length) {
      if (this.offset > 0) this.full.push(this.buffer.subarray(0, this.offset));
      this.buffer = Buffer.allocUnsafe(Math.max(CHUNK_SIZE + 4096, piece.length * 3));
      this.offset = 0;
    }
    this.offset += this.buffer.write(piece, this.offset, 'utf8');
  }
  take(): Buffer | undefined {
    if (this.offset > 0) {
      this.full.push(this.buffer.subarray(0, this.offset));
      // The rest of this buffer is not reused: the chunk handed on still points into it.
      this.buffer = Buffer.allocUnsafe(0);
      this.offset = 0;
    }
    if (this.full.length === 0) return undefined;
    const chunk = this.full.length === 1 ? this.full[0]! : Buffer.concat(this.full);
    this.full.length = 0;
    return chunk;
  }
}
