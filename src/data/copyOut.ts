import { Readable } from 'node:stream';
import type pg from 'pg';
import { CLOSE_TIMEOUT_MS, isBroken, PgConnection, sendCancelRequest } from './cursorStream';

/**
 * `COPY … TO STDOUT` on one connection as a Readable of the COPY data, with a cancellation.
 *
 * It is a pg Submittable (`client.query(copyOut)` calls `submit(connection)`): from the query
 * on, it reads the protocol messages from the connection's socket itself, in place of pg's
 * parser, until CopyDone or an ErrorResponse, and then hands the rest of the socket's data
 * back to pg, which completes the query (CommandComplete, ReadyForQuery, or the error).
 * pg-copy-streams works the same way; this reader exists because that one makes a Buffer per
 * CopyData message (one per row) and copies them together again per socket read. Here each
 * socket chunk's CopyData payloads are moved together within the chunk (once read, the chunk is
 * this reader's alone) and pushed as one Buffer.
 *
 * Backpressure pauses the socket, and through it Postgres. Destroying the stream before the
 * COPY finished sends Postgres a CancelRequest, reads on (dropping the data) until Postgres
 * reports the cancel and is ready again, and only then calls `onDone` and closes; a COPY that
 * does not settle within CLOSE_TIMEOUT_MS leaves its connection reported unclean.
 */

/** Message type bytes of the protocol (version 3). */
const COPY_DATA = 0x64; // d
const COPY_DONE = 0x63; // c
const COPY_OUT_RESPONSE = 0x48; // H

/**
 * Messages skipped here: the COPY's start, and those Postgres may send at any time (notices,
 * parameter status, notifications: an export connection listens to nothing).
 */
const SKIPPED = new Set([COPY_OUT_RESPONSE, 0x4e /* N */, 0x53 /* S */, 0x41 /* A */]);

/** A message's type byte and its int32 length (which counts itself). */
const HEADER_BYTES = 5;

export class CopyOut extends Readable implements pg.Submittable {
  /** Settles once the first data has arrived or the COPY ended; rejects if it failed before. */
  readonly ready: Promise<void>;
  private connection: pg.Connection | undefined;
  private pgListener: ((chunk: Buffer) => void) | undefined;
  /** A message header cut by a chunk boundary: its first bytes. */
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerBytes = 0;
  /** The message being read and how many bytes of its body are still to come; -1: a header comes next. */
  private code = 0;
  private remaining = -1;
  /** The COPY ended (CopyDone, an error, or the connection failed). */
  private finished = false;
  /** Destroyed while running: what still arrives is dropped. */
  private discarding = false;
  private settleReady: ((err?: Error) => void) | undefined;

  constructor(
    private readonly conn: PgConnection,
    private readonly text: string,
    /** Called once the connection is free again (`clean`) or given up; the stream closes after it settles. */
    private readonly onDone: (clean: boolean) => Promise<void>,
  ) {
    super({ highWaterMark: 1, objectMode: true });
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => {
        this.settleReady = undefined;
        if (err) reject(err);
        else resolve();
      };
    });
    // An error while nobody reads yet must not crash the process: pipeline or the reader sees it.
    this.on('error', () => undefined);
    conn.query(this);
  }

  submit(connection: pg.Connection): void {
    const stream = connection.stream;
    const listeners = stream.listeners('data') as ((chunk: Buffer) => void)[];
    if (listeners.length !== 1) throw new Error(`a COPY needs the connection's one data listener, found ${listeners.length}`);
    this.connection = connection;
    this.pgListener = listeners[0];
    stream.removeListener('data', this.pgListener!);
    stream.on('data', this.onData);
    connection.query(this.text);
  }

  /** pg: the error Postgres reported (after the hand-back), or the connection failed. */
  handleError(err: Error): void {
    this.finished = true;
    this.settleReady?.(err);
    if (!this.destroyed) this.destroy(err);
  }

  /** pg: the COPY's CommandComplete. */
  handleCommandComplete(): void {}

  /** pg: Postgres is ready for the next query. */
  handleReadyForQuery(): void {}

  override _read(): void {
    if (this.pgListener !== undefined) this.connection?.stream.resume();
  }

  private readonly onData = (chunk: Buffer): void => {
    const end = chunk.length;
    let p = 0;
    let w = 0;
    while (p < end) {
      if (this.remaining < 0) {
        // A message header: whole in this chunk, or completed from the carried bytes.
        let code: number;
        let length: number;
        const carried = this.headerBytes > 0 || end - p < HEADER_BYTES;
        if (!carried) {
          code = chunk[p]!;
          length = chunk.readInt32BE(p + 1);
          p += HEADER_BYTES;
        } else {
          const take = Math.min(HEADER_BYTES - this.headerBytes, end - p);
          chunk.copy(this.header, this.headerBytes, p, p + take);
          this.headerBytes += take;
          p += take;
          if (this.headerBytes < HEADER_BYTES) break;
          this.headerBytes = 0;
          code = this.header[0]!;
          length = this.header.readInt32BE(1);
        }
        if (code !== COPY_DATA && code !== COPY_DONE && !SKIPPED.has(code)) {
          // An ErrorResponse (or anything else): pg reads it, from its header on.
          const rest = carried ? Buffer.concat([this.header, chunk.subarray(p)]) : chunk.subarray(p - HEADER_BYTES);
          this.emitData(chunk, w);
          this.handBack(rest);
          return;
        }
        this.code = code;
        this.remaining = length - 4;
      }
      const n = Math.min(this.remaining, end - p);
      if (this.code === COPY_DATA && !this.discarding) {
        if (w !== p) chunk.copyWithin(w, p, p + n);
        w += n;
      }
      p += n;
      this.remaining -= n;
      if (this.remaining === 0) {
        this.remaining = -1;
        if (this.code === COPY_DONE) {
          this.emitData(chunk, w);
          this.finish();
          this.handBack(chunk.subarray(p));
          return;
        }
      }
    }
    if (!this.emitData(chunk, w)) this.connection!.stream.pause();
  };

  /** Pushes the chunk's first `w` bytes (its CopyData payloads); false when the reader is full. */
  private emitData(chunk: Buffer, w: number): boolean {
    if (w === 0 || this.discarding) return true;
    const more = this.push(chunk.subarray(0, w));
    // A tick later: an error in the same socket read (the first rows fail) still rejects `ready`.
    if (this.settleReady !== undefined) process.nextTick(() => this.settleReady?.());
    return more;
  }

  private finish(): void {
    this.finished = true;
    this.settleReady?.();
    if (!this.discarding) this.push(null);
  }

  /** Gives the socket back to pg's parser, starting with `rest`. */
  private handBack(rest: Buffer): void {
    const stream = this.connection!.stream;
    const pgListener = this.pgListener!;
    this.pgListener = undefined;
    stream.removeListener('data', this.onData);
    stream.on('data', pgListener);
    stream.resume();
    if (rest.length > 0) pgListener(rest);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.settleReady?.(error ?? new Error('export cancelled before its first row'));
    const conn = this.conn;
    const done = (clean: boolean) => {
      void this.onDone(clean).then(() => callback(error));
    };
    if (this.finished) {
      // Ended or failed: Postgres is ready again once ReadyForQuery arrives.
      if (conn.readyForQuery || isBroken(conn)) done(!isBroken(conn));
      else whenReadyAgain(conn, done);
      return;
    }
    // Running: drop what still arrives, cancel, and wait for Postgres to be ready again.
    this.discarding = true;
    if (this.pgListener !== undefined) this.connection?.stream.resume();
    if (conn.readyForQuery) {
      done(true);
      return;
    }
    const cancelling = sendCancelRequest(conn);
    // Released only once the cancel has been delivered, so it cannot hit the next query.
    whenReadyAgain(conn, (clean) => void cancelling.then(() => done(clean)));
  }
}

/** Calls `settle` once: true when Postgres reports it is ready again, false if it has not within CLOSE_TIMEOUT_MS. */
function whenReadyAgain(conn: PgConnection, settle: (clean: boolean) => void): void {
  let settled = false;
  const once = (clean: boolean) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    settle(clean);
  };
  const timer = setTimeout(() => once(false), CLOSE_TIMEOUT_MS);
  conn.connection.once('readyForQuery', () => once(true));
}
