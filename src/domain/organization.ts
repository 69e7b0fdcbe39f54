/**
 * The organisation as the API models it (org units, users, the campaigns an account can see),
 * and one request's in-memory snapshot of it: every include is resolved from these maps.
 */

/**
 * The org codes a code written in a URL path may stand for: as written first, then with each `+`
 * read as a space, as Java's URLEncoder and PHP's urlencode write spaces (in paths too). An org
 * code may hold a `+` itself (an e-mail address), so the code as written wins when both exist.
 */
export function orgCodeSpellings(orgCode: string): string[] {
  const spaced = orgCode.replaceAll('+', ' ');
  return spaced === orgCode ? [orgCode] : [orgCode, spaced];
}

/** What `find` finds for the first of an org code's spellings (orgCodeSpellings) it finds anything for. */
export function findBySpelling<T>(orgCode: string, find: (spelling: string) => T | undefined): T | undefined {
  for (const spelling of orgCodeSpellings(orgCode)) {
    const found = find(spelling);
    if (found !== undefined) return found;
  }
  return undefined;
}

export interface OrgUnitRecord {
  id: number;
  uniqueId: string;
  orgCode: string;
  name: string;
  level: number;
  parentId: number | null;
}

export interface UserRecord {
  id: number;
  uniqueId: string;
  username: string;
  name: string;
  orgCode: string;
  email: string | null;
  inboundPhoneNumber: string | null;
  parentId: number | null;
  roles: string[];
  employeeNumber: string | null;
  payrollNumber: string | null;
  /** Ids of the campaigns the user works on that the account can see, by campaign code. */
  campaignIds: number[];
}

export interface CampaignRecord {
  id: number;
  uniqueId: string;
  name: string;
  code: string;
  project: string;
  leadDefinitionUniqueId: string;
  campaignType: number;
  active: boolean;
}

/** The organisation as one request sees it. */
export interface OrgSnapshot {
  units: Map<number, OrgUnitRecord>;
  /** Children of each unit, by org code. */
  childrenOf: Map<number, OrgUnitRecord[]>;
  users: Map<number, UserRecord>;
  /** Users directly in each unit, by org code. */
  usersOf: Map<number, UserRecord[]>;
  /** Only the campaigns visible to the account. */
  campaigns: Map<number, CampaignRecord>;
}

/** A snapshot with nothing in it: for answers that expand nothing from the organisation. */
export const EMPTY_SNAPSHOT: OrgSnapshot = {
  units: new Map(),
  childrenOf: new Map(),
  users: new Map(),
  usersOf: new Map(),
  campaigns: new Map(),
};
