import type { Hash } from 'node:crypto';
import iconv from 'iconv-lite';
import { isUtf8 as isUtf8Name } from './encoding';
import { INVALID_BYTE, shownText, Utf8TextDecoder } from './utf8Text';
import { CsvRow, CsvRowParser, CsvSyntaxError } from './csvRows';
import { JsonArraySplitter, JsonArraySyntaxError } from './jsonArrayElements';

/**
 * Request bodies of many records, read as they arrive (docs/decisions.md, Bulk import): a JSON
 * array, NDJSON or CSV in, one record at a time out, with backpressure (each stage is an async
 * generator: nothing is read before the consumer asks for the next record).
 *
 * Each stage reads its input once, keeping its place between chunks: the cost is linear in
 * the body, however its rows are cut into chunks.
 *
 * A record that alone cannot be used (an NDJSON line that is not JSON, a CSV row with the
 * wrong number of values, a record larger than the row limit) is yielded as `{ invalid }` and
 * reading goes on; a record over the limit is dropped as it arrives, so memory is bounded by
 * the limit. A body that cannot be read past some point (JSON syntax, CSV quoting, the size
 * limit) throws MalformedBodyError / BodyTooLargeError after the records before that point.
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

/**
 * The CSV header row holds bytes that are not valid in the body's encoding (a windows-1252 file
 * read as UTF-8): its names cannot be matched to fields. `columns`: those names, as shownText shows them.
 */
export class UndecodableHeaderError extends Error {
  constructor(readonly columns: string[]) {
    super(`the header row holds bytes that are not valid in the body's encoding: ${columns.map((c) => JSON.stringify(c)).join(', ')}`);
    this.name = 'UndecodableHeaderError';
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

/**
 * Bytes in `encoding` to text; a byte-order mark at the start is dropped. Bytes the encoding
 * does not define become INVALID_BYTE (src/streams/utf8Text.ts), not U+FFFD, which UTF-8 text
 * may hold as a character of its own.
 */
export async function* decodeText(bytes: AsyncIterable<Buffer>, encoding: string): AsyncGenerator<string> {
  const decoder = isUtf8Name(encoding) ? new Utf8TextDecoder() : legacyDecoder(encoding);
  let first = true;
  for await (const chunk of bytes) {
    let text = decoder.write(chunk);
    if (first && text) {
      first = false;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    if (text) yield text;
  }
  const tail = decoder.end();
  if (tail) yield tail;
}

/** iconv-lite's decoder, with what it could not decode (U+FFFD in its output) as INVALID_BYTE. */
function legacyDecoder(encoding: string): { write(chunk: Buffer): string; end(): string } {
  const decoder = iconv.getDecoder(encoding);
  const marked = (text: string | undefined) => (text ?? '').replaceAll('\uFFFD', INVALID_BYTE);
  return { write: (chunk) => marked(decoder.write(chunk)), end: () => marked(decoder.end()) };
}

/** Text back to UTF-8 bytes (the JSON array is split as bytes). */
async function* utf8Bytes(text: AsyncIterable<string>): AsyncGenerator<Buffer> {
  for await (const chunk of text) yield Buffer.from(chunk, 'utf8');
}

/** The answer for a record over the row limit. */
function tooLargeMessage(maxRowBytes: number): string {
  return `the row is larger than ${maxRowBytes} bytes (BULK_ROW_MAX_BYTES)`;
}

/**
 * The elements of a JSON array, split as the bytes arrive (src/streams/jsonArrayElements.ts)
 * and each parsed with JSON.parse. An element that is not valid JSON ends the body: after a
 * broken element the split cannot be trusted.
 */
export async function* jsonArrayRecords(
  source: AsyncIterable<Buffer> | AsyncIterable<string>,
  maxRowBytes: number,
  textEncoding?: string,
): AsyncGenerator<BodyRecord> {
  const bytes = textEncoding === undefined ? (source as AsyncIterable<Buffer>) : utf8Bytes(source as AsyncIterable<string>);
  const splitter = new JsonArraySplitter(maxRowBytes);
  try {
    for await (const chunk of bytes) {
      for (const element of splitter.write(chunk)) {
        if ('tooLarge' in element) {
          yield { invalid: tooLargeMessage(maxRowBytes) };
          continue;
        }
        let value: unknown;
        try {
          value = JSON.parse(element.text);
        } catch (err) {
          throw new MalformedBodyError(`not valid JSON: ${shorten((err as Error).message)}`, true);
        }
        yield { value };
      }
    }
    splitter.end();
  } catch (err) {
    if (err instanceof JsonArraySyntaxError) throw new MalformedBodyError(err.message, err.inElement);
    throw err;
  }
}

/**
 * NDJSON: one JSON value per line (LF or CRLF). Blank lines are skipped; a line that is not
 * JSON, or larger than `maxRowBytes` (UTF-8), is an invalid record (an over-long line is
 * dropped as it arrives) and reading goes on with the next line.
 */
export async function* ndjsonRecords(text: AsyncIterable<string>, maxRowBytes: number): AsyncGenerator<BodyRecord> {
  const tooLarge: BodyRecord = { invalid: tooLargeMessage(maxRowBytes) };
  let carry = '';
  let carryBytes = 0;
  let overlong = false;
  let sawText = false;
  for await (const chunk of text) {
    if (chunk.length > 0) sawText = true;
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      if (newline < 0) {
        if (!overlong && start < chunk.length) {
          const rest = chunk.slice(start);
          carryBytes += Buffer.byteLength(rest, 'utf8');
          if (carryBytes > maxRowBytes) {
            overlong = true;
            carry = '';
          } else {
            carry += rest;
          }
        }
        break;
      }
      if (overlong) {
        yield tooLarge;
      } else {
        const part = chunk.slice(start, newline);
        if (carryBytes + Buffer.byteLength(part, 'utf8') > maxRowBytes) yield tooLarge;
        else {
          const record = ndjsonLine(carry + part);
          if (record) yield record;
        }
      }
      overlong = false;
      carry = '';
      carryBytes = 0;
      start = newline + 1;
    }
  }
  if (overlong) yield tooLarge;
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
  /** Largest row, in UTF-8 bytes. */
  maxRowBytes: number;
  /** Called with the header row's names before the first data row; may throw to refuse them. */
  onHeader?: (names: string[]) => void;
}

/**
 * CSV with a header row (RFC 4180 quoting; src/streams/csvRows.ts): each data row as an object
 * of header name → value. Blank lines are skipped. A row with another number of values than
 * the header, or larger than the row limit, is invalid; broken quoting ends the body after the
 * rows before it. A header row holding bytes the encoding could not read throws UndecodableHeaderError.
 */
export async function* csvRecords(text: AsyncIterable<string>, options: CsvOptions): AsyncGenerator<BodyRecord> {
  const parser = new CsvRowParser(options.separator, options.maxRowBytes);
  let header: string[] | undefined;
  let sawText = false;

  function* records(rows: Iterable<CsvRow>): Generator<BodyRecord> {
    for (const row of rows) {
      if (header === undefined) {
        if ('tooLarge' in row)
          throw new MalformedBodyError(`the header row is larger than ${options.maxRowBytes} bytes (BULK_ROW_MAX_BYTES)`);
        header = row.values.map((name) => name.trim());
        // Before the other checks: two names may differ only in the bytes that could not be read.
        const undecodable = header.filter((name) => name.includes(INVALID_BYTE));
        if (undecodable.length > 0) throw new UndecodableHeaderError(undecodable.map(shownText));
        checkHeader(header);
        options.onHeader?.(header);
        continue;
      }
      if ('tooLarge' in row) {
        yield { invalid: tooLargeMessage(options.maxRowBytes) };
        continue;
      }
      const { values } = row;
      if (values.length !== header.length) {
        yield { invalid: `has ${values.length} value${values.length === 1 ? '' : 's'} where the header row has ${header.length} columns` };
        continue;
      }
      const value: Record<string, string> = {};
      for (let i = 0; i < header.length; i++) value[header[i]!] = values[i]!;
      yield { value };
    }
  }

  try {
    for await (const chunk of text) {
      if (chunk.length > 0) sawText = true;
      yield* records(parser.write(chunk));
    }
    yield* records(parser.end());
  } catch (err) {
    if (err instanceof CsvSyntaxError) throw new MalformedBodyError(`not valid CSV: ${shorten(err.message)}`, true);
    throw err;
  }
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

/** A parser's message for an answer: one line, at most `max` characters, the text it quotes as shownText shows it. */
function shorten(message: string, max = 160): string {
  const flat = shownText(message).replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
