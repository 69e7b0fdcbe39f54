import { csvQuoter } from '../domain/textEscaping';
import type { Tuple } from './pgBinary';

/**
 * Output bytes of a transcoded export written straight into large buffers: the transcoders
 * (src/export/callTranscoder.ts, leadTranscoder.ts) copy text fields from the COPY tuple as
 * bytes (escaping only where needed), write digits directly and copy pre-rendered fragments,
 * so no string is made per value and nothing is encoded to UTF-8 afterwards.
 *
 * Buffers come from `allocate` (a pool, src/export/copyTranscode.ts); each allocated buffer
 * is handed on at most once, as the chunk `[0, filled)` taken by `take()`, so whoever writes
 * the chunk out can give the whole buffer back to the pool once it is written.
 */

export type Allocate = (minBytes: number) => Buffer;

const EMPTY = Buffer.alloc(0);

/** A transcoder for one export: head, one call per tuple, tail. */
export interface TupleRenderer {
  /** Before the first row, also when there is none (`[`, a CSV header line). */
  head(w: ByteWriter): void;
  row(t: Tuple, w: ByteWriter): void;
  /** After the last row, also when there is none (`]`). */
  tail(w: ByteWriter): void;
}

/** Below this many bytes a loop copies faster than Buffer#copy (a native call). */
const SHORT_COPY = 40;

export class ByteWriter {
  /** The buffer being filled and the next free position; renderers may write to them directly after room(). */
  buf: Buffer = EMPTY;
  pos = 0;
  private readonly filled: Buffer[] = [];
  private filledBytes = 0;

  constructor(
    private readonly allocate: Allocate,
    /** Takes back a buffer that was allocated but never handed on (too small for one value). */
    private readonly giveBack?: (buffer: Buffer) => void,
  ) {}

  /** Bytes written and not yet taken. */
  get size(): number {
    return this.filledBytes + this.pos;
  }

  /** Makes room for `n` more bytes in `buf` at `pos`. */
  room(n: number): void {
    if (this.pos + n > this.buf.length) this.next(n);
  }

  private next(n: number): void {
    if (this.pos > 0) {
      this.filled.push(this.buf.subarray(0, this.pos));
      this.filledBytes += this.pos;
    } else if (this.buf.length > 0) {
      this.giveBack?.(this.buf);
    }
    this.buf = this.allocate(n);
    this.pos = 0;
  }

  /** The chunks written so far; the next write starts a new buffer. */
  take(): Buffer[] {
    if (this.pos > 0) {
      this.filled.push(this.buf.subarray(0, this.pos));
      this.buf = EMPTY;
      this.pos = 0;
    }
    const out = this.filled.splice(0, this.filled.length);
    this.filledBytes = 0;
    return out;
  }

  /** Gives back the buffer being filled (the export ended or failed). */
  discard(): void {
    if (this.buf.length > 0) this.giveBack?.(this.buf);
    this.buf = EMPTY;
    this.pos = 0;
    this.filled.length = 0;
    this.filledBytes = 0;
  }

  byte(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
  }

  /** Bytes `src[from .. to)`. */
  copy(src: Uint8Array, from: number, to: number): void {
    const n = to - from;
    this.room(n);
    const b = this.buf;
    let p = this.pos;
    if (n < SHORT_COPY) {
      for (let i = from; i < to; i++) b[p++] = src[i]!;
    } else {
      b.set(src.subarray(from, to), p);
      p += n;
    }
    this.pos = p;
  }

  /** A pre-rendered fragment. */
  frag(f: Uint8Array): void {
    this.copy(f, 0, f.length);
  }

  /** A string of ASCII characters only (generated text: names, digits). */
  ascii(s: string): void {
    const n = s.length;
    this.room(n);
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) b[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  /** Any string, as UTF-8. */
  utf8(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A safe integer in decimal. */
  int(n: number): void {
    this.room(21);
    this.pos = writeInt(this.buf, this.pos, n);
  }

  /** A text field of a tuple as a JSON string literal: what JSON.stringify writes for it. */
  jsonText(t: Tuple, i: number): void {
    const p0 = t.pos[i]!;
    this.jsonBytes(t.buf, p0, p0 + t.len[i]!);
  }

  /** UTF-8 bytes `src[from .. to)` as a JSON string literal. */
  jsonBytes(src: Uint8Array, from: number, to: number): void {
    this.room((to - from) * 6 + 2);
    const b = this.buf;
    let p = this.pos;
    b[p++] = 0x22;
    for (let i = from; i < to; i++) {
      const c = src[i]!;
      if (JSON_ESCAPE[c] === 0) b[p++] = c;
      else p = writeJsonEscape(b, p, c);
    }
    b[p++] = 0x22;
    this.pos = p;
  }
}

/** 1 for bytes a JSON string cannot carry as they are: control characters, `"` and `\`. */
const JSON_ESCAPE = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) JSON_ESCAPE[c] = 1;
JSON_ESCAPE[0x22] = 1;
JSON_ESCAPE[0x5c] = 1;

const HEX = '0123456789abcdef';
const SHORT_ESCAPES: Record<number, number> = { 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72, 0x22: 0x22, 0x5c: 0x5c };

/** JSON.stringify's escape of one byte: `\"`, `\\`, `\b\t\n\f\r`, else `\u00xx` (lower-case hex). */
function writeJsonEscape(b: Buffer, p: number, c: number): number {
  b[p++] = 0x5c;
  const short = SHORT_ESCAPES[c];
  if (short !== undefined) {
    b[p++] = short;
    return p;
  }
  b[p++] = 0x75;
  b[p++] = 0x30;
  b[p++] = 0x30;
  b[p++] = HEX.charCodeAt(c >> 4);
  b[p++] = HEX.charCodeAt(c & 15);
  return p;
}

/** Decimal digits of a safe integer at `p`; returns the next position. */
function writeInt(b: Buffer, p: number, n: number): number {
  if (n < 0) {
    b[p++] = 0x2d;
    n = -n;
  }
  if (n < 10) {
    b[p++] = 48 + n;
    return p;
  }
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  let q = p + digits;
  const end = q;
  while (n >= 10) {
    const d = n % 10;
    b[--q] = 48 + d;
    n = (n - d) / 10;
  }
  b[q - 1] = 48 + n;
  return end;
}

/**
 * RFC 4180 quoting for one separator, byte for byte what csvQuoter (src/domain/textEscaping.ts)
 * writes: a value holding the separator, `"`, CR or LF is quoted with inner quotes doubled.
 * An ASCII separator is looked for byte by byte; with any other separator, values holding
 * non-ASCII text go through csvQuoter itself (the separator cannot be an ASCII byte then).
 */
export class CsvQuoting {
  readonly separator: Buffer;
  private readonly sep: number;
  private readonly quote: (value: string) => string;

  constructor(separator: string) {
    this.separator = Buffer.from(separator, 'utf8');
    this.sep = this.separator.length === 1 ? this.separator[0]! : -1;
    this.quote = csvQuoter(separator);
  }

  /** A text field of a tuple. */
  text(w: ByteWriter, t: Tuple, i: number): void {
    const p = t.pos[i]!;
    this.bytes(w, t.buf, p, p + t.len[i]!);
  }

  /** UTF-8 bytes `src[from .. to)`. */
  bytes(w: ByteWriter, src: Buffer, from: number, to: number): void {
    const sep = this.sep;
    let quote = false;
    for (let i = from; i < to; i++) {
      const c = src[i]!;
      if (c === sep || c === 0x22 || c === 0x0a || c === 0x0d) {
        quote = true;
        break;
      }
      if (c >= 0x80 && sep < 0) {
        w.utf8(this.quote(src.toString('utf8', from, to)));
        return;
      }
    }
    if (!quote) {
      w.copy(src, from, to);
      return;
    }
    w.room((to - from) * 2 + 2);
    const b = w.buf;
    let p = w.pos;
    b[p++] = 0x22;
    for (let i = from; i < to; i++) {
      const c = src[i]!;
      b[p++] = c;
      if (c === 0x22) b[p++] = 0x22;
    }
    b[p++] = 0x22;
    w.pos = p;
  }

  /** A string value (names from lookups, generated text on the slow paths). */
  string(w: ByteWriter, value: string): void {
    w.utf8(this.quote(value));
  }

  /** The quoted text of a string, for pre-rendered fragments. */
  quoted(value: string): string {
    return this.quote(value);
  }
}
