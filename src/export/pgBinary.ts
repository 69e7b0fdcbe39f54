/**
 * Field values of a Postgres binary COPY tuple, read where they lie in the COPY output: the
 * reader (src/export/binaryCopyReader.ts) only records where each field starts and how long it
 * is; the transcoders (src/export/callTranscoder.ts, leadTranscoder.ts) decode the few types
 * they need from those bytes. Binary formats: integers big-endian, `bool` one byte,
 * `timestamptz` int8 microseconds since 2000-01-01 UTC, `text` the UTF-8 bytes, `jsonb` a
 * version byte (1) followed by the jsonb text.
 */

/** One tuple: field i is `buf[pos[i] .. pos[i] + len[i])`, `len[i] === -1` for NULL. */
export interface Tuple {
  buf: Buffer;
  count: number;
  pos: Int32Array;
  len: Int32Array;
}

export function isNull(t: Tuple, i: number): boolean {
  return t.len[i]! < 0;
}

export function int16(t: Tuple, i: number): number {
  const b = t.buf;
  const p = t.pos[i]!;
  return (((b[p]! << 8) | b[p + 1]!) << 16) >> 16;
}

export function int32(t: Tuple, i: number): number {
  const b = t.buf;
  const p = t.pos[i]!;
  return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
}

const TWO_32 = 4_294_967_296;
/** |high word| below this: the int8 fits a double exactly (2^53). */
const SAFE_HIGH = 0x200000;

/** An int8 as a number; beyond 2^53 (never an id or a time this API stores) it throws. */
export function int64(t: Tuple, i: number): number {
  const b = t.buf;
  const p = t.pos[i]!;
  const hi = (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
  const lo = ((b[p + 4]! << 24) | (b[p + 5]! << 16) | (b[p + 6]! << 8) | b[p + 7]!) >>> 0;
  if (hi >= SAFE_HIGH || hi < -SAFE_HIGH) throw new RangeError('int8 value beyond 2^53');
  return hi * TWO_32 + lo;
}

/** An int2, int4 or int8 field by its length. */
export function integer(t: Tuple, i: number): number {
  const n = t.len[i]!;
  return n === 8 ? int64(t, i) : n === 4 ? int32(t, i) : int16(t, i);
}

export function bool(t: Tuple, i: number): boolean {
  return t.buf[t.pos[i]!] !== 0;
}

/**
 * A timestamptz as epoch milliseconds, the microseconds rounded down to a whole millisecond (as
 * `floor(extract(epoch from t) * 1000)::int8`, the cursors' form: src/data/fieldColumns.ts).
 * Exact: integer arithmetic, in doubles near 2000 and in bigints beyond. `infinity` and
 * `-infinity` throw, as the reference queries fail on them.
 */
export function timestampMs(t: Tuple, i: number): number {
  const b = t.buf;
  const p = t.pos[i]!;
  const hi = (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
  // Within ±2^52 µs of 2000 (years 1857 to 2142) every step below is exact in a double.
  if (hi >= NEAR_HIGH || hi < -NEAR_HIGH) return farTimestampMs(b.readBigInt64BE(p));
  const lo = ((b[p + 4]! << 24) | (b[p + 5]! << 16) | (b[p + 6]! << 8) | b[p + 7]!) >>> 0;
  const us = hi * TWO_32 + lo + PG_EPOCH_US;
  let rest = us % 1000;
  if (rest < 0) rest += 1000;
  return (us - rest) / 1000;
}

/** Microseconds from 1970-01-01 to 2000-01-01 (Postgres's epoch). */
const PG_EPOCH_US_BIG = 946_684_800_000_000n;
const PG_EPOCH_US = Number(PG_EPOCH_US_BIG);
const NEAR_HIGH = 0x100000;
const INFINITY_US = 0x7fffffffffffffffn;

function farTimestampMs(us2000: bigint): number {
  if (us2000 === INFINITY_US || us2000 === -INFINITY_US - 1n) throw new RangeError('infinite timestamp');
  const us = us2000 + PG_EPOCH_US_BIG;
  let rest = us % 1000n;
  if (rest < 0n) rest += 1000n;
  return Number((us - rest) / 1000n);
}

/** The text of a field (UTF-8), for the rare paths that need a string. */
export function text(t: Tuple, i: number): string {
  const p = t.pos[i]!;
  return t.buf.toString('utf8', p, p + t.len[i]!);
}

/** Where the text of a jsonb field starts (after its version byte). */
export function jsonbStart(t: Tuple, i: number): number {
  const p = t.pos[i]!;
  if (t.buf[p] !== 1) throw new Error(`unsupported jsonb binary version ${t.buf[p]}`);
  return p + 1;
}
