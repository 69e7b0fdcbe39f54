import type { Hash } from 'node:crypto';
import iconv from 'iconv-lite';
import JSONStream from 'JSONStream';
import { ParserOptions } from '@fast-csv/parse';
// fast-csv's row parser without its stream wrapper: the stream drops every row of a chunk that
// holds a syntax error, and a bulk import must answer each row before the broken one.
import { Parser } from '@fast-csv/parse/build/src/parser';

/**
 * Request bodies of many records, read as they arrive (docs/decisions.md, Bulk import): a JSON
 * array, NDJSON or CSV in, one record at a time out, with backpressure (each stage is an async
 * generator: nothing is read before the consumer asks for the next record).
 *
 * A record that alone cannot be used (an NDJSON line that is not JSON, a CSV row with the
 * wrong number of values, a null array element) is yielded as `{ invalid }` and reading goes
 * on. A body that cannot be read past some point (JSON syntax, CSV quoting, the size limit)
 * throws MalformedBodyError / BodyTooLargeError after the records before that point.
 */

export type BodyRecord = { value: unknown } | { invalid: string };

/** The body cannot be read past this point; the records before it were yielded. */
export class MalformedBodyError extends Error {
  constructor(
    message: string,
    /** The break is inside a record (a syntax error), which counts as a row of its own. */
    readonly inRecord = false,
  ) {
    super(message);
    this.name = 'MalformedBodyError';
  }
}

/** No byte of the body arrived for `idleMs` while the reader waited for one (a stalled upload). */
export class BodyIdleError extends Error {
  constructor(readonly idleMs: number) {
    super(`no byte of the request body arrived for ${idleMs} ms`);
    this.name = 'BodyIdleError';
  }
}

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the request body is over the limit of ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/**
 * Reads a request body as bytes, counting them against a limit and optionally hashing them.
 * `chunks()` may be called again after a consumer stopped early: it goes on where the last
 * one stopped (the request is read with destroyOnReturn off), which lets the rest of a broken
 * body be read into the hash.
 */
export class BodyReader {
  private consumed = 0;

  constructor(
    private readonly source: NodeJS.ReadableStream & { iterator?: (o: { destroyOnReturn: boolean }) => AsyncIterable<Buffer> },
    readonly limit: number,
    private readonly hash?: Hash,
    /**
     * A wait for the next chunk longer than this throws BodyIdleError (0: no limit). Only the
     * time spent waiting for bytes counts: while the consumer stores a batch, nothing is pulled.
     */
    private readonly idleMs = 0,
  ) {}

  get bytesRead(): number {
    return this.consumed;
  }

  async *chunks(): AsyncGenerator<Buffer> {
    const iterable: AsyncIterable<Buffer | string> =
      typeof this.source.iterator === 'function'
        ? this.source.iterator({ destroyOnReturn: false })
        : (this.source as AsyncIterable<Buffer>);
    for await (const raw of this.idleMs > 0 ? withIdleLimit(iterable, this.idleMs) : iterable) {
      const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
      if (this.consumed + chunk.length > this.limit) {
        // The bytes up to the limit still count: what is read before the limit does not
        // depend on how the body was cut into chunks.
        const part = chunk.subarray(0, this.limit - this.consumed);
        this.take(part);
        if (part.length > 0) yield part;
        throw new BodyTooLargeError(this.limit);
      }
      this.take(chunk);
      yield chunk;
    }
  }

  private take(chunk: Buffer): void {
    this.consumed += chunk.length;
    this.hash?.update(chunk);
  }
}

/** The items of `source`, throwing BodyIdleError when the next one takes longer than `idleMs` to come. */
async function* withIdleLimit<T>(source: AsyncIterable<T>, idleMs: number): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BodyIdleError(idleMs)), idleMs);
    });
    let next: IteratorResult<T>;
    try {
      next = await Promise.race([iterator.next(), idle]);
    } finally {
      clearTimeout(timer);
    }
    if (next.done) return;
    yield next.value;
  }
}

/** Bytes in `encoding` to text; a byte-order mark at the start is dropped. */
export async function* decodeText(bytes: AsyncIterable<Buffer>, encoding: string): AsyncGenerator<string> {
  const decoder = iconv.getDecoder(encoding);
  for await (const chunk of bytes) {
    const text = decoder.write(chunk);
    if (text) yield text;
  }
  const tail = decoder.end();
  if (tail) yield tail;
}

/** Text back to UTF-8 bytes (JSONStream parses bytes). */
async function* utf8Bytes(text: AsyncIterable<string>): AsyncGenerator<Buffer> {
  for await (const chunk of text) yield Buffer.from(chunk, 'utf8');
}

const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/**
 * The elements of a JSON array, parsed as the bytes arrive (JSONStream). JSONStream skips null
 * elements; their places are known from the indexes of the others and yielded as invalid.
 */
export async function* jsonArrayRecords(
  source: AsyncIterable<Buffer> | AsyncIterable<string>,
  textEncoding?: string,
): AsyncGenerator<BodyRecord> {
  const bytes = textEncoding === undefined ? (source as AsyncIterable<Buffer>) : utf8Bytes(source as AsyncIterable<string>);
  const parser = JSONStream.parse('$*');
  const parsed: { key: unknown; value: unknown }[] = [];
  let failure: string | undefined;
  parser.on('data', (item: { key: unknown; value: unknown }) => parsed.push(item));
  parser.on('error', (err: Error) => {
    failure ??= err.message;
  });
  let started = false;
  let lastByte = -1;
  let next = 0;

  function* take(): Generator<BodyRecord> {
    for (const { key, value } of parsed) {
      if (typeof key !== 'number' || key < next) {
        throw new MalformedBodyError('the body holds more than one JSON value; send one array');
      }
      for (; next < key; next++) yield { invalid: 'is null, not an object' };
      next = key + 1;
      yield { value };
    }
    parsed.length = 0;
  }

  for await (const chunk of bytes) {
    if (chunk.length === 0) continue;
    if (!started) {
      const first = chunk.findIndex((b) => !isWhitespace(b));
      if (first >= 0) {
        started = true;
        if (chunk[first] !== 0x5b /* [ */) throw new MalformedBodyError('the body must be a JSON array (it does not start with `[`)');
      }
    }
    for (let i = chunk.length - 1; i >= 0; i--) {
      if (!isWhitespace(chunk[i]!)) {
        lastByte = chunk[i]!;
        break;
      }
    }
    parser.write(chunk);
    yield* take();
    if (failure !== undefined) throw new MalformedBodyError(`not valid JSON: ${shorten(failure)}`, true);
  }
  parser.end();
  yield* take();
  if (failure !== undefined) throw new MalformedBodyError(`not valid JSON: ${shorten(failure)}`, true);
  if (!started) throw new MalformedBodyError('the body is empty');
  if (lastByte !== 0x5d /* ] */) throw new MalformedBodyError('the body ended before the JSON array was closed');
}

/**
 * NDJSON: one JSON value per line (LF or CRLF). Blank lines are skipped; a line that is not
 * JSON, or longer than `maxLineLength` characters, is an invalid record (the line is skipped
 * without being held in memory) and reading goes on with the next line.
 */
export async function* ndjsonRecords(text: AsyncIterable<string>, maxLineLength: number): AsyncGenerator<BodyRecord> {
  let carry = '';
  let overlong = false;
  let sawText = false;
  for await (const chunk of text) {
    if (chunk.length > 0) sawText = true;
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      if (newline < 0) {
        if (!overlong) {
          carry += chunk.slice(start);
          if (carry.length > maxLineLength) {
            overlong = true;
            carry = '';
          }
        }
        break;
      }
      if (overlong) {
        overlong = false;
        yield { invalid: `the line is longer than ${maxLineLength} characters` };
      } else {
        const line = carry + chunk.slice(start, newline);
        if (line.length > maxLineLength) yield { invalid: `the line is longer than ${maxLineLength} characters` };
        else {
          const record = ndjsonLine(line);
          if (record) yield record;
        }
      }
      carry = '';
      start = newline + 1;
    }
  }
  if (overlong) yield { invalid: `the line is longer than ${maxLineLength} characters` };
  else {
    const record = ndjsonLine(carry);
    if (record) yield record;
  }
  if (!sawText) throw new MalformedBodyError('the body is empty');
}

function ndjsonLine(line: string): BodyRecord | undefined {
  const trimmed = line.trim();
  if (trimmed === '') return undefined;
  try {
    return { value: JSON.parse(trimmed) };
  } catch (err) {
    return { invalid: `not valid JSON: ${shorten((err as Error).message)}` };
  }
}

export interface CsvOptions {
  /** One character (src/streams/csv.ts isValidCsvSeparator). */
  separator: string;
  /** Called with the header row's names before the first data row; may throw to refuse them. */
  onHeader?: (names: string[]) => void;
}

/**
 * CSV with a header row (RFC 4180 quoting; fast-csv's parser): each data row as an object of
 * header name → value. Blank lines are skipped. A row with another number of values than the
 * header is invalid; broken quoting ends the body after the rows before it.
 */
export async function* csvRecords(text: AsyncIterable<string>, options: CsvOptions): AsyncGenerator<BodyRecord> {
  const parser = new Parser(new ParserOptions({ delimiter: options.separator, ignoreEmpty: true }));
  let header: string[] | undefined;
  let rest = '';
  let sawText = false;

  function* records(rows: string[][]): Generator<BodyRecord> {
    for (const row of rows) {
      if (header === undefined) {
        header = row.map((name) => name.trim());
        checkHeader(header);
        options.onHeader?.(header);
        continue;
      }
      if (row.length !== header.length) {
        yield { invalid: `has ${row.length} value${row.length === 1 ? '' : 's'} where the header row has ${header.length} columns` };
        continue;
      }
      const value: Record<string, string> = {};
      for (let i = 0; i < header.length; i++) value[header[i]!] = row[i]!;
      yield { value };
    }
  }

  for await (const chunk of text) {
    if (chunk.length > 0) sawText = true;
    const parsed = parseCsv(parser, rest + chunk, true);
    rest = parsed.rest;
    yield* records(parsed.rows);
    if (parsed.error) throw new MalformedBodyError(`not valid CSV: ${csvMessage(parsed.error)}`, true);
  }
  const parsed = parseCsv(parser, rest, false);
  yield* records(parsed.rows);
  if (parsed.error) throw new MalformedBodyError(`not valid CSV: ${csvMessage(parsed.error)}`, true);
  if (!sawText || header === undefined) throw new MalformedBodyError('the body is empty: a CSV body starts with a header row');
}

function checkHeader(names: string[]): void {
  const seen = new Set<string>();
  for (const [i, name] of names.entries()) {
    if (name === '') throw new MalformedBodyError(`the header row's column ${i + 1} has no name`);
    const key = name.toLowerCase();
    if (seen.has(key)) throw new MalformedBodyError(`the header row names the column ${JSON.stringify(name)} twice`);
    seen.add(key);
  }
}

interface CsvParsed {
  rows: string[][];
  /** Text of an unfinished row, to be parsed with the next chunk. */
  rest: string;
  error?: Error;
}

/**
 * Parses the complete rows of `text`. On a syntax error the text is parsed again line by
 * line, so the rows before the broken one are still returned (once per body, on failure).
 */
function parseCsv(parser: Parser, text: string, more: boolean): CsvParsed {
  if (text === '') return { rows: [], rest: '' };
  try {
    const { line, rows } = parser.parse(text, more);
    return { rows: rows, rest: line };
  } catch (err) {
    const rows: string[][] = [];
    let rest = '';
    let start = 0;
    while (start < text.length) {
      const newline = text.indexOf('\n', start);
      const end = newline < 0 ? text.length : newline + 1;
      try {
        const parsed = parser.parse(rest + text.slice(start, end), more || end < text.length);
        rest = parsed.line;
        rows.push(...(parsed.rows as string[][]));
      } catch (lineErr) {
        return { rows, rest: '', error: lineErr as Error };
      }
      start = end;
    }
    // Not reproduced line by line (cannot happen with fast-csv's grammar): report the first error.
    return { rows, rest: '', error: err as Error };
  }
}

/** fast-csv quotes the rest of the body in its messages: keep the reason and a little context. */
function csvMessage(err: Error): string {
  return shorten(err.message.replace(/^Parse Error: /, ''));
}

function shorten(message: string, max = 160): string {
  const flat = message.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
