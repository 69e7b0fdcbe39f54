/**
 * Text the database can store and headers can carry: Postgres text refuses NUL, and a lone
 * UTF-16 surrogate (legal in a JSON string as `\ud800`) has no UTF-8 form, so Postgres refuses
 * it too. Both are answered as bad input before they reach a query (docs/decisions.md, Wire
 * conventions).
 */

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const NUL_MESSAGE = 'must not contain a NUL character';
const SURROGATE_MESSAGE = 'must be valid Unicode text (it holds a lone surrogate)';

/** Why `value` cannot be stored as text, or undefined when it can. */
export function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return NUL_MESSAGE;
  if (LONE_SURROGATE.test(value)) return SURROGATE_MESSAGE;
  return undefined;
}

/**
 * A JSON key no object reader keeps: `JSON.parse` makes `__proto__` an own key, but every plain
 * object it is copied into (zod's records and objects, `data[key] = value`) drops it without a
 * word, so a lead import named it nowhere and answered `success: true` as if it were stored.
 */
const PROTO_KEY_MESSAGE = 'is not accepted as a property name';

/** Why `key` cannot be a body key: text that cannot be stored, or `__proto__`; undefined when it can. */
export function keyProblem(key: string): string | undefined {
  return textProblem(key) ?? (key === '__proto__' ? PROTO_KEY_MESSAGE : undefined);
}

export interface ValueProblem {
  /** Dotted path of the offending key or value (`Data.Name`, `items.3`), '' for the root. */
  path: string;
  message: string;
  /** `depth`: nested deeper than allowed, the others: a string the database cannot store. */
  kind: 'text' | 'depth';
}

/**
 * The first key or string in a parsed JSON value that cannot be stored, or a nesting deeper
 * than `maxDepth` (the root object is depth 1). Walks with an explicit stack, so a body nested
 * ten thousand levels deep costs a loop, not the call stack.
 */
export function findValueProblem(root: unknown, maxDepth: number): ValueProblem | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const message = textProblem(value);
      if (message) return { path, message, kind: 'text' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth + 1 > maxDepth) return { path, message: `is nested deeper than ${maxDepth} levels`, kind: 'depth' };
    const entries = Object.entries(value as Record<string, unknown>);
    for (const [key] of entries) {
      const keyMessage = keyProblem(key);
      if (keyMessage) return { path: path ? `${path}.${key}` : key, message: keyMessage, kind: 'text' };
    }
    // Pushed in reverse so the first property is looked at first.
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i]!;
      stack.push({ value: item, path: path ? `${path}.${key}` : key, depth: depth + 1 });
    }
  }
  return undefined;
}
