import type { Field } from '../domain/fieldTable';

/**
 * The cursor and hook SELECTs of a field table (src/domain/fieldTable.ts): each field's column
 * under its row name, DateTimes as epoch milliseconds (the rows' form).
 */

const epochMs = (column: string) => `floor(extract(epoch from ${column}) * 1000)::int8`;

function expression<Row>(f: Field<Row>, alias: string): string {
  const column = `${f.source ?? alias}.${f.column}`;
  return f.type.kind === 'dateTime' ? epochMs(column) : column;
}

/**
 * Select-list items. For a cursor (rows): `c.unique_id`, `floor(...) as start_ms`; for the
 * binary COPY: the columns as stored (`c.start_time`), in table order.
 */
export function fieldSelect<Row>(fields: readonly Field<Row>[], alias: string, form: 'rows' | 'copy' = 'rows'): string[] {
  return fields.map((f) => {
    if (form === 'copy') return `${f.source ?? alias}.${f.column}`;
    const e = expression(f, alias);
    return f.type.kind !== 'dateTime' && f.column === f.row ? e : `${e} as ${f.row}`;
  });
}

/** `jsonb_build_object` arguments: `'unique_id', c.unique_id, 'start_ms', floor(...)`. */
export function fieldJsonbPairs<Row>(fields: readonly Field<Row>[], alias: string): string {
  return fields.map((f) => `'${f.row}', ${expression(f, alias)}`).join(', ');
}
