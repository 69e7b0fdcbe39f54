import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';

/**
 * The migrations of db/migrations, named without their extension. A checkout runs them as
 * `.ts` files (tests, tsx), the compiled build as `.js` files in dist/db/migrations; knex
 * records the name it is given, and a name with the extension made a database migrated by
 * one look "corrupt" to the other (docs/decisions.md, "Command line").
 */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../db/migrations');
export const MIGRATIONS_TABLE = 'knex_migrations';

interface MigrationFile {
  name: string;
  file: string;
}

export function migrationSource(dir = MIGRATIONS_DIR): Knex.MigrationSource<MigrationFile> {
  return {
    async getMigrations() {
      const byName = new Map<string, MigrationFile>();
      for (const entry of await fs.promises.readdir(dir)) {
        const name = /^(.+)\.(ts|js)$/.exec(entry)?.[1];
        if (name !== undefined && !entry.endsWith('.d.ts') && !byName.has(name)) byName.set(name, { name, file: path.join(dir, entry) });
      }
      return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    getMigrationName: (migration) => migration.name,
    // module.require is the require of this module (also under jest); a rejection, not a throw, when loading fails.
    getMigration: (migration) => new Promise((resolve) => resolve(module.require(migration.file) as Knex.Migration)),
  };
}

/**
 * Databases migrated before names lost their extension recorded `name.ts` (or `name.js`);
 * they are renamed once, so either build sees its migrations as applied. Idempotent.
 */
export async function dropRecordedExtensions(db: Knex): Promise<void> {
  if (!(await db.schema.hasTable(MIGRATIONS_TABLE))) return;
  await db(MIGRATIONS_TABLE)
    .whereRaw(`name ~ '\\.(ts|js)$'`)
    .update({ name: db.raw(`regexp_replace(name, '\\.(ts|js)$', '')`) });
}

/**
 * The migrations the database has not recorded as applied (every one on a database that never
 * was migrated), oldest first. Reads only: knex's own listing would create its tables.
 */
export async function pendingMigrations(db: Knex, dir = MIGRATIONS_DIR): Promise<string[]> {
  const names = (await migrationSource(dir).getMigrations([])).map((m) => m.name);
  if (!(await db.schema.hasTable(MIGRATIONS_TABLE))) return names;
  const rows = await db(MIGRATIONS_TABLE).select<{ name: string }[]>('name');
  // Names recorded with their extension by earlier versions count as applied (dropRecordedExtensions).
  const applied = new Set(rows.map((r) => r.name.replace(/\.(ts|js)$/, '')));
  return names.filter((name) => !applied.has(name));
}
