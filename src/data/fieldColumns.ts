import type { Field } from '../domain/fieldTable';

/**
 * The cursor, hook and COPY SELECTs of a field table (src/domain/fieldTable.ts): each field's
 * column in the form its type is read in, under its row name for rows.
 */

const epochMs = (column: string) => `floor(extract(epoch from ${column}) * 1000)::int8`;

/**
 * A field's select expression: `text` fields as the column's text (a no-op for text columns;
 * any other column is written as its text); for rows, DateTimes as epoch milliseconds; for the
 * binary COPY, timestamps as stored. A field with `sameAsDataField` is NULL where the row's data
 * does not hold the same value under the name that column gives (NULL names nothing).
 */
function expression<Row>(f: Field<Row>, alias: string, form: 'rows' | 'copy'): string {
  const column = `${f.source ?? alias}.${f.column}`;
  const value = f.type.kind === 'text' ? `${column}::text` : f.type.kind === 'dateTime' && form === 'rows' ? epochMs(column) : column;
  return f.sameAsDataField === undefined ? value : `case when ${column} = ${alias}.data ->> ${f.sameAsDataField} then ${value} end`;
}

/**
 * Select-list items, in table order. For a cursor (rows): `c.unique_id::text as "unique_id"`,
 * `floor(...) as "start_ms"`; for the binary COPY: `c.unique_id::text`, `c.start_time`.
 */
export function fieldSelect<Row>(fields: readonly Field<Row>[], alias: string, form: 'rows' | 'copy' = 'rows'): string[] {
  return fields.map((f) => {
    const e = expression(f, alias, form);
    return form === 'copy' || e === `${alias}.${f.row}` ? e : `${e} as "${f.row}"`;
  });
}

/** A column read as it is under a row name (jsonb as its text), for the columns a field table's steps read. */
export function columnSelect(c: { column: string; row: string; jsonb?: true }, alias: string): string {
  const e = `${alias}.${c.column}${c.jsonb ? '::text' : ''}`;
  return c.column === c.row && !c.jsonb ? e : `${e} as "${c.row}"`;
}

/** `jsonb_build_object` arguments: `'unique_id', c.unique_id::text, 'start_ms', floor(...)`. */
export function fieldJsonbPairs<Row>(fields: readonly Field<Row>[], alias: string): string {
  return fields.map((f) => `'${f.row}', ${expression(f, alias, 'rows')}`).join(', ');
}
