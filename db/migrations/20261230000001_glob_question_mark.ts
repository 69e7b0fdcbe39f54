import type { Knex } from 'knex';

/**
 * lcm_glob_to_like, the SQL twin of patternToSqlLike (src/domain/projectPatterns.ts), turns `?`
 * into `_` again. Its first definition wrote the `?` in a knex.raw text, where knex reads a `?` as
 * a binding and stored `$2` in its place: a pattern with `?` (`?etail`) matched no project in
 * the SQL that uses it (the hook project checks, the hook events of an import). The `?` is
 * written as chr(63) here, which knex leaves alone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION lcm_glob_to_like(pattern text) RETURNS text
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT replace(replace(replace(replace(replace(lower(pattern), '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'), chr(63), '_')
      $$;
  `);
}

/** The function as the hooks migration left it. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION lcm_glob_to_like(pattern text) RETURNS text
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT replace(replace(replace(replace(replace(lower(pattern), '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'), '$2', '_')
      $$;
  `);
}
