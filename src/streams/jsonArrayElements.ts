import { utf8Text } from './utf8Text';
/**
 * The elements of a JSON array from UTF-8 bytes that arrive in chunks (docs/decisions.md, Bulk
 * import): one pass over each byte finds where each element starts and ends (strings, escapes
 * and nesting are followed; the grammar inside an element is left to JSON.parse), and each
 * element is handed on as its text.
 *
 * - An element larger than `maxElementBytes` is given as `{ tooLarge }`: its bytes are dropped
 *   as they arrive, so memory is bounded by the limit, not by the element.
 * - What cannot be an array of elements (another first byte than `[`, a missing comma, a value
 *   after the closing `]`, an end before it) throws JsonArraySyntaxError; the elements before
 *   it have been given.
 *
 * Every byte that matters here is ASCII, and no byte of a multi-byte UTF-8 character is, so the
 * bytes can be scanned without decoding them.
 */

export type JsonArrayElement = { text: string } | { tooLarge: true };

export class JsonArraySyntaxError extends Error {
  constructor(
    message: string,
    /** The error is where an element should be (it counts as a row of its own). */
    readonly inElement: boolean,
  ) {
    super(message);
    this.name = 'JsonArraySyntaxError';
  }
}

const enum State {
  /** Before the opening `[`. */
  Before,
  /** After `[`: an element or `]`. */
  First,
  /** After a comma: an element. */
  Next,
  Element,
  /** After an element: a comma or `]`. */
  After,
  /** After the closing `]`. */
  Done,
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/** A UTF-8 byte order mark, which Windows editors write at the start of a file. */
const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf];

export class JsonArraySplitter {
  private state = State.Before;
  /** Open brackets of the current element; 0 for a string, number or literal. */
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The element's bytes in the chunks before this one (views, not copies). */
  private parts: Buffer[] = [];
  private bytes = 0;
  private tooLarge = false;
  /** Bytes of a byte order mark read at the start of the body; -1 once past the start. */
  private markBytes = 0;

  constructor(private readonly maxElementBytes: number) {}

  /** Whether a byte other than whitespace was read. */
  get started(): boolean {
    return this.state !== State.Before;
  }

  /** The elements that end in `chunk`. */
  *write(chunk: Buffer): Generator<JsonArrayElement> {
    const n = chunk.length;
    let start = 0;
    let i = 0;
    while (i < n) {
      if (this.state === State.Element) {
        const end = this.scanElement(chunk, i);
        if (end < 0) break;
        i = end;
        yield this.finishElement(chunk, start, end);
        this.state = State.After;
        continue;
      }
      const c = chunk[i]!;
      if (this.markBytes >= 0) {
        // A byte order mark opening the body is skipped, as the decoders of NDJSON and CSV bodies skip it.
        if (c === BYTE_ORDER_MARK[this.markBytes]) {
          this.markBytes = this.markBytes === BYTE_ORDER_MARK.length - 1 ? -1 : this.markBytes + 1;
          i++;
          continue;
        }
        if (this.markBytes > 0) throw new JsonArraySyntaxError('the body must be a JSON array (it does not start with `[`)', false);
        this.markBytes = -1;
      }
      if (isWhitespace(c)) {
        i++;
        continue;
      }
      switch (this.state) {
        case State.Before:
          if (c !== OPEN_ARRAY) throw new JsonArraySyntaxError('the body must be a JSON array (it does not start with `[`)', false);
          this.state = State.First;
          i++;
          break;
        case State.First:
        case State.Next:
          if (c === CLOSE_ARRAY && this.state === State.First) {
            this.state = State.Done;
            i++;
            break;
          }
          if (c === CLOSE_ARRAY || c === COMMA)
            throw new JsonArraySyntaxError(`not valid JSON: a value is missing before \`${String.fromCharCode(c)}\``, true);
          this.state = State.Element;
          this.depth = c === OPEN_ARRAY || c === OPEN_OBJECT ? 1 : 0;
          this.inString = c === QUOTE;
          start = i;
          i++;
          break;
        case State.After:
          if (c === COMMA) this.state = State.Next;
          else if (c === CLOSE_ARRAY) this.state = State.Done;
          else throw new JsonArraySyntaxError(`not valid JSON: \`${String.fromCharCode(c)}\` where a comma or \`]\` must come`, true);
          i++;
          break;
        case State.Done:
          throw new JsonArraySyntaxError('the body holds more than one JSON value; send one array', false);
      }
    }
    if (this.state === State.Element) this.keep(chunk, start, n);
  }

  /** Checks that the array was closed. */
  end(): void {
    if (this.state === State.Before) throw new JsonArraySyntaxError('the body is empty', false);
    if (this.state !== State.Done)
      throw new JsonArraySyntaxError('the body ended before the JSON array was closed', this.state === State.Element);
  }

  /**
   * Follows the current element from `from`: the index after its last byte, or -1 when it goes
   * on past this chunk. A number or literal ends before whitespace, a comma or `]`.
   */
  private scanElement(chunk: Buffer, from: number): number {
    const n = chunk.length;
    let i = from;
    while (i < n) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        for (; i < n; i++) {
          const c = chunk[i]!;
          if (c === QUOTE || c === BACKSLASH) break;
        }
        if (i === n) return -1;
        if (chunk[i] === BACKSLASH) {
          this.escaped = true;
          i++;
          continue;
        }
        this.inString = false;
        i++;
        if (this.depth === 0) return i;
        continue;
      }
      const c = chunk[i]!;
      if (this.depth === 0) {
        // A number or literal (`true`, `null`, …).
        if (endsLiteral(c)) return i;
        i++;
        continue;
      }
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_ARRAY || c === OPEN_OBJECT) this.depth++;
      else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && --this.depth === 0) return i + 1;
      i++;
    }
    return -1;
  }

  private keep(chunk: Buffer, from: number, to: number): void {
    this.bytes += to - from;
    if (this.tooLarge) return;
    if (this.bytes > this.maxElementBytes) {
      this.tooLarge = true;
      this.parts = [];
    } else if (to > from) {
      this.parts.push(chunk.subarray(from, to));
    }
  }

  private finishElement(chunk: Buffer, from: number, to: number): JsonArrayElement {
    this.keep(chunk, from, to);
    const { parts, tooLarge } = this;
    this.parts = [];
    this.bytes = 0;
    this.tooLarge = false;
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    if (tooLarge) return { tooLarge: true };
    return { text: utf8Text(parts.length === 1 ? parts[0]! : Buffer.concat(parts)) };
  }
}

/** What ends a number or literal element. */
function endsLiteral(byte: number): boolean {
  return isWhitespace(byte) || byte === COMMA || byte === CLOSE_ARRAY;
}
