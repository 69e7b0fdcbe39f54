import { createHash } from 'node:crypto';

/**
 * Entity tags of leads (docs/decisions.md, Lead changes): a strong tag derived from the lead's
 * unique id and its row version, so it changes with every write and says nothing about the
 * storage. `If-Match` (RFC 9110) compares strongly: a weak tag never matches.
 */

export function leadEntityTag(uniqueId: string, version: string): string {
  return `"${createHash('sha256').update(`${uniqueId}:${version}`).digest('base64url').slice(0, 22)}"`;
}

/** Whether an `If-Match` header is `*`: any current version of an existing resource matches. */
export function ifMatchesAny(header: string): boolean {
  return header.trim() === '*';
}

/** Whether an `If-Match` header value lets a write to a resource with this current tag go ahead. */
export function ifMatchAccepts(header: string, current: string): boolean {
  const value = header.trim();
  if (ifMatchesAny(value)) return true;
  // Entity tags hold no commas or quotes inside, so a list splits on commas.
  return value
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === current);
}
