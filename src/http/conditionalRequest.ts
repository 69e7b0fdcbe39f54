/**
 * `If-None-Match` on a GET as RFC 9110 (13.1.2) evaluates it: the condition fails, and the
 * answer is a 304, when the field is `*` or one of its entity tags matches the current one by
 * weak comparison (the opaque tags are equal, `W/` or not). Nothing else of the request counts:
 * fetch clients (Node's, Deno's, browsers') add `Cache-Control: no-cache` and `Pragma: no-cache`
 * to every request that carries `If-None-Match`, and Express's `req.fresh` takes that for a
 * reload and answers 200, so a fetch client never got its 304. That header asks caches to
 * revalidate with the origin; it does not ask the origin to ignore the client's validator.
 */

/**
 * The entity tags of an `If-None-Match` list, each as its opaque part: elements are separated by
 * commas and optional spaces, a tag is `"…"` or `W/"…"` (its characters exclude `"`, RFC 9110
 * etagc, so a comma inside one is part of it); an element that is not a tag is skipped.
 */
function* listedTags(field: string): Generator<string> {
  const element = /[\s,]*((?:W\/)?"([^"]*)"|[^,]*)/y;
  while (element.lastIndex < field.length) {
    const match = element.exec(field);
    if (match === null || match[0] === '') return;
    if (match[2] !== undefined) yield match[2];
  }
}

/** The opaque part of an entity tag as this server writes it (`W/"x"` or `"x"` → `x`). */
function opaqueTag(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"|"$/g, '');
}

/**
 * Whether a GET with this `If-None-Match` field (several fields arrive joined by commas) is
 * answered 304 when the current representation has `etag`.
 */
export function ifNoneMatchMatches(field: string | undefined, etag: string | undefined): boolean {
  if (field === undefined || etag === undefined) return false;
  if (field.trim() === '*') return true;
  const current = opaqueTag(etag);
  for (const tag of listedTags(field)) {
    if (tag === current) return true;
  }
  return false;
}
