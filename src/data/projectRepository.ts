import type { Knex } from 'knex';
import type { ProjectScope } from './projectScope';
import { projectVisibleSql } from './projectScope';
import { projectSelection } from '../domain/projectPatterns';

/**
 * Projects (docs/decisions.md, Projects): a project is the name campaigns carry, compared
 * case-insensitively. Its unique id is derived from that name (an md5-based UUID of the
 * lower-cased name), so it is stable, needs no table to keep in step with the campaigns, and is
 * the same in every database and every run of the synthetic data.
 */

/** SQL for the unique id of the project named by `column` (binding-free). */
export function projectUniqueIdSql(column: string): string {
  return `md5('project:' || lower(${column}))::uuid::text`;
}

/** A project as `GET /projects` lists it. */
export interface ProjectSummary {
  uniqueId: string;
  /** As its campaigns spell it (the first, in sort order, if they differ in case). */
  name: string;
  /** At least one of its campaigns is active. */
  active: boolean;
}

/** The projects of the campaigns the account can see, one per case-insensitive name, sorted by name. */
export async function listVisibleProjects(db: Knex, scope: ProjectScope): Promise<ProjectSummary[]> {
  const visible = projectVisibleSql('c.project', scope);
  const { rows } = await db.raw<{ rows: ProjectSummary[] }>(
    `select ${projectUniqueIdSql('min(c.project)')} as "uniqueId", min(c.project) as name, bool_or(c.active) as active
       from campaigns c
      where ${visible.sql}
      group by lower(c.project)
      order by name, "uniqueId"`,
    visible.bindings as Knex.RawBinding[],
  );
  return rows;
}

/**
 * SQL condition (with its bindings) that the project in `column` is selected by a client's
 * project filter: one of the values matches it as a pattern, or names it by unique id. Used on
 * campaigns and calendars (a few hundred rows), so a lead export compares ids once per
 * campaign, never per lead; without an id-shaped value it is the plain pattern match.
 */
export function projectSelectedSql(column: string, values: readonly string[]): { sql: string; bindings: Knex.RawBinding[] } {
  const selection = projectSelection(values);
  if (selection.uniqueIds.length === 0) {
    return { sql: `lower(${column}) like any(?::text[])`, bindings: [selection.likePatterns] };
  }
  return {
    sql: `(lower(${column}) like any(?::text[]) or ${projectUniqueIdSql(column)} = any(?::text[]))`,
    bindings: [selection.likePatterns, selection.uniqueIds],
  };
}

/**
 * The same test for patterns kept in a text[] column (a hook's `projects`), as SQL over
 * `projectColumn` and `patternsColumn` (binding-free).
 */
export function projectSelectedByColumnSql(projectColumn: string, patternsColumn: string): string {
  return `exists (select 1 from unnest(${patternsColumn}) p
                   where lower(${projectColumn}) like lcm_glob_to_like(p) or ${projectUniqueIdSql(projectColumn)} = lower(p))`;
}

export interface ProjectRef {
  /** The project's name as its campaigns spell it (the first, in sort order, if they differ in case). */
  name: string;
  uniqueId: string;
  /** Whether the project matches one of the account's patterns. */
  visible: boolean;
}

/** The project with this name (case-insensitive) or unique id, if some campaign carries it. */
export async function findProject(
  db: Knex | Knex.Transaction,
  nameOrUniqueId: string,
  scope: ProjectScope,
): Promise<ProjectRef | undefined> {
  const { rows } = await db.raw<{ rows: { name: string; unique_id: string; visible: boolean }[] }>(
    `select min(c.project) as name, ${projectUniqueIdSql('min(c.project)')} as unique_id,
            bool_or(lower(c.project) like any(?::text[])) as visible
       from campaigns c
      where lower(c.project) = lower(?) or ${projectUniqueIdSql('c.project')} = lower(?)
      group by lower(c.project)
      limit 1`,
    [scope.likePatterns, nameOrUniqueId, nameOrUniqueId],
  );
  const r = rows[0];
  return r === undefined ? undefined : { name: r.name, uniqueId: r.unique_id, visible: r.visible };
}
