import { PassThrough, Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { byteLines } from '../../src/streams/byteLines';
import { coalesce } from '../../src/streams/coalesce';
import { csvFormatter, isValidCsvSeparator } from '../../src/streams/csv';
import { canEncode, charsetName, csvSeparatorProblem, encoderStream, isKnownEncoding } from '../../src/streams/encoding';
import { jsonArrayText, rowsToText } from '../../src/streams/rowsToText';

/** Runs rows through the transforms and returns every chunk the last one emitted. */
async function collect(rows: unknown[], transforms: Transform[]): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    decodeStrings: false,
    write(chunk: Buffer | string, _enc, cb) {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
      cb();
    },
  });
  await pipeline([Readable.from(rows, { objectMode: true }), ...transforms, sink]);
  return chunks;
}

async function text(rows: unknown[], transforms: Transform[]): Promise<string> {
  return Buffer.concat(await collect(rows, transforms)).toString('utf8');
}

describe('rowsToText', () => {
  /** Every chunk the stage hands on, as it was handed on. */
  async function chunksOf(stage: Readable): Promise<(string | Buffer)[]> {
    const chunks: (string | Buffer)[] = [];
    for await (const chunk of stage) chunks.push(chunk as string | Buffer);
    return chunks;
  }
  const joined = (chunks: (string | Buffer)[]) => chunks.map((c) => c.toString()).join('');
  const source = (rows: unknown[]) => Readable.from(rows, { objectMode: true });

  it('when the source is empty, then a JSON array is []', async () => {
    expect(joined(await chunksOf(jsonArrayText(source([]), JSON.stringify)))).toBe('[]');
  });

  it('when rows arrive, then a JSON array of them in order leaves as UTF-8 Buffers', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => ({ id: i, name: `n"${i}\næøå`, ok: i % 2 === 0, none: null }));
    const chunks = await chunksOf(jsonArrayText(source(rows), JSON.stringify));
    expect(chunks.every((c) => Buffer.isBuffer(c))).toBe(true);
    const out = joined(chunks);
    expect(JSON.parse(out)).toEqual(rows);
    expect(out.startsWith('[{')).toBe(true);
  });

  it('when a row cannot be serialised, then the stream fails instead of writing a broken array', async () => {
    await expect(chunksOf(jsonArrayText(source([{ a: 1 }, { big: BigInt(1) }]), JSON.stringify))).rejects.toThrow(/BigInt/);
  });

  it('when the output is not UTF-8, then the head comes first also for no rows and the chunks are strings', async () => {
    const empty = await chunksOf(rowsToText(source([]), { head: 'a;b\r\n', format: String }));
    expect(empty).toEqual(['a;b\r\n']);
    const lines = await chunksOf(rowsToText<string>(source(['1;2\r\n', '3;4\r\n']), { head: 'a;b\r\n', format: (l) => l }));
    expect(lines.every((c) => typeof c === 'string')).toBe(true);
    expect(lines.join('')).toBe('a;b\r\n1;2\r\n3;4\r\n');
  });

  it('when the result is destroyed, then the source is destroyed and closes before the result', async () => {
    // Like a cursor, which closes once Postgres has confirmed the close.
    const rows = new Readable({
      objectMode: true,
      read() {},
      destroy(err, callback) {
        setTimeout(() => callback(err), 20);
      },
    });
    const text = jsonArrayText(rows, JSON.stringify);
    const closed: string[] = [];
    rows.once('close', () => closed.push('source'));
    const textClosed = new Promise((resolve) => text.once('close', resolve)).then(() => closed.push('result'));
    text.destroy();
    await textClosed;
    expect(rows.destroyed).toBe(true);
    expect(closed).toEqual(['source', 'result']);
  });
});

describe('csvFormatter', () => {
  const csv = (rows: unknown[], headers: string[], separator: string) => text(rows, [csvFormatter({ headers, separator }), coalesce()]);

  it('when there are no rows, then the header line is still written', async () => {
    expect(await csv([], ['a', 'b', 'c'], ';')).toBe('a;b;c\r\n');
  });

  it('when rows arrive, then every line ends with CRLF', async () => {
    expect(
      await csv(
        [
          [1, 'x'],
          [2, 'y'],
        ],
        ['id', 'v'],
        ';',
      ),
    ).toBe('id;v\r\n1;x\r\n2;y\r\n');
  });

  it('when a value contains the separator, a quote, CR or LF, then it is quoted with quotes doubled', async () => {
    const out = await csv([['a;b', 'say "hi"', 'cr\rhere', 'lf\nhere', 'plain']], ['s', 'q', 'cr', 'lf', 'p'], ';');
    expect(out).toBe('s;q;cr;lf;p\r\n"a;b";"say ""hi""";"cr\rhere";"lf\nhere";plain\r\n');
  });

  it('when the separator is a comma, then commas are quoted and semicolons are not', async () => {
    expect(await csv([['a,b', 'c;d']], ['x', 'y'], ',')).toBe('x,y\r\n"a,b",c;d\r\n');
  });

  it('when the separator is a tab, then tabs are quoted', async () => {
    expect(await csv([['a\tb', 'c,d']], ['x', 'y'], '\t')).toBe('x\ty\r\n"a\tb"\tc,d\r\n');
  });

  it('when values are absent or boolean, then they are empty and true/false', async () => {
    expect(await csv([[null, undefined, true, false, 0]], ['a', 'b', 'c', 'd', 'e'], ';')).toBe('a;b;c;d;e\r\n;;true;false;0\r\n');
  });

  it('when rows are objects, then their values are taken in header order', async () => {
    expect(await csv([{ b: 2, a: 1 }, { a: 'x' }], ['a', 'b'], ';')).toBe('a;b\r\n1;2\r\nx;\r\n');
  });

  it('when a separator would break quoting, then it is refused', () => {
    for (const bad of ['', ';;', '"', '\r', '\n', ']', '\\']) expect(isValidCsvSeparator(bad)).toBe(false);
    for (const good of [';', ',', '\t', '|', ' ']) expect(isValidCsvSeparator(good)).toBe(true);
    expect(() => csvFormatter({ headers: ['a'], separator: '"' })).toThrow(RangeError);
  });
});

describe('csvSeparatorProblem', () => {
  it('when the encoding has the separator, then it can be written and read; `?` only read in a legacy one', () => {
    expect(csvSeparatorProblem(';', 'windows-1252', 'write')).toBeUndefined();
    expect(csvSeparatorProblem('§', 'iso-8859-1', 'read')).toBeUndefined();
    expect(csvSeparatorProblem('\uFFFD', 'utf-8', 'read')).toBeUndefined();
    expect(csvSeparatorProblem('?', 'windows-1252', 'read')).toBeUndefined();
    expect(csvSeparatorProblem('?', 'windows-1252', 'write')).toMatch(/^cannot be `\?`/);
  });

  it('when the encoding lacks the separator (U+FFFD in a legacy one), or it is the decoder’s mark, then it names why', () => {
    expect(csvSeparatorProblem('\uFFFD', 'windows-1252', 'write')).toBe('cannot be written in the chosen Encoding');
    expect(csvSeparatorProblem('\uFFFD', 'windows-1252', 'read')).toBe(
      'cannot be read in windows-1252: windows-1252 has no such character',
    );
    expect(csvSeparatorProblem('€', 'iso-8859-1', 'read')).toBe('cannot be read in iso-8859-1: iso-8859-1 has no such character');
    expect(csvSeparatorProblem('\uFDD0', 'utf-8', 'read')).toBe('cannot be read in utf-8: it is the mark for bytes not valid in it');
  });
});

describe('encoding', () => {
  it.each([
    ['utf8', 'utf-8'],
    ['UTF8', 'utf-8'],
    ['utf-8', 'utf-8'],
    ['1252', 'windows-1252'],
    ['cp1252', 'windows-1252'],
    ['Windows-1252', 'windows-1252'],
    ['win1250', 'windows-1250'],
    ['latin1', 'iso-8859-1'],
    ['ISO8859-1', 'iso-8859-1'],
    ['iso-8859-15', 'iso-8859-15'],
    ['cp865', 'ibm865'],
    ['865', 'ibm865'],
    ['utf7', 'utf-7'],
    ['ascii', 'us-ascii'],
    ['macroman', 'macintosh'],
    ['koi8r', 'koi8-r'],
    ['gbk', 'gbk'],
  ])('when the encoding is spelt %s, then its charset is named %s', (spelt, registered) => {
    expect(charsetName(spelt)).toBe(registered);
  });

  it('when windows-1252 is asked for, then æøåé are single bytes E6 F8 E5 E9', async () => {
    const bytes = Buffer.concat(await collect(['æøåé'], [encoderStream('windows-1252'), coalesce()]));
    expect([...bytes]).toEqual([0xe6, 0xf8, 0xe5, 0xe9]);
  });

  it('when CSV is written in windows-1252, then the UTF-8 bytes of the formatter are transcoded', async () => {
    const bytes = Buffer.concat(
      await collect([['æøå', 'é']], [csvFormatter({ headers: ['navn', 'by'], separator: ';' }), encoderStream('windows-1252'), coalesce()]),
    );
    expect(bytes).toEqual(Buffer.from([...Buffer.from('navn;by\r\n'), 0xe6, 0xf8, 0xe5, 0x3b, 0xe9, 0x0d, 0x0a]));
  });

  it('when text arrives, then its encoded bytes leave without waiting for the end', async () => {
    const enc = encoderStream('windows-1252');
    const first = new Promise<Buffer>((resolve) => enc.once('data', resolve));
    enc.write('æ;');
    enc.write(Buffer.from('ø\r\n'));
    expect([...(await first)]).toEqual([0xe6, 0x3b, 0xf8, 0x0d, 0x0a]);
    enc.destroy();
  });

  it('when the text holds U+FFFD, then a legacy charset gets ? (a byte it defines) and UTF-16 the character itself', async () => {
    const legacy = Buffer.concat(await collect(['a\uFFFDb'], [encoderStream('windows-1252'), coalesce()]));
    expect([...legacy]).toEqual([0x61, 0x3f, 0x62]);
    const utf16 = Buffer.concat(await collect(['a\uFFFDb'], [encoderStream('utf-16le'), coalesce()]));
    expect(utf16.toString('utf16le')).toContain('a\uFFFDb');
  });

  it('when a text is checked for an encoding, then it can be written only if the encoder stream writes it as itself, U+FFFD included', async () => {
    for (const encoding of ['windows-1252', 'iso-8859-1', 'ascii', 'ibm865', 'windows-1257', 'macintosh', 'shift_jis']) {
      expect({ encoding, fffd: canEncode('\uFFFD', encoding), semicolon: canEncode(';', encoding) }).toEqual({
        encoding,
        fffd: false,
        semicolon: true,
      });
    }
    for (const encoding of ['utf-8', 'utf-16le', 'utf-16be', 'utf-32'])
      expect({ encoding, fffd: canEncode('\uFFFD', encoding) }).toEqual({ encoding, fffd: true });
    // What the check says is what the stream does.
    const written = Buffer.concat(await collect(['\uFFFD'], [encoderStream('windows-1257'), coalesce()]));
    expect(written.toString('latin1')).toBe('?');
  });

  it('when a UTF-8 Buffer ends inside a character, then the character is not broken', async () => {
    const utf8 = Buffer.from('æ');
    const bytes = Buffer.concat(await collect([utf8.subarray(0, 1), utf8.subarray(1)], [encoderStream('latin1')]));
    expect([...bytes]).toEqual([0xe6]);
  });

  it('when the encoding is UTF-8, then strings pass through untouched', async () => {
    const out: unknown[] = [];
    const enc = encoderStream('UTF-8');
    enc.on('data', (c) => out.push(c));
    enc.write('æ');
    enc.end();
    await new Promise((r) => enc.once('end', r));
    expect(out).toEqual(['æ']);
  });

  it('when names are checked, then iconv-lite encodings are known and others are not', () => {
    for (const name of ['utf-8', 'UTF8', 'windows-1252', 'ISO-8859-1', 'latin1', 'utf-16le']) expect(isKnownEncoding(name)).toBe(true);
    for (const name of ['', 'nope', 'base64', 'hex']) expect(isKnownEncoding(name)).toBe(false);
    expect(() => encoderStream('nope')).toThrow(RangeError);
  });
});

describe('coalesce', () => {
  it('when many small writes arrive, then few chunks of about 64 KiB leave', async () => {
    const row = 'x'.repeat(49) + '\n';
    const chunks = await collect(
      Array.from({ length: 20000 }, () => row),
      [coalesce()],
    );
    const total = chunks.reduce((n, c) => n + c.length, 0);
    expect(total).toBe(20000 * 50);
    expect(chunks.length).toBeLessThanOrEqual(Math.ceil(total / 65536) + 1);
    for (const c of chunks.slice(0, -1)) expect(c.length).toBeGreaterThanOrEqual(65536);
  });

  it('when strings and Buffers are mixed, then their order is kept', async () => {
    const out = await text(['a', Buffer.from('b'), 'c', Buffer.from('d')], [coalesce()]);
    expect(out).toBe('abcd');
  });

  it('when a chunk is already large, then it passes without being copied', async () => {
    const big = Buffer.alloc(100_000, 1);
    const chunks = await collect([big], [coalesce()]);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toBe(big);
  });

  it('when the first bytes arrive, then they leave without waiting for the delay', async () => {
    const c = coalesce({ maxDelayMs: 10_000 });
    const first = new Promise<string>((resolve) => c.once('data', (chunk: Buffer) => resolve(chunk.toString())));
    c.write('[{"a":1}');
    expect(await first).toBe('[{"a":1}');
    c.destroy();
  });

  it('when later data waits longer than the delay, then it is flushed without waiting for more', async () => {
    const c = coalesce({ maxDelayMs: 20 });
    const input = new PassThrough({ objectMode: true });
    const received: Array<{ at: number; text: string }> = [];
    let start = Date.now();
    c.on('data', (chunk: Buffer) => received.push({ at: Date.now() - start, text: chunk.toString() }));
    input.pipe(c);
    input.write('[{"a":1}');
    await new Promise((r) => setTimeout(r, 50));
    start = Date.now();
    input.write(',{"a":2}');
    input.write(',{"a":3}');
    await new Promise((r) => setTimeout(r, 150));
    expect(received.map((r) => r.text)).toEqual(['[{"a":1}', ',{"a":2},{"a":3}']);
    expect(received[1]!.at).toBeGreaterThanOrEqual(15);
    expect(received[1]!.at).toBeLessThan(120);
    input.end(']');
    await new Promise((r) => c.once('end', r));
    expect(received.map((r) => r.text).join('')).toBe('[{"a":1},{"a":2},{"a":3}]');
  });

  it('when destroyed with data pending, then the timer does not fire into a dead stream', async () => {
    const c = coalesce({ maxDelayMs: 10 });
    const data = jest.fn();
    c.on('data', data);
    c.write('pending');
    c.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(data).not.toHaveBeenCalled();
  });
});

describe('byteLines', () => {
  const lines = async (chunks: (Buffer | string)[]) => {
    const out: string[] = [];
    for await (const line of byteLines(Readable.from(chunks))) out.push(line.toString('latin1'));
    return out;
  };

  it('when lines end in LF or CRLF, then each comes without its line end, and a last line without one comes too', async () => {
    expect(await lines(['a\nb\r\n', '\nc'])).toEqual(['a', 'b', '', 'c']);
    expect(await lines(['a\n'])).toEqual(['a']);
    expect(await lines([])).toEqual([]);
  });

  it('when a line or a CRLF is split across chunks, then it comes whole', async () => {
    expect(await lines([Buffer.from('ab'), Buffer.from('c\r'), Buffer.from('\nd'), Buffer.from('e\n')])).toEqual(['abc', 'de']);
  });

  it('when a multi-byte character or a byte that is not UTF-8 is in a line, then its bytes are kept as they came', async () => {
    const chunks = [Buffer.from([0x4b, 0xc3]), Buffer.from([0xb8, 0x0a, 0x4b, 0xf8, 0x67, 0x65, 0x0a])];
    const out: Buffer[] = [];
    for await (const line of byteLines(Readable.from(chunks))) out.push(line);
    expect(out).toEqual([Buffer.from('Kø', 'utf8'), Buffer.from([0x4b, 0xf8, 0x67, 0x65])]);
  });
});
