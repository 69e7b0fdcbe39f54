import type { Knex } from 'knex';
import { patternToSqlLike } from '../domain/projectPatterns';

/**
 * Project rights as a scope passed into every query (docs/decisions.md, Accounts and rights; Project patterns): rows are filtered in SQL by
 * the account's patterns, never in JavaScript after fetching. Patterns are anchored and
 * case-insensitive; an account without patterns sees nothing.
 */
export interface ProjectScope {
  /** LIKE patterns, lowercased, for `lower(project) LIKE ANY(?)`. */
  likePatterns: string[];
}

export function projectScope(patterns: readonly string[]): ProjectScope {
  return { likePatterns: patterns.map(patternToSqlLike) };
}

/** SQL condition (with its binding) that a `project` column expression is visible. */
export function projectVisibleSql(column: string, scope: ProjectScope): { sql: string; bindings: unknown[] } {
  return { sql: `lower(${column}) like any(?::text[])`, bindings: [scope.likePatterns] };
}

/** Adds `campaign_id in (visible campaigns)` to a query on a table with a campaign column. */
export function whereCampaignVisible<T extends Knex.QueryBuilder>(query: T, campaignColumn: string, scope: ProjectScope): T {
  return query.whereIn(campaignColumn, function visibleCampaigns(this: Knex.QueryBuilder) {
    this.select('id').from('campaigns').whereRaw('lower(project) like any(?::text[])', [scope.likePatterns]);
  }) as T;
}
