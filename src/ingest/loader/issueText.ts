import type { z } from 'zod';

/**
 * Turns the schema issues of one record into sentences that name the field, e.g.
 * `"orgCode" is required`, `"seconds" must be a whole number, not "60"`. zod's default texts
 * ("Invalid input: expected string, received undefined") are written for programmers; a
 * loader message is read by whoever prepared the file.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map(describeIssue).join('; ');
}

/**
 * The error map of the record schemas: a sentence without the field's name, which
 * describeIssue puts in front. Messages a schema sets itself ('must not be empty') win.
 */
export function issueSentence(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return `must be ${KIND[issue.expected] ?? issue.expected}, not ${describeValue(issue.input)}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string') return min <= 1 ? 'must not be empty' : `must have at least ${min} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at least ${min} ${min === 1 ? 'item' : 'items'}`;
      return issue.inclusive ? `must be at least ${min}` : `must be greater than ${min}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return `must have at most ${max} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} ${max === 1 ? 'item' : 'items'}`;
      return issue.inclusive ? `must be at most ${max}` : `must be less than ${max}`;
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'unrecognized_keys':
      return issue.keys.length === 1 ? `has an unknown key ${JSON.stringify(issue.keys[0])}` : `has unknown keys ${quoteAll(issue.keys)}`;
    default:
      return undefined;
  }
}

const KIND: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list (JSON array)',
  object: 'a JSON object',
  record: 'a JSON object',
};

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function quoteAll(keys: readonly string[]): string {
  return keys.map((k) => JSON.stringify(k)).join(', ');
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldName(issue.path);
  if (issue.code === 'unrecognized_keys' && field === '') {
    // At the top of a record the keys are the record's own fields.
    return `unknown ${issue.keys.length === 1 ? 'field' : 'fields'} ${quoteAll(issue.keys)}`;
  }
  return field === '' ? issue.message : `${JSON.stringify(field)} ${issue.message}`;
}

/** `fields[0].type`, `data.Phone`: the path as a reader of the JSON line would write it. */
function fieldName(path: readonly PropertyKey[]): string {
  let name = '';
  for (const part of path) {
    if (typeof part === 'number') name += `[${part}]`;
    else name += name === '' ? String(part) : `.${String(part)}`;
  }
  return name;
}
