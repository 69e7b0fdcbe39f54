import type { Knex } from 'knex';
import type { ProjectScope } from './projectScope';

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

export interface ProjectRef {
  /** The project's name as its campaigns spell it (the first, in sort order, if they differ in case). */
  name: string;
  uniqueId: string;
  /** Whether the project matches one of the account's patterns. */
  visible: boolean;
}

/** The project with this name (case-insensitive) or unique id, if some campaign carries it. */
export async function findProject(db: Knex | Knex.Transaction, nameOrUniqueId: string, scope: ProjectScope): Promise<ProjectRef | undefined> {
  const { rows } = await db.raw(
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
