import { createHash } from 'node:crypto';

/**
 * Entity tags of leads (docs/decisions.md, Lead changes). A lead's tag has two parts: its
 * version (from the unique id and the row version, so it changes with every write and says
 * nothing about the storage) and a digest of the body sent, so the strong tag also changes
 * whenever the representation would: another account's entry access, a changed lead
 * definition, `Include`, `Prefer: datetime=`. `If-Match` protects the lead, not one rendering of
 * it: it compares the version part, strongly (a weak tag never matches).
 */

/** The version part of a lead's entity tag. */
export function leadVersionTag(uniqueId: string, version: string): string {
  return createHash('sha256').update(`${uniqueId}:${version}`).digest('base64url').slice(0, 22);
}

/** The strong entity tag of a body that shows the resource at `versionTag` (base64url: no `.` inside). */
export function entityTag(versionTag: string, body: string): string {
  return `"${versionTag}.${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
}

/** Whether an `If-Match` header is `*`: any current version of an existing resource matches. */
export function ifMatchesAny(header: string): boolean {
  return header.trim() === '*';
}

/**
 * Whether an `If-Match` header value lets a write to a resource at this version go ahead: one of
 * its strong tags names that version, whichever representation it came with (a tag of the
 * version alone, as answered before bodies had their part, still names it).
 */
export function ifMatchAccepts(header: string, versionTag: string): boolean {
  const value = header.trim();
  if (ifMatchesAny(value)) return true;
  // Entity tags hold no commas or quotes inside, so a list splits on commas.
  return value
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => /^"[^"]*"$/.test(tag) && tag.slice(1, -1).split('.')[0] === versionTag);
}
