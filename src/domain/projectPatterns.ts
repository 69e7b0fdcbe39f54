/**
 * Project-rights patterns (docs/decisions.md, Project patterns): `*` is zero or more characters, `?` exactly one;
 * anchored and case-insensitive. Both sides are lower-cased, in JS and in SQL (`lower(project)`),
 * so the in-memory match and the database filter agree. A literal `*` or `?` cannot be matched.
 */
import { canonicalUniqueId, isUuid } from './uniqueId';

/**
 * A text lower-cased letter by letter (Unicode's simple case mapping), as Postgres's `lower()`
 * does: `toLowerCase()` of a whole text applies context rules (a final `Σ` becomes `ς`) and
 * turns `İ` into two code points, so a name and a pattern lower-cased here and in SQL would differ.
 */
export function lowerCase(text: string): string {
  let out = '';
  for (const ch of text) out += ch === '\u0130' ? 'i' : ch.toLowerCase();
  return out;
}

/** `B2B*` → `b2b%` for `lower(project) LIKE ANY(?)`; `\`, `%` and `_` are escaped with `\`. */
export function patternToSqlLike(pattern: string): string {
  let out = '';
  for (const ch of lowerCase(pattern)) {
    if (ch === '*') out += '%';
    else if (ch === '?') out += '_';
    else if (ch === '\\' || ch === '%' || ch === '_') out += '\\' + ch;
    else out += ch;
  }
  return out;
}

const MAX_CACHED = 1000;
const compiled = new Map<string, RegExp>();

function toRegExp(pattern: string): RegExp {
  let re = compiled.get(pattern);
  if (re === undefined) {
    let source = '^';
    // Iterating by code point so that `?` is one character, as `_` is in Postgres.
    for (const ch of lowerCase(pattern)) {
      if (ch === '*') source += '.*';
      else if (ch === '?') source += '.';
      else source += ch.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
    }
    re = new RegExp(source + '$', 'su');
    if (compiled.size >= MAX_CACHED) compiled.clear();
    compiled.set(pattern, re);
  }
  return re;
}

export function matchesPattern(pattern: string, value: string): boolean {
  return toRegExp(pattern).test(lowerCase(value));
}

export function matchesAny(patterns: readonly string[], value: string): boolean {
  for (const p of patterns) if (matchesPattern(p, value)) return true;
  return false;
}

/** `B2B*, Sales,,` → `['B2B*', 'Sales']`: comma separated, trimmed, empty items dropped. */
export function parsePatternList(raw: string): string[] {
  const out: string[] = [];
  for (const part of raw.split(',')) {
    const p = part.trim();
    if (p !== '') out.push(p);
  }
  return out;
}

/**
 * The values of a client's project filter (docs/decisions.md, Projects): each is a pattern, and
 * one shaped like a project unique id may also name that project by its id, in any letter case
 * and with or without braces (src/domain/uniqueId.ts); a value matching neither a name nor an id
 * simply matches nothing.
 */
export interface ProjectSelection {
  /** Every value as a `LIKE` pattern, for `lower(project) LIKE ANY(?)`. */
  likePatterns: string[];
  /** The values shaped like a project unique id, as ids are written (lower case, no braces). */
  uniqueIds: string[];
}

export function projectSelection(values: readonly string[]): ProjectSelection {
  return {
    likePatterns: values.map(patternToSqlLike),
    uniqueIds: values.filter(isUuid).map(canonicalUniqueId),
  };
}
