import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { HttpProblem, ProblemFieldError, invalidBody, invalidParameter } from './problem';
import { textProblem, findValueProblem } from '../domain/textSafety';

/**
 * Query parameters (docs/decisions.md, Wire): names are case-insensitive, array parameters take
 * comma-separated values, repeated parameters (also as `Name[]` or `Name[0]`) or both, unknown
 * names are ignored, and a bad value is a 400 naming the parameter.
 */
type AnyObject = z.ZodObject<z.ZodRawShape>;

function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  // Optional/default/nullable wrappers hide whether the parameter is a list.
  for (;;) {
    const def = (current as unknown as { def: { type: string; innerType?: z.ZodType; in?: z.ZodType } }).def;
    if ((def.type === 'optional' || def.type === 'default' || def.type === 'nullable' || def.type === 'prefault') && def.innerType) {
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      current = def.in;
    } else {
      return current;
    }
  }
}

export function isListSchema(schema: z.ZodType): boolean {
  return unwrap(schema) instanceof z.ZodArray;
}

function flatten(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.flatMap(flatten);
  if (typeof value === 'object') return []; // bracket syntax objects are not part of this API
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint' ||
    typeof value === 'symbol' ||
    typeof value === 'function'
  ) {
    return [String(value)];
  }
  return [value as string];
}

const LIST_SUFFIX = /\[\d*\]$/;

/** Maps raw query input onto the schema's canonical names, before validation. */
export function normalizeQuery(raw: Record<string, unknown>, schema: AnyObject): Record<string, unknown> {
  const byLower = new Map<string, string[]>();
  for (const [key, value] of Object.entries(raw)) {
    // `Include[]=a` and `Include[0]=a` (the list forms of axios, jQuery and PHP clients) name `Include`.
    const k = key.toLowerCase().replace(LIST_SUFFIX, '');
    byLower.set(k, [...(byLower.get(k) ?? []), ...flatten(value)]);
  }
  const out: Record<string, unknown> = {};
  for (const [name, fieldSchema] of Object.entries(schema.shape)) {
    const values = byLower.get(name.toLowerCase());
    if (!values || values.length === 0) continue;
    // Postgres text cannot hold NUL or a lone surrogate; refusing them here keeps them from becoming a 500 later.
    for (const v of values) {
      const message = textProblem(v);
      if (message) throw invalidParameter(name, message);
    }
    if (isListSchema(fieldSchema as z.ZodType)) {
      const items = values
        .flatMap((v) => v.split(','))
        .map((v) => v.trim())
        .filter((v) => v !== '');
      if (items.length > 0) out[name] = items;
    } else {
      // A scalar given twice: the first value wins, like most frameworks' binders. Not trimmed:
      // a tab or a space is a meaningful CsvFieldSeparator.
      const first = values[0];
      if (first !== '') out[name] = first;
    }
  }
  return out;
}

function issuesToErrors(
  issues: z.core.$ZodIssue[],
  kind: 'parameter' | 'field',
  input: Record<string, unknown>,
): {
  missing: boolean;
  errors: ProblemFieldError[];
} {
  let missing = true;
  const errors = issues.map((issue) => {
    // Missing means absent from the input: `Limit=ten` coerces to NaN, whose issue also has no input.
    const top = issue.path[0];
    const isMissing = issue.code === 'invalid_type' && typeof top === 'string' && issue.path.length === 1 && input[top] === undefined;
    if (!isMissing) missing = false;
    if (kind === 'parameter' && typeof top === 'string' && typeof issue.path[1] === 'number') {
      // One value of a list parameter (`Statuses=New,Sleeping`): the parameter is named as it is sent, the value in the message.
      const value = (input[top] as unknown[] | undefined)?.[issue.path[1]];
      return { parameter: top, message: `${issue.message} (got ${JSON.stringify(value)})` };
    }
    const name = issue.path.map(String).join('.') || '(body)';
    return { [kind]: name, message: isMissing ? 'is required' : issue.message };
  });
  return { missing, errors };
}

export function parseQuery<S extends AnyObject>(schema: S, raw: Record<string, unknown>): z.output<S> {
  const normalized = normalizeQuery(raw, schema);
  const result = schema.safeParse(normalized);
  if (result.success) return result.data;
  const { missing, errors } = issuesToErrors(result.error.issues, 'parameter', normalized);
  const detail = errors.map((e) => `${e.parameter}: ${e.message}`).join('; ');
  throw new HttpProblem(missing ? 'missing_parameter' : 'invalid_parameter', detail, errors);
}

/** Path parameters arrive decoded by Express; they are validated like query parameters. */
export function parseParams<S extends AnyObject>(schema: S, raw: Record<string, unknown>): z.output<S> {
  return parseQuery(schema, raw);
}

/**
 * JSON bodies: property names are case-insensitive (`CampaignCode`/`campaignCode`), so
 * top-level keys are mapped onto the schema's names before validation. Two keys that name the
 * same property (in two casings, or a name and its alias such as `url` and `urlTemplate`) are
 * one value given twice: the same value is accepted, two different ones are a 400 rather than
 * a silent choice. `at` prefixes the field an error names (an array body's `[i].`).
 */
function normalizeBodyKeys(raw: unknown, schema: AnyObject, aliases: Record<string, string> = {}, at = ''): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const canonical = new Map<string, string>();
  for (const name of Object.keys(schema.shape)) canonical.set(name.toLowerCase(), name);
  for (const [alias, name] of Object.entries(aliases)) canonical.set(alias.toLowerCase(), name);
  const out: Record<string, unknown> = {};
  const givenAs = new Map<string, string>();
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const name = canonical.get(key.toLowerCase());
    if (name === undefined) continue;
    const first = givenAs.get(name);
    if (first === undefined) {
      givenAs.set(name, key);
      out[name] = value;
    } else if (!isDeepStrictEqual(out[name], value)) {
      const message = `${first} and ${key} name the same property with different values: send one of them`;
      throw invalidBody(`${at}${name}: ${message}`, [{ field: `${at}${name}`, message }]);
    }
  }
  return out;
}

/** Bodies nest at most this deep unless the caller says otherwise (BODY_MAX_DEPTH). */
const DEFAULT_BODY_MAX_DEPTH = 32;

/**
 * The object schema of a body and whether an array of such objects is accepted too: a body
 * schema is an object, or a union of an object and an array of that object (one item or many).
 */
function bodyShape(schema: z.ZodType): { item: AnyObject; many: boolean; itemBranch?: number } {
  if (schema instanceof z.ZodObject) return { item: schema, many: false };
  if (schema instanceof z.ZodUnion) {
    const options = schema.options as z.ZodType[];
    const itemBranch = options.findIndex((o) => o instanceof z.ZodObject);
    const many = options.some((o) => o instanceof z.ZodArray);
    if (itemBranch >= 0) return { item: options[itemBranch] as AnyObject, many, itemBranch };
  }
  throw new Error('a body schema is an object, or a union of an object and an array of it');
}

export function parseBody<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  aliases?: Record<string, string>,
  maxDepth = DEFAULT_BODY_MAX_DEPTH,
): z.output<S> {
  const { item, many, itemBranch } = bodyShape(schema);
  const isArray = Array.isArray(raw);
  if (raw === undefined || raw === null || typeof raw !== 'object' || (isArray && !many)) {
    throw new HttpProblem(
      'invalid_body',
      many ? 'the request body must be a JSON object or an array of them' : 'the request body must be a JSON object',
    );
  }
  // Text Postgres cannot store (NUL, lone surrogates) and runaway nesting are 400s here, not 500s later.
  const problem = findValueProblem(raw, maxDepth);
  if (problem !== undefined) {
    const field = problem.path || '(body)';
    throw invalidBody(`${field}: ${problem.message}`, [{ field, message: problem.message }]);
  }
  const normalized = isArray
    ? (raw as unknown[]).map((element, i) => normalizeBodyKeys(element, item, aliases, `[${i}].`))
    : (normalizeBodyKeys(raw, item, aliases) as Record<string, unknown>);
  const result = schema.safeParse(normalized);
  if (result.success) return result.data;
  const issues = isArray
    ? arrayIssues(result.error.issues)
    : itemBranch === undefined
      ? result.error.issues
      : branchIssues(result.error.issues, itemBranch);
  const { errors } = issuesToErrors(issues, 'field', isArray ? {} : (normalized as Record<string, unknown>));
  throw new HttpProblem('invalid_body', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
}

/** A union's issues for a one-object body: those of the object branch, so each names its field. */
function branchIssues(issues: z.core.$ZodIssue[], branch: number): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => (issue.code === 'invalid_union' && issue.errors[branch] ? issue.errors[branch] : [issue]));
}

/** A union's issues for an array body: those of the array branch, paths as `[i].field`. */
function arrayIssues(issues: z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const out: z.core.$ZodIssue[] = [];
  for (const issue of issues) {
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const branch = issue.errors.find((errs) => errs.some((e) => typeof e.path[0] === 'number')) ?? issue.errors[issue.errors.length - 1]!;
      out.push(...branch.map((e) => ({ ...e, path: [...issue.path, ...e.path] })));
    } else {
      out.push(issue);
    }
  }
  return out.map((issue) => ({
    ...issue,
    path: issue.path.length > 0 && typeof issue.path[0] === 'number' ? [`[${issue.path[0]}]`, ...issue.path.slice(1)] : issue.path,
  }));
}
