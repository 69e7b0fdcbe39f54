import { z } from 'zod';
import type { Field, FieldType } from '../../domain/fieldTable';
import { dateTimeOut, timeSpanOut } from './common';

/**
 * The documented properties of a field table's fields (src/domain/fieldTable.ts), for the
 * response schemas: one zod type per field type, optional where the field may be absent, with
 * the field's description, in the table's order. Tables declared `as const` keep each field's
 * name and kind in the type, so the inferred response types stay exact.
 */

type FieldSchema<T extends FieldType> = T extends { kind: 'text' | 'dateTime' | 'timeSpan' }
  ? z.ZodString
  : T extends { kind: 'bool' }
    ? z.ZodBoolean
    : T extends { kind: 'int' }
      ? z.ZodNumber
      : z.ZodEnum<Record<string, string>>;

type Plain = Pick<Field<never>, 'name' | 'type' | 'present' | 'description'>;

export type FieldShape<Fields extends readonly Plain[]> = {
  [F in Fields[number] as F['name']]: F['present'] extends 'optional' ? z.ZodOptional<FieldSchema<F['type']>> : FieldSchema<F['type']>;
};

function schemaOf(type: FieldType): z.ZodType {
  switch (type.kind) {
    case 'text':
      return z.string();
    case 'bool':
      return z.boolean();
    case 'int':
      return z.number().int();
    case 'dateTime':
      return dateTimeOut;
    case 'timeSpan':
      return timeSpanOut;
    case 'enum':
      return z.enum(type.enumeration.names as [string, ...string[]]);
  }
}

/** The zod shape of a table's fields, to spread into a response object between its other properties. */
export function fieldShape<const Fields extends readonly Plain[]>(fields: Fields): FieldShape<Fields> {
  const shape: Record<string, z.ZodType> = {};
  for (const f of fields) {
    const schema = f.present === 'optional' ? schemaOf(f.type).optional() : schemaOf(f.type);
    shape[f.name] = f.description === undefined ? schema : schema.meta({ description: f.description });
  }
  return shape as FieldShape<Fields>;
}
