import { dateTimeFormatter } from './datetime';
import type { DateTimeFormatName, Enumeration } from './enums';
import { formatMillis } from './timespan';

/**
 * A declarative field table: one entry per plain field of an exported resource (a call, a
 * ready period, a lead), in the order the API writes them. The export SELECT's columns
 * (src/data/exportQueries.ts), the cursor and hook SELECTs, the object form (includes, hooks,
 * small reads) and the transcoder's JSON and CSV bytes (src/export/fieldBytes.ts) are all
 * derived from it: how one field renders is decided here, once.
 *
 * Encoding by type, the same in every form:
 * - `text`: the column's text (read as `::text`, so a column of another type can be written as
 *   text); a JSON string, a CSV cell quoted when it holds the separator, `"`, CR or LF.
 * - `bool`: `true` / `false`.
 * - `int`: decimal digits.
 * - `dateTime`: a timestamptz (rows carry epoch milliseconds), in the request's zone and format.
 * - `timeSpan`: integer milliseconds, as an ISO 8601 duration (`PT1M5S`).
 * - `enum`: the stored number, written as the enumeration's name.
 * Generated values (all but `text`) hold only `[0-9A-Za-z:.+-]`: in CSV they are quoted only
 * when the separator is one of those characters.
 */
export type FieldType =
  | { kind: 'text' }
  | { kind: 'bool' }
  | { kind: 'int' }
  | { kind: 'dateTime' }
  | { kind: 'timeSpan' }
  | { kind: 'enum'; enumeration: Enumeration<string>; what: string };

export interface Field<Row> {
  /** The property in JSON and the object form. */
  name: string;
  /** The header of the field's CSV column (`name` when left out). */
  csv?: string;
  /** The column the export SELECT reads. */
  column: string;
  /** The alias of the joined table holding the column, when it is not the resource's own table. */
  source?: string;
  /** The property of a cursor row holding the value (`dateTime`: epoch milliseconds). */
  row: keyof Row & string;
  type: FieldType;
  /** `optional`: left out of JSON and empty in CSV when the column is NULL; `always`: never NULL. */
  present: 'always' | 'optional';
  /**
   * A text column (`alias.column`) of a table the SELECTs join naming the data field the value
   * comes from, when the reader may see that field (NULL when it may not): the value is read only
   * where the row's `data` holds that same value under that name, else as NULL, so every form
   * writes it as absent, exactly as a row without the value (an `optional` field).
   */
  sameAsDataField?: string;
  /** The property's description in the OpenAPI document, where its name alone does not say enough. */
  description?: string;
}

// Each type keeps its kind as a literal type, so a table declared `as const` tells the kind of
// every field to the type checker (the OpenAPI shapes in src/http/schemas/fieldSchemas.ts).
export const TEXT = { kind: 'text' } as const satisfies FieldType;
export const BOOL = { kind: 'bool' } as const satisfies FieldType;
export const INT = { kind: 'int' } as const satisfies FieldType;
export const DATE_TIME = { kind: 'dateTime' } as const satisfies FieldType;
export const TIME_SPAN = { kind: 'timeSpan' } as const satisfies FieldType;
export const enumType = (enumeration: Enumeration<string>, what: string) =>
  ({ kind: 'enum', enumeration, what }) as const satisfies FieldType;

/** The characters generated values are written with (see FieldType). */
export const GENERATED_ALPHABET = /[0-9A-Za-z:.+\-"\r\n]/;

/** Names indexed by stored number: one array read per value instead of a Map lookup. */
export function enumNames(e: Enumeration<string>): string[] {
  const table: string[] = [];
  for (const name of e.names) table[e.toNumber(name)] = name;
  return table;
}

function enumName(table: string[], value: number, what: string): string {
  const name = table[value];
  if (name === undefined) throw new Error(`unknown ${what} number ${value}`);
  return name;
}

/** The CSV header names of a table. */
export function csvNames<Row>(fields: readonly Field<Row>[]): string[] {
  return fields.map((f) => f.csv ?? f.name);
}

/** A field's value in the object form (JSON types), from a non-null stored value. */
type ValueOf = (stored: unknown) => string | number | boolean;

function valueOf(type: FieldType, time: (ms: number) => string): ValueOf {
  switch (type.kind) {
    case 'text':
      return (v) => String(v);
    case 'bool':
    case 'int':
      return (v) => v as number | boolean;
    case 'dateTime':
      return (v) => time(v as number);
    case 'timeSpan':
      return (v) => formatMillis(v as number);
    case 'enum': {
      const names = enumNames(type.enumeration);
      return (v) => enumName(names, v as number, type.what);
    }
  }
}

/** Writes a row's fields into an object, absent optional fields as `undefined` (JSON.stringify leaves them out). */
export type ObjectRenderer<Row> = (row: Row, out: Record<string, unknown>) => Record<string, unknown>;

/** The object form of a table's fields, for one request's zone and DateTime format. */
export function objectRenderer<Row>(fields: readonly Field<Row>[], zone: string, format?: DateTimeFormatName): ObjectRenderer<Row> {
  const time = dateTimeFormatter(zone, format);
  const steps = fields.map((f) => ({ name: f.name, row: f.row, value: valueOf(f.type, time) }));
  return (row, out) => {
    for (const s of steps) {
      const v = row[s.row as keyof Row];
      out[s.name] = v === null || v === undefined ? undefined : s.value(v);
    }
    return out;
  };
}

/**
 * The JSON text of a table's fields: JSON.stringify of the object form without its braces, as
 * members that each start with a comma (`,"name":value`, absent optional fields left out), so a
 * caller writes them after the properties before them; with `open`, the text opens the object
 * itself (`{"name":value`), as the transcoder's writers do (src/export/fieldBytes.ts).
 */
export function jsonMembers<Row>(
  fields: readonly Field<Row>[],
  zone: string,
  format?: DateTimeFormatName,
  open = false,
): (row: Row) => string {
  const render = objectRenderer(fields, zone, format);
  return (row) => {
    const text = JSON.stringify(render(row, {}));
    if (text.length === 2) return open ? '{' : '';
    return (open ? '{' : ',') + text.slice(1, -1);
  };
}

/**
 * The CSV cells of a table's fields from the object form, joined by the separator: an absent
 * value is an empty cell, every value goes through `quote` (generated values never need it
 * unless the separator is one of their characters).
 */
export function csvCells<Row>(
  fields: readonly Field<Row>[],
  separator: string,
  quote: (value: string) => string,
): (object: Record<string, unknown>) => string {
  const names = fields.map((f) => f.name);
  return (object) => {
    let out = '';
    for (let i = 0; i < names.length; i++) {
      if (i > 0) out += separator;
      const v = object[names[i]!] as string | number | boolean | undefined;
      if (v !== undefined) out += quote(String(v));
    }
    return out;
  };
}
