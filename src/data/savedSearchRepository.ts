import type { Knex } from 'knex';
import { LeadClosure, LeadClosureName, LeadStatus, LeadStatusName } from '../domain/enums';
import type { SavedSearchFilter } from '../domain/leadFilters';

/** Searches saved in the UI by platform users (docs/decisions.md, Leads). */
export interface SavedSearch extends SavedSearchFilter {
  name: string;
}

/**
 * The search of that name saved by that user, or undefined: another user's search of the same
 * name is not found (only the account's linked user's searches run). Names match exactly.
 */
export async function findSavedSearch(db: Knex, userId: number, name: string): Promise<SavedSearch | undefined> {
  const row = await db('saved_searches')
    .where({ user_id: userId, name })
    .first('name', 'campaigns', 'projects', 'statuses', 'lead_closures', 'all_open_statuses', 'all_closed_statuses');
  if (!row) return undefined;
  return {
    name: row.name,
    campaigns: row.campaigns,
    projects: row.projects,
    statuses: (row.statuses as number[]).map((n) => LeadStatus.toName(n)),
    leadClosures: (row.lead_closures as number[]).map((n) => LeadClosure.toName(n)),
    allOpenStatuses: row.all_open_statuses,
    allClosedStatuses: row.all_closed_statuses,
  };
}
