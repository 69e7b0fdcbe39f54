import { Enumeration, LeadStatus, OPEN_LEAD_STATUSES } from './enums';
import { addTimeSpan, TimeSpan } from './timespan';

/**
 * The duplicate check on import (docs/decisions.md, Duplicates on import): which stored leads
 * make a new one a duplicate (scope, key, window, statuses) and what the import then does.
 * Campaign defaults and the request's parameters combine here; the check itself runs in SQL.
 */

// Numbers only for the case-insensitive parse of Enumeration; campaigns store the names.
export const DuplicateCheck = new Enumeration('DuplicateCheck', { None: 0, Campaign: 1, Project: 2, Account: 3 } as const);
export type DuplicateCheckName = (typeof DuplicateCheck.names)[number];

export const DuplicateKey = new Enumeration('DuplicateKey', { Phone: 0, ExternalKey: 1, PhoneOrExternalKey: 2 } as const);
export type DuplicateKeyName = (typeof DuplicateKey.names)[number];

export const OnDuplicate = new Enumeration('OnDuplicate', { Reject: 0, Skip: 1, Update: 2 } as const);
export type OnDuplicateName = (typeof OnDuplicate.names)[number];

export const DuplicateStatuses = new Enumeration('DuplicateStatuses', { Open: 0, All: 1 } as const);
type DuplicateStatusesName = (typeof DuplicateStatuses.names)[number];

/** The duplicate parameters of a request or the defaults of a campaign; absent = not said. */
export interface DuplicateSettings {
  check?: DuplicateCheckName;
  key?: DuplicateKeyName;
  window?: TimeSpan;
  statuses?: DuplicateStatusesName;
  onDuplicate?: OnDuplicateName;
}

/** A check that runs. */
export interface DuplicateRule {
  check: Exclude<DuplicateCheckName, 'None'>;
  key: DuplicateKeyName;
  window?: TimeSpan;
  statuses: DuplicateStatusesName;
  onDuplicate: OnDuplicateName;
}

/** The request's settings over the campaign's, over the defaults; undefined when no check runs (None). */
export function duplicateRule(campaign: DuplicateSettings, request: DuplicateSettings): DuplicateRule | undefined {
  const check = request.check ?? campaign.check ?? 'None';
  if (check === 'None') return undefined;
  const window = request.window ?? campaign.window;
  return {
    check,
    key: request.key ?? campaign.key ?? 'Phone',
    ...(window !== undefined ? { window } : {}),
    statuses: request.statuses ?? campaign.statuses ?? 'Open',
    onDuplicate: request.onDuplicate ?? campaign.onDuplicate ?? 'Reject',
  };
}

/** Where the stored duplicates are looked for: the scope, the earliest upload time that counts (none: any age), the statuses that count (none: every one). */
export interface DuplicateSearch {
  scope: 'campaign' | 'project' | 'account';
  since?: Date;
  statuses?: number[];
}

const SEARCH_SCOPES = { Campaign: 'campaign', Project: 'project', Account: 'account' } as const;

/** No lead is uploaded before the earliest DateTime the API takes (docs/decisions.md, DateTime and TimeSpan). */
const EARLIEST_UPLOAD_MS = Date.UTC(1899, 11, 31);

/**
 * The earliest upload time a window counts; none when it reaches back before any upload
 * (`P999999999Y`, the .NET `TimeSpan.MaxValue`): such a window is any age, not a time Postgres
 * or a JavaScript Date cannot hold.
 */
function windowStart(now: Date, window: TimeSpan, zone: string): Date | undefined {
  const since = addTimeSpan(now, { ...window, negative: !window.negative }, zone);
  return since.getTime() >= EARLIEST_UPLOAD_MS ? since : undefined;
}

/** The search a rule makes at `now`, for the single and the bulk import alike. */
export function duplicateSearch(rule: DuplicateRule, now: Date, zone: string): DuplicateSearch {
  const since = rule.window === undefined ? undefined : windowStart(now, rule.window, zone);
  return {
    scope: SEARCH_SCOPES[rule.check],
    ...(since !== undefined ? { since } : {}),
    ...(rule.statuses === 'All' ? {} : { statuses: OPEN_LEAD_STATUSES.map((s) => LeadStatus.toNumber(s)) }),
  };
}

/** What a duplicate answers: the row's or the request's message. */
export function duplicateMessage(uniqueId: string): string {
  return `duplicate of lead ${uniqueId}`;
}

/** The field a rejected duplicate names: the key that matched. */
export function duplicateField(matched: 'phone' | 'externalKey'): string {
  return matched === 'phone' ? 'Phone' : 'ExternalKey';
}
