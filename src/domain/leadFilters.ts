import { canonicalUniqueId } from './uniqueId';
import { CLOSED_LEAD_STATUSES, LeadClosure, LeadClosureName, LeadStatus, LeadStatusName, OPEN_LEAD_STATUSES } from './enums';

/**
 * The lead export filters (the OpenAPI document; docs/decisions.md, Leads) (SimpleLeads, saved searches, RawLeads) resolved into
 * one plain description the repository turns into SQL. Empty lists never reach the
 * repository: "no filter" is `undefined`, so "every status" and "no status" cannot be confused.
 */
export interface LeadFilterInput {
  /** Project patterns (`*`, `?`); default `*`. Always combined with the account's own patterns. */
  projects?: readonly string[];
  /** Campaign codes or unique ids. */
  campaigns?: readonly string[];
  /** Inclusive. */
  modifiedFrom?: Date;
  /** Exclusive. */
  modifiedTo?: Date;
  statuses?: readonly LeadStatusName[];
  allOpenStatuses?: boolean;
  allClosedStatuses?: boolean;
  closures?: readonly LeadClosureName[];
  uniqueIds?: readonly string[];
  /** At most this many leads (the first in export order); a cap, not a page. */
  limit?: number;
}

export interface LeadFilter {
  /** Project patterns the campaign's project must match (one of); undefined = any. */
  projectPatterns?: string[];
  /** Campaign codes or unique ids (one of); undefined = any. */
  campaignKeys?: string[];
  modifiedFrom?: Date;
  modifiedTo?: Date;
  /** Stored status numbers; undefined = every status. */
  statuses?: number[];
  /** Stored closure numbers; undefined = every closure. */
  closures?: number[];
  uniqueIds?: string[];
  /** At most this many leads, in export order; undefined = all. */
  limit?: number;
}

function nonEmpty<T>(values: readonly T[] | undefined): T[] | undefined {
  if (values === undefined) return undefined;
  const out = [...new Set(values)];
  return out.length > 0 ? out : undefined;
}

/**
 * The status set: the named statuses plus the open set (AllOpenStatuses=true) plus the closed
 * set (AllClosedStatuses=true). A flag set to false adds nothing; nothing at all means every
 * status.
 */
export function resolveStatuses(input: Pick<LeadFilterInput, 'statuses' | 'allOpenStatuses' | 'allClosedStatuses'>): number[] | undefined {
  const names = new Set<LeadStatusName>(input.statuses ?? []);
  if (input.allOpenStatuses) for (const s of OPEN_LEAD_STATUSES) names.add(s);
  if (input.allClosedStatuses) for (const s of CLOSED_LEAD_STATUSES) names.add(s);
  if (names.size === 0 || names.size === LeadStatus.names.length) return undefined;
  return [...names].map((n) => LeadStatus.toNumber(n)).sort((a, b) => a - b);
}

export function resolveLeadFilter(input: LeadFilterInput): LeadFilter {
  const filter: LeadFilter = {};
  const projects = nonEmpty(input.projects?.map((p) => p.trim()).filter((p) => p !== ''));
  // `*` alone is the default and filters nothing beyond the account's own patterns.
  if (projects !== undefined && !projects.includes('*')) filter.projectPatterns = projects;
  const campaigns = nonEmpty(input.campaigns?.map((c) => c.trim()).filter((c) => c !== ''));
  if (campaigns !== undefined) filter.campaignKeys = campaigns;
  if (input.modifiedFrom !== undefined) filter.modifiedFrom = input.modifiedFrom;
  if (input.modifiedTo !== undefined) filter.modifiedTo = input.modifiedTo;
  const statuses = resolveStatuses(input);
  if (statuses !== undefined) filter.statuses = statuses;
  const closures = nonEmpty(input.closures);
  if (closures !== undefined && closures.length < LeadClosure.names.length) {
    filter.closures = closures.map((c) => LeadClosure.toNumber(c)).sort((a, b) => a - b);
  }
  // A UUID in any letter case or in braces is the id as written (docs/decisions.md, Wire conventions).
  const uniqueIds = nonEmpty(input.uniqueIds?.map((u) => canonicalUniqueId(u.trim())).filter((u) => u !== ''));
  if (uniqueIds !== undefined) filter.uniqueIds = uniqueIds;
  if (input.limit !== undefined) filter.limit = input.limit;
  return filter;
}

/** A saved search as stored: its campaign selection and status filters (docs/decisions.md, Leads). */
export interface SavedSearchFilter {
  campaigns: string[];
  projects: string[];
  statuses: LeadStatusName[];
  leadClosures: LeadClosureName[];
  allOpenStatuses: boolean;
  allClosedStatuses: boolean;
}

/** What a saved-search request adds to the stored search: its time window and an optional project override. */
export interface SavedSearchRun {
  /** Inclusive. */
  modifiedFrom: Date;
  /** Exclusive; absent = no end. */
  modifiedTo?: Date;
  /** The `project` query parameter. */
  project?: string;
}

/**
 * The filter a saved search runs with: the stored search over the request's time window.
 * `project` replaces the search's campaign selection (its campaigns and projects) by the
 * campaigns of that project.
 */
export function savedSearchLeadFilter(search: SavedSearchFilter, run: SavedSearchRun): LeadFilter {
  const project = run.project?.trim();
  const override = project !== undefined && project !== '';
  return resolveLeadFilter({
    projects: override ? [project] : search.projects,
    campaigns: override ? undefined : search.campaigns,
    modifiedFrom: run.modifiedFrom,
    modifiedTo: run.modifiedTo,
    statuses: search.statuses,
    allOpenStatuses: search.allOpenStatuses,
    allClosedStatuses: search.allClosedStatuses,
    closures: search.leadClosures,
  });
}
