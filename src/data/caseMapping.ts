import type { Knex } from 'knex';

/**
 * Whether the database's `lower()` lower-cases letters beyond ASCII. Project patterns are
 * matched case-insensitively by `lower(project)` in SQL and `toLowerCase()` in the application
 * (src/domain/projectPatterns.ts); a database whose LC_CTYPE is `C` lower-cases only A–Z, so a
 * project named `Århus` would match neither `århus` nor `Århus*` in SQL (docs/operations.md).
 */
export async function lowersEveryLetter(db: Knex): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { ok: boolean }[] }>(`select lower('ÆØÅÉÜ') = 'æøåéü' as ok`);
  return rows[0]?.ok === true;
}
