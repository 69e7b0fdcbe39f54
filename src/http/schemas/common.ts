import { z } from 'zod';
import { parseDateTime } from '../../domain/datetime';
import { parseTimeSpan, TimeSpan } from '../../domain/timespan';
import { Enumeration } from '../../domain/enums';
import { platformZone } from '../../config/platform';
import { canonicalUniqueId } from '../../domain/uniqueId';

/**
 * Parameter and body types shared by the endpoint schemas. Each carries OpenAPI metadata,
 * so the document generated from the schemas says what the validators accept.
 */
export const dateTimeParam = z
  .string()
  .transform((value, ctx) => {
    try {
      return parseDateTime(value, platformZone());
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  })
  .meta({
    description:
      'ISO 8601 date and time. With an offset or Z it is taken as is; without one it is platform local time; a date alone is local midnight. Between 1900-01-01 and 9999-12-31 in platform time.',
    // In the demo data's week (2026-11-16..20), so every example request finds something there.
    example: '2026-11-16T08:00:00',
  });

export const timeSpanParam = z
  .string()
  // Spaces around it are ignored, as around a DateTime.
  .trim()
  .transform((value, ctx): TimeSpan => {
    try {
      return parseTimeSpan(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  })
  .meta({
    description: 'ISO 8601 duration PnYnMnDTnHnMnS (case sensitive); the .NET form [d.]hh:mm:ss is accepted too.',
    example: 'PT2H',
  });

// Decimal digits only (around them, spaces are ignored): Number() would also read `0x10`, `1e3`
// and `0b1`. How many digits is left to the maximum, so a large value is told its limit.
const decimalOnly = (v: unknown) => {
  if (typeof v !== 'string') return v;
  const digits = v.trim();
  return /^\d+$/.test(digits) ? digits : Number.NaN;
};

/** A positive decimal integer parameter, at most `max`. */
export function positiveIntParam(max = Number.MAX_SAFE_INTEGER) {
  const message = 'must be a positive integer';
  return z.preprocess(
    decimalOnly,
    z.coerce
      .number({ message })
      // First, and alone: beyond the safe integers .int() would fail too, with the vaguer message.
      .max(max, { message: `must be at most ${max}`, abort: true })
      .int({ message })
      .positive({ message }),
  );
}

export const limitParam = positiveIntParam().meta({ description: 'Maximum number of items returned; not for paging.' });

/** What every parameter or property naming a resource by its unique id says about letter case and braces. */
export const UNIQUE_ID_RULE = 'A UUID is matched in any letter case, and also in braces (`{…}`); answers write it in lower case.';

/**
 * A unique id in a path, query or body (docs/decisions.md, Wire conventions): a UUID in upper
 * case or in braces (.NET, Java, Delphi clients) is read as the lower-case id the API writes;
 * any other id is compared exactly. Every endpoint taking an id uses this, so none compares
 * the id as sent.
 */
export function uniqueIdParam(description: string, options: { max?: number; example?: string } = {}) {
  const text = z.string().min(1);
  return (options.max === undefined ? text : text.max(options.max))
    .transform(canonicalUniqueId)
    .meta({ description: `${description} ${UNIQUE_ID_RULE}`, ...(options.example === undefined ? {} : { example: options.example }) });
}

/** Comma-separated and/or repeated values. */
export const listParam = z.array(z.string());

export const includeParam = listParam.meta({
  description:
    'Complex properties to include; a nested name counts only when the properties leading to it are named too; unknown names are ignored.',
});

/** What the Include parameters of endpoints outside Organisation say about the organisation tree. */
export const ORGANIZATION_TREE_INCLUDE_RULE =
  'parent, children and users walk the organisation tree: they count only for an account with Organization: Get and are ignored like unknown names otherwise.';

export const booleanParam = z
  .enum(['true', 'false', 'True', 'False', 'TRUE', 'FALSE', '1', '0'])
  .transform((v) => v.toLowerCase() === 'true' || v === '1');

/**
 * A boolean property of a JSON body. String-typed clients write one as text: Zapier's and Make's
 * webhook steps send every mapped value as a string (`"true"`), PowerShell's `[string]$true` is
 * `"True"`, and spreadsheets give `1`/`0`. So it is `true`/`false`, or those as the query's
 * boolean parameters take them (`true`, `True`, `1`, …, as text or `1`/`0` as numbers).
 */
export const bodyBoolean = z.preprocess(
  (v) => {
    if (v === 1 || v === 0) return v === 1;
    if (typeof v !== 'string') return v;
    const text = v.trim().toLowerCase();
    return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : v;
  },
  z.boolean({ message: 'must be true or false' }),
);

/**
 * An integer property of a JSON body, checked by `schema`: a JSON number, or its decimal digits
 * as a string (with a sign; spaces around them ignored), which string-typed clients send for
 * every value.
 */
export function bodyInteger<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : v), schema);
}

/** An enumeration name, matched case-insensitively, validated and returned in canonical spelling. */
export function enumNameParam<N extends string>(enumeration: Enumeration<N>) {
  return z
    .string()
    .transform((value, ctx) => {
      const name = enumeration.parse(value);
      if (name === undefined) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${enumeration.names.join(', ')}` });
        return z.NEVER;
      }
      return name;
    })
    .meta({ description: `One of ${enumeration.names.join(', ')}.` });
}

export function enumListParam<N extends string>(enumeration: Enumeration<N>) {
  return z.array(enumNameParam(enumeration)).meta({
    description: `Each one of ${enumeration.names.join(', ')}.`,
  });
}

/** Output shapes (documentation only: responses are built by serializers). */
/**
 * A DateTime the API writes, in the answer's DateTime format (the account's, or the request's
 * `Prefer: datetime=`); no `format: date-time`, as the Local form carries no offset.
 */
export const dateTimeOut = z.string().meta({
  description:
    'Platform time. `Offset` format (default): milliseconds and the offset, `2026-05-06T10:16:41.000+02:00`. ' +
    '`Local` format (account setting or `Prefer: datetime=local`): wall time, seven fraction digits, no offset, `2026-05-06T10:16:41.0000000`.',
  example: '2026-05-06T10:16:41.000+02:00',
});
export const timeSpanOut = z.string().meta({ format: 'duration', example: 'PT12M42S' });

/**
 * A query refinement: the end of a time window (parameter `to`) must not lie before its start
 * (`from`), and with `empty: false` not on it either; a 400 naming the end. A window whose end
 * lies before its start names no time at all: an empty answer would read as "nothing changed"
 * to a client syncing by range. The lead exports allow equal ends (an empty window, as
 * TimeSpan=PT0S); the calendar lists ask for a window of some length.
 */
export function windowInOrder<From extends string, To extends string>(from: From, to: To, options: { empty: boolean }) {
  const message = options.empty ? `must not be before ${from}` : `must be after ${from}`;
  return (q: Partial<Record<From | To, Date>>, ctx: z.RefinementCtx): void => {
    const start = q[from];
    const end = q[to];
    if (start === undefined || end === undefined) return;
    if (options.empty ? end.getTime() < start.getTime() : end.getTime() <= start.getTime()) {
      ctx.addIssue({ code: 'custom', path: [to], message });
    }
  };
}
