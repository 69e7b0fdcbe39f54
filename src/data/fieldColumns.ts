import type { Field } from '../domain/fieldTable';

/**
 * The cursor and hook SELECTs of a field table (src/domain/fieldTable.ts): each field's column
 * under its row name, DateTimes as epoch milliseconds (the rows' form).
 */

const epochMs = (column: string) => `floor(extract(epoch from ${column}) * 1000)::int8`;

function expression<Row>(f: Field<Row>, alias: string): string {
  const column = `${alias}.${f.column}`;
  return f.type.kind === 'dateTime' ? epochMs(column) : column;
}

/** Select-list items: `c.unique_id`, `floor(...) as start_ms`. */
export function fieldSelect<Row>(fields: readonly Field<Row>[], alias: string): string[] {
  return fields.map((f) => {
    const e = expression(f, alias);
    return e === `${alias}.${f.row}` ? e : `${e} as ${f.row}`;
  });
}

/** `jsonb_build_object` arguments: `'unique_id', c.unique_id, 'start_ms', floor(...)`. */
export function fieldJsonbPairs<Row>(fields: readonly Field<Row>[], alias: string): string {
  return fields.map((f) => `'${f.row}', ${expression(f, alias)}`).join(', ');
}
