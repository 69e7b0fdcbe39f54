import type { DateTimeFormatName } from '../domain/enums';
import { formatDateTime } from '../domain/datetime';
import type { Enumeration } from '../domain/enums';
import { enumNames, Field, GENERATED_ALPHABET } from '../domain/fieldTable';
import { formatMillis } from '../domain/timespan';
import { ByteWriter, CsvQuoting, TupleRenderer } from './byteWriter';
import { DateTimeWriter, writeMillis } from './byteFormats';
import { bool, integer, isNull, timestampMs, Tuple } from './pgBinary';

/**
 * A field table (src/domain/fieldTable.ts) → the transcoder's writers of those fields, bytes
 * straight from binary COPY tuples: per field, the fixed parts (`,"name":`, enum names,
 * booleans) are encoded once per request, text is copied as bytes (escaped only where it must
 * be), numbers and times written as digits. The columns of the tuple are the table's columns
 * in order, starting at `first`.
 */

/** Writes one field of a tuple. */
export type FieldWriter = (t: Tuple, w: ByteWriter) => void;

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** Per stored number, the bytes of the enumeration's name rendered by `render`; an unknown number is an error naming `what`. */
function enumFragments(e: Enumeration<string>, what: string, render: (name: string) => string): (n: number) => Buffer {
  const table: (Buffer | undefined)[] = [];
  for (const [n, name] of enumNames(e).entries()) if (name !== undefined) table[n] = utf8(render(name));
  return (n) => {
    const f = table[n];
    if (f === undefined) throw new Error(`unknown ${what} number ${n}`);
    return f;
  };
}

function optional(i: number, write: FieldWriter): FieldWriter {
  return (t, w) => {
    if (!isNull(t, i)) write(t, w);
  };
}

/**
 * JSON: each writer writes `,"name":value` (an absent optional field writes nothing), so a
 * caller opens the object with the fields before them; with `open`, the first field opens the
 * object itself (`{"name":value`).
 */
export function jsonFieldWriters<Row>(fields: readonly Field<Row>[], first: number, time: DateTimeWriter, open = false): FieldWriter[] {
  return fields.map((f, k) => {
    const i = first + k;
    const key = `${k === 0 && open ? '{' : ','}${JSON.stringify(f.name)}:`;
    const name = utf8(key);
    const quoted = utf8(`${key}"`);
    let write: FieldWriter;
    switch (f.type.kind) {
      case 'text':
        write = (t, w) => {
          w.frag(name);
          w.jsonText(t, i);
        };
        break;
      case 'bool': {
        const values = [utf8(`${key}false`), utf8(`${key}true`)];
        write = (t, w) => w.frag(values[+bool(t, i)]!);
        break;
      }
      case 'int':
        write = (t, w) => {
          w.frag(name);
          w.int(integer(t, i));
        };
        break;
      case 'dateTime':
        write = (t, w) => {
          w.frag(quoted);
          time.write(w, timestampMs(t, i));
          w.byte(0x22);
        };
        break;
      case 'timeSpan':
        write = (t, w) => {
          w.frag(quoted);
          writeMillis(w, integer(t, i));
          w.byte(0x22);
        };
        break;
      case 'enum': {
        const fragment = enumFragments(f.type.enumeration, f.type.what, (n) => key + JSON.stringify(n));
        write = (t, w) => w.frag(fragment(integer(t, i)));
        break;
      }
    }
    return f.present === 'optional' ? optional(i, write) : write;
  });
}

/**
 * CSV: each writer writes its cell (an absent optional field an empty one); the caller writes
 * the separators. With a separator that generated values can contain, times and durations go
 * through the text formatters and the quoting function (the slow path for an odd separator).
 */
export function csvFieldWriters<Row>(
  fields: readonly Field<Row>[],
  first: number,
  options: { csv: CsvQuoting; separator: string; zone: string; dateTimeFormat?: DateTimeFormatName },
): FieldWriter[] {
  const { csv, zone } = options;
  const generatedSafe = !GENERATED_ALPHABET.test(options.separator);
  const gen = (v: string) => (generatedSafe ? v : csv.quoted(v));
  const time = new DateTimeWriter(zone, options.dateTimeFormat);
  const bools = [utf8(gen('false')), utf8(gen('true'))];
  return fields.map((f, k) => {
    const i = first + k;
    let write: FieldWriter;
    switch (f.type.kind) {
      case 'text':
        write = (t, w) => csv.text(w, t, i);
        break;
      case 'bool':
        write = (t, w) => w.frag(bools[+bool(t, i)]!);
        break;
      case 'int':
        write = (t, w) => (generatedSafe ? w.int(integer(t, i)) : w.utf8(gen(String(integer(t, i)))));
        break;
      case 'dateTime':
        write = generatedSafe
          ? (t, w) => time.write(w, timestampMs(t, i))
          : (t, w) => w.utf8(gen(formatDateTime(timestampMs(t, i), zone, options.dateTimeFormat)));
        break;
      case 'timeSpan':
        write = generatedSafe ? (t, w) => writeMillis(w, integer(t, i)) : (t, w) => w.utf8(gen(formatMillis(integer(t, i))));
        break;
      case 'enum': {
        const fragment = enumFragments(f.type.enumeration, f.type.what, gen);
        write = (t, w) => w.frag(fragment(integer(t, i)));
        break;
      }
    }
    return f.present === 'optional' ? optional(i, write) : write;
  });
}

/** A JSON array of one object per tuple: `[`, the objects `object` writes separated by commas, `]`. */
export function jsonArrayRenderer(object: (t: Tuple, w: ByteWriter) => void): TupleRenderer {
  let first = true;
  return {
    head: (w) => w.byte(0x5b),
    tail: (w) => w.byte(0x5d),
    row(t, w) {
      if (first) first = false;
      else w.byte(0x2c);
      object(t, w);
    },
  };
}
