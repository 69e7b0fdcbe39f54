import type { Knex } from 'knex';
import { LeadClosure, LeadStatus } from '../domain/enums';
import type { SavedSearchFilter } from '../domain/leadFilters';

/** Searches saved in the UI by platform users (docs/decisions.md, Leads). */
export interface SavedSearch extends SavedSearchFilter {
  name: string;
}

interface SavedSearchRow {
  id: number;
  user_id: number;
  name: string;
  campaigns: string[];
  projects: string[];
  statuses: number[];
  lead_closures: number[];
  all_open_statuses: boolean;
  all_closed_statuses: boolean;
}

/**
 * The search of that name saved by that user, or undefined: another user's search of the same
 * name is not found (only the account's linked user's searches run). Names match exactly.
 */
export async function findSavedSearch(db: Knex, userId: number, name: string): Promise<SavedSearch | undefined> {
  const row = await db<SavedSearchRow>('saved_searches')
    .where({ user_id: userId, name })
    .first('name', 'campaigns', 'projects', 'statuses', 'lead_closures', 'all_open_statuses', 'all_closed_statuses');
  if (!row) return undefined;
  return {
    name: row.name,
    campaigns: row.campaigns,
    projects: row.projects,
    statuses: row.statuses.map((n) => LeadStatus.toName(n)),
    leadClosures: row.lead_closures.map((n) => LeadClosure.toName(n)),
    allOpenStatuses: row.all_open_statuses,
    allClosedStatuses: row.all_closed_statuses,
  };
}
