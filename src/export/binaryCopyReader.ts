import type { Tuple } from './pgBinary';

/**
 * The framing of Postgres's binary COPY format (`COPY … TO STDOUT (FORMAT binary)`): an
 * 11-byte signature, flags and a header extension, then per tuple an int16 field count and
 * per field an int32 length (-1 for NULL) and the bytes, and an int16 -1 at the end.
 *
 * `feed` takes the COPY data in whatever pieces it arrives and calls `onTuple` for each
 * complete tuple with a view of where its fields lie (no copy, no decoding: the renderer
 * reads the bytes it needs). A tuple cut by a chunk boundary is completed from the next chunk.
 */

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const HEADER_FIXED = SIGNATURE.length + 8;
/** How much of a chunk is joined to the carried start of a tuple to complete it. */
const JOIN_BYTES = 16 * 1024;

export class BinaryCopyReader {
  private carry: Buffer | undefined;
  private headerRead = false;
  /** The end-of-data marker was read. */
  done = false;
  /** Tuples read so far. */
  rows = 0;
  private readonly tuple: Tuple = { buf: Buffer.alloc(0), count: 0, pos: new Int32Array(64), len: new Int32Array(64) };

  feed(chunk: Buffer, onTuple: (t: Tuple) => void): void {
    const carry = this.carry;
    if (carry === undefined) {
      this.read(chunk, 0, onTuple);
      return;
    }
    // The tuple cut at the end of the last chunk is completed from the start of this one: only
    // that start is copied (a tuple is far smaller than a chunk), the rest is read in place.
    this.carry = undefined;
    const head = Math.min(chunk.length, JOIN_BYTES);
    const joined = Buffer.concat([carry, chunk.subarray(0, head)]);
    const stop = this.read(joined, 0, onTuple);
    if (stop === undefined) {
      this.read(chunk, head, onTuple);
    } else if (stop >= carry.length) {
      // Everything left in `joined` (an incomplete tuple) lies in the chunk: read it there.
      this.carry = undefined;
      this.read(chunk, stop - carry.length, onTuple);
    } else {
      // The carried tuple is longer than what was joined: read it on with the whole chunk.
      this.carry = undefined;
      this.read(Buffer.concat([joined.subarray(stop), chunk.subarray(head)]), 0, onTuple);
    }
  }

  /**
   * Reads the tuples of `b` from `from`, calling `onTuple` for each complete one. Returns
   * undefined when it read to the end, or where the incomplete rest begins (kept as the carry).
   */
  private read(b: Buffer, from: number, onTuple: (t: Tuple) => void): number | undefined {
    let p = from;
    const end = b.length;
    if (!this.headerRead) {
      if (end - p < HEADER_FIXED) return this.keep(b, p);
      if (!b.subarray(p, p + SIGNATURE.length).equals(SIGNATURE)) throw new Error('not a binary COPY stream');
      const extension = b.readUInt32BE(p + SIGNATURE.length + 4);
      if (end - p < HEADER_FIXED + extension) return this.keep(b, p);
      p += HEADER_FIXED + extension;
      this.headerRead = true;
    }
    const t = this.tuple;
    t.buf = b;
    while (p + 2 <= end) {
      if (this.done) throw new Error('data after the end of a binary COPY stream');
      const count = ((b[p]! << 24) | (b[p + 1]! << 16)) >> 16;
      if (count === -1) {
        this.done = true;
        p += 2;
        continue;
      }
      if (count > t.pos.length) {
        t.pos = new Int32Array(count);
        t.len = new Int32Array(count);
      }
      let q = p + 2;
      let complete = true;
      for (let i = 0; i < count; i++) {
        if (q + 4 > end) {
          complete = false;
          break;
        }
        const len = (b[q]! << 24) | (b[q + 1]! << 16) | (b[q + 2]! << 8) | b[q + 3]!;
        q += 4;
        t.pos[i] = q;
        t.len[i] = len;
        if (len > 0) q += len;
        if (q > end) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      t.count = count;
      this.rows++;
      onTuple(t);
      p = q;
    }
    return p < end ? this.keep(b, p) : undefined;
  }

  /** Keeps `b` from `p` as the carry; returns `p`. */
  private keep(b: Buffer, p: number): number {
    this.carry = b.subarray(p);
    return p;
  }

  /** Whether the stream ended where it should: after the end marker, nothing left over. */
  get complete(): boolean {
    return this.done && this.carry === undefined;
  }
}
