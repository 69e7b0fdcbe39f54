import { EntryAccess, EntryAccessName, FieldType } from './enums';
import { isDateTimeText } from './datetime';

/** A field of a lead definition, as the rules need it. */
export interface LeadFieldRule {
  name: string;
  importName: string | null;
  type: FieldType;
  required: boolean;
  access: EntryAccessName;
  externalKey: boolean;
  sortOrder: number;
}

export interface LeadDataError {
  field: string;
  message: string;
}

export interface MappedLeadData {
  /** Values keyed by the definition's field names. */
  data: Record<string, string>;
  phoneNumber: string | null;
  externalKey: string | null;
  errors: LeadDataError[];
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
// Digits with the usual separators and an optional leading +; at least 3 digits.
const PHONE = /^\+?[\d\s().\-/]*\d[\d\s().\-/]*$/;
const NUMBER = /^[+-]?(\d+([.,]\d+)?|[.,]\d+)$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const BOOLEAN = /^(true|false|yes|no|1|0)$/i;
// .NET clients write a date as a DateTime at midnight (`2026-12-01T00:00:00.0000000`, perhaps with
// an offset): its date part is the value.
const MIDNIGHT = /^(\d{4}-\d{2}-\d{2})T00:00(?::00(?:\.0+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** A date field's value as it is checked and stored: a date, or a DateTime at midnight as its date; anything else as given. */
function asDate(value: string): string {
  const v = value.trim();
  return DATE.test(v) ? v : (MIDNIGHT.exec(v)?.[1] ?? value);
}

function checkValue(type: FieldType, value: string, zone: string): string | undefined {
  const v = value.trim();
  switch (type) {
    case 'text':
      return undefined;
    case 'number':
      return NUMBER.test(v) ? undefined : 'must be a number';
    case 'boolean':
      return BOOLEAN.test(v) ? undefined : 'must be true or false';
    case 'email':
      return EMAIL.test(v) ? undefined : 'must be an e-mail address';
    case 'phone':
      return PHONE.test(v) && v.replace(/\D/g, '').length >= 3 ? undefined : 'must be a phone number';
    case 'date':
      return DATE.test(v) && isDateTimeText(v, zone) ? undefined : 'must be a date (yyyy-MM-dd)';
    case 'datetime':
      return isDateTimeText(v, zone) ? undefined : 'must be an ISO 8601 date and time';
  }
}

/**
 * Maps lead data onto a lead definition as a whole, every field of it (docs/decisions.md,
 * Loader and Leads): a change merges the stored data, hidden fields included, after checking
 * the names it was sent itself. Imports map what they were sent with leadDataMapper and the
 * importing account's entry access.
 */
export function mapLeadData(fields: readonly LeadFieldRule[], input: Record<string, string>, zone: string): MappedLeadData {
  return leadDataMapper(fields, zone, 'Full')(input);
}

/**
 * Maps incoming lead data onto a lead definition, its lookups made once (a bulk import maps
 * every row of a request with the same definition): keys match a field's `name` or
 * `importName` case-insensitively; unknown fields, missing required fields and values not of
 * the field's type are errors. An empty value counts as absent.
 *
 * A field above `entryAccess` is treated as a field the definition does not have
 * (docs/decisions.md, Leads): naming it is an unknown field, and it is not required. The
 * phone number and external key still come from the definition's own fields, so a lead's
 * number does not depend on who imported it.
 */
export function leadDataMapper(
  fields: readonly LeadFieldRule[],
  zone: string,
  entryAccess: EntryAccessName,
): (input: Record<string, string>) => MappedLeadData {
  const byKey = new Map<string, LeadFieldRule>();
  const writable = fields.filter((f) => canSeeField(entryAccess, f.access));
  for (const f of writable) {
    byKey.set(f.name.toLowerCase(), f);
    if (f.importName) byKey.set(f.importName.toLowerCase(), f);
  }
  const required = writable.filter((f) => f.required);
  const { phoneField, keyField } = leadKeyFields(fields);
  return (input) => {
    const data: Record<string, string> = {};
    const errors: LeadDataError[] = [];
    const givenAs = new Map<LeadFieldRule, { key: string; value: string }>();
    for (const key of Object.keys(input)) {
      const value = input[key]!;
      const field = byKey.get(key.toLowerCase());
      if (!field) {
        errors.push({ field: key, message: "is not a field of the campaign's lead definition" });
        continue;
      }
      if (value.trim() === '') continue;
      const first = givenAs.get(field);
      if (first !== undefined) {
        if (first.value !== value) errors.push({ field: key, message: sameFieldTwiceMessage(first.key) });
        continue;
      }
      givenAs.set(field, { key, value });
      const given = field.type === 'date' ? asDate(value) : value;
      const problem = checkValue(field.type, given, zone);
      if (problem) errors.push({ field: key, message: problem });
      else data[field.name] = given;
    }
    for (const f of required) {
      if (data[f.name] === undefined && !errors.some((e) => byKey.get(e.field.toLowerCase()) === f)) {
        errors.push({ field: f.name, message: 'is required' });
      }
    }
    return {
      data,
      phoneNumber: phoneField ? (data[phoneField.name] ?? null) : null,
      externalKey: keyField ? (data[keyField.name] ?? null) : null,
      errors,
    };
  };
}

/**
 * Two keys of one body naming the same field (in two casings, or its name and its import name)
 * with different values: which was meant cannot be told, so neither is taken silently.
 */
export function sameFieldTwiceMessage(firstKey: string): string {
  return `names the same field as ${firstKey} with a different value: send one of them`;
}

/**
 * The fields a lead's phone number and external key come from, whatever the entry access of who
 * writes: the first phone field in sort order, and the field marked as the external key.
 */
export function leadKeyFields<F extends LeadFieldRule>(fields: readonly F[]): { phoneField?: F; keyField?: F } {
  const phoneField = [...fields].sort((a, b) => a.sortOrder - b.sortOrder).find((f) => f.type === 'phone');
  const keyField = fields.find((f) => f.externalKey);
  return { ...(phoneField ? { phoneField } : {}), ...(keyField ? { keyField } : {}) };
}

/**
 * The fields a lead's phone number and external key come from (leadKeyFields) that an account of
 * this entry access sees. It sees the phone number or the key only where the lead's data holds
 * the same value under that field, as it sees that field's value in `data`: a definition without
 * such a field shows none, nor does a value stored from another field before the definition
 * changed. The lead SELECTs decide the same in SQL (src/data/leadRepository.ts).
 */
export function visibleKeyFields(fields: readonly LeadFieldRule[], entryAccess: EntryAccessName): VisibleKeyFields {
  const { phoneField, keyField } = leadKeyFields(fields);
  return {
    phone: phoneField !== undefined && canSeeField(entryAccess, phoneField.access) ? phoneField.name : null,
    key: keyField !== undefined && canSeeField(entryAccess, keyField.access) ? keyField.name : null,
  };
}

/** The names of the phone and external-key fields a reader sees; null where it does not see one, or there is none. */
export interface VisibleKeyFields {
  phone: string | null;
  key: string | null;
}

/** The answer for a lead value over the size limit. */
export function valueTooLargeMessage(maxBytes: number): string {
  return `is larger than ${maxBytes} bytes (LEAD_VALUE_MAX_BYTES)`;
}

/**
 * The values of `data` larger than `maxBytes` in UTF-8 (docs/decisions.md, Leads), as errors
 * naming them (`prefix` + key). Nulls (a patch removing a value) are never too large.
 */
export function oversizedValues(data: Readonly<Record<string, string | null>>, maxBytes: number, prefix = ''): LeadDataError[] {
  const errors: LeadDataError[] = [];
  for (const [key, value] of Object.entries(data)) {
    if (value !== null && isLargerThan(value, maxBytes)) errors.push({ field: prefix + key, message: valueTooLargeMessage(maxBytes) });
  }
  return errors;
}

/** Whether `value` takes more than `maxBytes` in UTF-8; a UTF-16 unit takes at most 3 bytes, so most values need no count. */
export function isLargerThan(value: string, maxBytes: number): boolean {
  return value.length * 3 > maxBytes && Buffer.byteLength(value, 'utf8') > maxBytes;
}

/** An account sees a field when its entry access is at least the field's level (docs/decisions.md, Accounts). */
export function canSeeField(accountAccess: EntryAccessName, fieldAccess: EntryAccessName): boolean {
  // The EntryAccess numbers are the access order (src/domain/enums.ts).
  return EntryAccess.toNumber(accountAccess) >= EntryAccess.toNumber(fieldAccess);
}
