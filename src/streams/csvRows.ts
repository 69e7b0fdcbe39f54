/**
 * CSV rows from text that arrives in chunks (docs/decisions.md, Bulk import): RFC 4180 quoting,
 * one pass over each character. The parser keeps its place between chunks, so a row split
 * across a thousand chunks costs what it costs in one; fast-csv's parser starts an unfinished
 * row again with every chunk, which made a long row quadratic.
 *
 * - Rows end at LF, CRLF or CR. A row whose values are all empty or blank is skipped.
 * - A value starting with `"` (after spaces) is quoted: `""` inside is a quote, separators and
 *   line ends inside are text; after the closing quote only spaces may come before the
 *   separator or the line end. A quote inside an unquoted value is text.
 * - A row larger than `maxRowBytes` (UTF-8 bytes of its text, line end left out) is given as
 *   `{ tooLarge }` without its values: they are dropped as they arrive, so memory is bounded by
 *   the limit, not by the row.
 * - Broken quoting throws CsvSyntaxError; the rows before it have been given.
 */

export type CsvRow = { values: string[] } | { tooLarge: true };

export class CsvSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CsvSyntaxError';
  }
}

const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const TAB = 0x09;

const enum State {
  /** At the start of a value; `field` holds only the spaces read so far. */
  FieldStart,
  Unquoted,
  Quoted,
  /** A quote inside a quoted value: the closing one, or the first of `""`. */
  QuoteInQuoted,
  /** After a closing quote: spaces, then the separator or a line end. */
  AfterQuoted,
  /** After a CR that ended a row: an LF next belongs to it. */
  AfterCr,
}

export class CsvRowParser {
  private readonly separator: number;
  private state = State.FieldStart;
  private values: string[] = [];
  private field = '';
  /** Bytes of the current row in the chunks before this one. */
  private rowBytes = 0;
  /** The current row went over the limit: its values are no longer kept. */
  private tooLarge = false;

  constructor(
    separator: string,
    private readonly maxRowBytes: number,
  ) {
    if (separator.length !== 1) throw new RangeError('a CSV separator is one character');
    this.separator = separator.charCodeAt(0);
  }

  /** The rows that end in `text`. */
  *write(text: string): Generator<CsvRow> {
    const n = text.length;
    const sep = this.separator;
    // Where the current row's text starts in this chunk (0: it began in an earlier one).
    let rowStart = 0;
    let i = 0;
    while (i < n) {
      let c = text.charCodeAt(i);
      switch (this.state) {
        case State.AfterCr:
          this.state = State.FieldStart;
          if (c === LF) rowStart = ++i;
          continue;
        case State.FieldStart:
          if (c === QUOTE) {
            this.field = '';
            this.state = State.Quoted;
            i++;
            continue;
          }
          if (c === SPACE || c === TAB) {
            this.append(text[i++]!);
            continue;
          }
          if (c !== sep && c !== CR && c !== LF) {
            this.state = State.Unquoted;
            continue;
          }
          break;
        case State.Unquoted: {
          let j = i;
          for (; j < n; j++) {
            c = text.charCodeAt(j);
            if (c === sep || c === CR || c === LF) break;
          }
          this.append(text.slice(i, j));
          i = j;
          if (j === n) continue;
          break;
        }
        case State.Quoted: {
          const q = text.indexOf('"', i);
          const end = q < 0 ? n : q;
          this.append(text.slice(i, end));
          i = end;
          if (q >= 0) {
            this.state = State.QuoteInQuoted;
            i++;
          }
          continue;
        }
        case State.QuoteInQuoted:
          if (c === QUOTE) {
            this.append('"');
            this.state = State.Quoted;
            i++;
          } else {
            this.state = State.AfterQuoted;
          }
          continue;
        case State.AfterQuoted:
          if (c === SPACE || c === TAB) {
            i++;
            continue;
          }
          if (c !== sep && c !== CR && c !== LF) {
            throw new CsvSyntaxError(
              `a quoted value is followed by ${JSON.stringify(text[i])} where the separator or a line end must come`,
            );
          }
          break;
      }
      // At a separator or a line end (`c`, at `i`): the value ends, and at a line end the row.
      this.endField();
      this.state = c === CR ? State.AfterCr : State.FieldStart;
      i++;
      if (c !== sep) {
        const row = this.endRow(text, rowStart, i - 1);
        rowStart = i;
        if (row) yield row;
      }
    }
    this.countBytes(text, rowStart, n);
  }

  /** The last row, when the text did not end with a line end. */
  *end(): Generator<CsvRow> {
    if (this.state === State.Quoted) throw new CsvSyntaxError('the body ends inside a quoted value (a closing quote is missing)');
    const open =
      this.state !== State.AfterCr && (this.values.length > 0 || this.field !== '' || this.state !== State.FieldStart || this.tooLarge);
    this.state = State.FieldStart;
    if (!open) return;
    this.endField();
    const row = this.endRow('', 0, 0);
    if (row) yield row;
  }

  private append(text: string): void {
    if (!this.tooLarge) this.field += text;
  }

  private endField(): void {
    if (!this.tooLarge) this.values.push(this.field);
    this.field = '';
  }

  private countBytes(text: string, from: number, to: number): void {
    if (to <= from) return;
    this.rowBytes += Buffer.byteLength(text.slice(from, to), 'utf8');
    if (this.rowBytes > this.maxRowBytes && !this.tooLarge) {
      this.tooLarge = true;
      this.values = [];
      this.field = '';
    }
  }

  /** Ends the row whose text in this chunk runs from `from` to `to` (the line end left out). */
  private endRow(text: string, from: number, to: number): CsvRow | undefined {
    this.countBytes(text, from, to);
    const { values, tooLarge } = this;
    this.values = [];
    this.field = '';
    this.rowBytes = 0;
    this.tooLarge = false;
    if (tooLarge) return { tooLarge: true };
    // A blank line, or one of separators and spaces only, is no row.
    if (values.every((v) => v.trim() === '')) return undefined;
    return { values };
  }
}
