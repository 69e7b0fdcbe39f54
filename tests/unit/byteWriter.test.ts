import { ByteWriter, CsvQuoting } from '../../src/export/byteWriter';
import { DateTimeWriter, writeMillis } from '../../src/export/byteFormats';
import { formatDateTime } from '../../src/domain/datetime';
import { formatMillis } from '../../src/domain/timespan';
import { csvQuoter } from '../../src/domain/textEscaping';
import { BinaryCopyReader } from '../../src/export/binaryCopyReader';
import { BufferPool } from '../../src/streams/bufferPool';
import type { Tuple } from '../../src/export/pgBinary';
import { int16, int32, int64, text, timestampMs } from '../../src/export/pgBinary';
import { random } from '../harness/exportFixture';

/** The byte-level writers of the transcoded exports against the string functions they stand for. */

const ZONE = 'Europe/Copenhagen';

function writer(size = 64): ByteWriter {
  return new ByteWriter((min) => Buffer.alloc(Math.max(size, min)));
}

function written(w: ByteWriter): string {
  return Buffer.concat(w.take()).toString('utf8');
}

describe('ByteWriter', () => {
  it('when text holds any character, then jsonBytes writes what JSON.stringify writes', () => {
    const samples = ['', 'plain', '"', '\\', '\u2028\u2029', 'æøå', '😀🇩🇰', '\u007f', 'a"b\\c\nd'];
    for (let c = 0; c < 0x80; c++) samples.push(`x${String.fromCharCode(c)}y`);
    for (const s of samples) {
      const w = writer(8);
      const b = Buffer.from(s, 'utf8');
      w.jsonBytes(b, 0, b.length);
      expect(written(w)).toBe(JSON.stringify(s));
    }
  });

  it('when values cross buffer boundaries, then every byte arrives once and in order', () => {
    const w = writer(16);
    let expected = '';
    for (let i = 0; i < 200; i++) {
      const s = `${i}:${'é'.repeat(i % 7)};`;
      w.utf8(s);
      w.int(-i * 1_000_003);
      expected += s + String(-i * 1_000_003);
    }
    expect(written(w)).toBe(expected);
  });

  it('when integers are written, then they read as String(n)', () => {
    const w = writer();
    const ns = [0, 1, 9, 10, 99, 100, -1, -10, 2_147_483_647, -2_147_483_648, Number.MAX_SAFE_INTEGER, 1e15];
    for (const n of ns) {
      w.int(n);
      w.byte(0x2c);
    }
    expect(written(w)).toBe(ns.map(String).join(',') + ',');
  });
});

describe('CsvQuoting', () => {
  it.each([';', ',', '\t', ' ', '|', 'x', '.', '§', 'æ', '😀'])(
    'when the separator is %j, then values are quoted as csvQuoter quotes them',
    (sep) => {
      const csv = new CsvQuoting(sep);
      const quote = csvQuoter(sep);
      const values = [
        '',
        'plain',
        'a;b',
        'a,b',
        'a\tb',
        'a b',
        'a|b',
        'axb',
        'a.b',
        'a§b',
        'aæb',
        'a😀b',
        'a😁b',
        '"',
        'a\nb',
        'a\rb',
        'æøå',
        '😀',
      ];
      for (const v of values) {
        const w = writer(4);
        const b = Buffer.from(v, 'utf8');
        csv.bytes(w, b, 0, b.length);
        expect(written(w)).toBe(quote(v));
      }
    },
  );
});

describe('writeMillis and DateTimeWriter', () => {
  it('when durations of every shape are written, then they read as formatMillis', () => {
    const rnd = random(3);
    const values = [0, 1, 10, 100, 5, 50, 500, 120, 1050, 999, 1000, 60_000, 3_600_000, 86_400_000, -1, -86_400_001, 2_147_483_647];
    for (let i = 0; i < 5000; i++) values.push(Math.floor((rnd() - 0.1) * 10 ** Math.floor(rnd() * 10)));
    const w = writer();
    for (const v of values) {
      writeMillis(w, v);
      w.byte(0x20);
    }
    expect(written(w)).toBe(values.map((v) => formatMillis(v) + ' ').join(''));
  });

  it.each(['Offset', 'Local'] as const)(
    'when instants in any order and with fractions are written (%s), then they read as formatDateTime',
    (mode) => {
      const rnd = random(11);
      const values: number[] = [
        0,
        -0.5,
        -1,
        1.5,
        Date.UTC(2026, 2, 29, 0, 59, 59, 999),
        Date.UTC(2026, 2, 29, 1),
        Date.UTC(2026, 9, 25, 0, 30),
        Date.UTC(2026, 9, 25, 1, 30),
      ];
      for (let i = 0; i < 3000; i++) {
        const base = Date.UTC(2026, 2, 28) + Math.floor(rnd() * 40 * 86_400_000);
        values.push(i % 3 === 0 ? base + rnd() : base);
      }
      values.push(Date.UTC(9999, 11, 31, 22, 59, 59, 999), Date.UTC(1900, 0, 1, 12), Date.UTC(10000, 0, 1), Date.UTC(-1, 0, 1));
      const time = new DateTimeWriter(ZONE, mode);
      const w = writer();
      for (const v of values) {
        time.write(w, v);
        w.byte(0x20);
      }
      expect(written(w)).toBe(values.map((v) => formatDateTime(v, ZONE, mode) + ' ').join(''));
    },
  );
});

/** A binary COPY stream of the given tuples (fields as Buffers, null for NULL). */
function copyStream(tuples: (Buffer | null)[][]): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 4]), Buffer.from([1, 2, 3, 4])];
  for (const t of tuples) {
    const head = Buffer.alloc(2);
    head.writeInt16BE(t.length);
    parts.push(head);
    for (const f of t) {
      const len = Buffer.alloc(4);
      len.writeInt32BE(f === null ? -1 : f.length);
      parts.push(len);
      if (f !== null) parts.push(f);
    }
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

describe('BinaryCopyReader', () => {
  const int = (n: number, bytes: 2 | 4 | 8) => {
    const b = Buffer.alloc(bytes);
    if (bytes === 2) b.writeInt16BE(n);
    else if (bytes === 4) b.writeInt32BE(n);
    else b.writeBigInt64BE(BigInt(n));
    return b;
  };
  const tuples = Array.from({ length: 300 }, (_, i) => [
    Buffer.from(`row ${i} ${'æ'.repeat(i % 13)}`, 'utf8'),
    i % 5 === 0 ? null : int(i - 150, 2),
    int(i * 100_000, 4),
    int(i * 1_000_000_007, 8),
    Buffer.alloc(0),
  ]);
  const describeTuple = (t: Tuple) => [text(t, 0), t.len[1]! < 0 ? null : int16(t, 1), int32(t, 2), int64(t, 3), t.len[4]];
  const expected = tuples.map((t, i) => [t[0]!.toString('utf8'), i % 5 === 0 ? null : i - 150, i * 100_000, i * 1_000_000_007, 0]);

  it('when the data arrives in pieces of any size, then every tuple is read once, whole', () => {
    const data = copyStream(tuples);
    for (const size of [1, 2, 3, 7, 19, 64, 1000, data.length]) {
      const reader = new BinaryCopyReader();
      const seen: unknown[] = [];
      for (let p = 0; p < data.length; p += size) reader.feed(data.subarray(p, p + size), (t) => seen.push(describeTuple(t)));
      expect(reader.complete).toBe(true);
      expect(seen).toEqual(expected);
    }
  });

  it('when tuples are longer than the part of a chunk joined to complete them, then every tuple is still read once, whole', () => {
    const long = Array.from({ length: 12 }, (_, i) => [Buffer.from('x'.repeat(5_000 + i * 4_000), 'utf8'), int(i, 4)]);
    const data = copyStream(long);
    for (const size of [1_000, 17_000, 65_536, data.length]) {
      const reader = new BinaryCopyReader();
      const seen: unknown[] = [];
      for (let p = 0; p < data.length; p += size) reader.feed(data.subarray(p, p + size), (t) => seen.push([t.len[0], int32(t, 1)]));
      expect(reader.complete).toBe(true);
      expect(seen).toEqual(long.map((t, i) => [t[0]!.length, i]));
    }
    // Two pieces, the cut early in the longest tuple: the second piece alone completes it and ends the data.
    for (const cut of [data.length - 49_000, data.length - 40_000]) {
      const reader = new BinaryCopyReader();
      const seen: unknown[] = [];
      reader.feed(data.subarray(0, cut), (t) => seen.push([t.len[0], int32(t, 1)]));
      reader.feed(data.subarray(cut), (t) => seen.push([t.len[0], int32(t, 1)]));
      expect(reader.complete).toBe(true);
      expect(seen).toEqual(long.map((t, i) => [t[0]!.length, i]));
    }
  });

  it('when the data ends without its end marker, then the reader does not call it complete', () => {
    const data = copyStream(tuples);
    const reader = new BinaryCopyReader();
    reader.feed(data.subarray(0, data.length - 2), () => undefined);
    expect(reader.complete).toBe(false);
  });

  it('when a timestamp is read, then its microseconds are floored to the millisecond as Postgres floors them', () => {
    const us = (iso: string, extraUs: number) => BigInt(Date.parse(iso) - Date.UTC(2000, 0, 1)) * 1000n + BigInt(extraUs);
    const field = (v: bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigInt64BE(v);
      return b;
    };
    // floor(extract(epoch from t) * 1000)::int8 of each.
    const cases: [bigint, number][] = [
      [us('2026-05-06T10:16:41.123Z', 456), Date.parse('2026-05-06T10:16:41.123Z')],
      [us('1969-12-31T23:59:59.999Z', 500), -1],
      [us('1800-01-01T00:00:00.001Z', 999), Date.parse('1800-01-01T00:00:00.001Z')],
      [us('9999-12-31T23:59:59.999Z', 999), Date.parse('9999-12-31T23:59:59.999Z')],
    ];
    const data = copyStream(cases.map(([v]) => [field(v)]));
    const reader = new BinaryCopyReader();
    const got: number[] = [];
    reader.feed(data, (t) => got.push(timestampMs(t, 0)));
    expect(got).toEqual(cases.map(([, floor]) => floor));
  });
});

describe('BufferPool', () => {
  it('when a buffer is given back, then it is lent again, once; foreign buffers are ignored', () => {
    const pool = new BufferPool(1024, 2);
    const a = pool.take();
    pool.give(a.subarray(0, 10));
    pool.give(a.subarray(0, 10));
    pool.give(Buffer.alloc(1024));
    expect(pool.available).toBe(1);
    const b = pool.take();
    expect(b.buffer).toBe(a.buffer);
    expect(pool.available).toBe(0);
    expect(pool.take(4096).length).toBe(4096);
  });
});
