import type { DateTimeFormatName, EntryAccessName, ResourceType, Verb } from './enums';

/** The authenticated web service account a request runs as (docs/decisions.md, Accounts). */
export interface AccountContext {
  id: number;
  username: string;
  /** The linked platform user. */
  userId: number;
  userOrgCode: string;
  /** Project-rights wildcard patterns (`*`, `?`), matched case-insensitively and anchored. */
  projectPatterns: string[];
  rights: Partial<Record<ResourceType, Verb[]>>;
  entryAccess: EntryAccessName;
  /** How answers write DateTimes unless a request prefers otherwise. */
  dateTimeFormat: DateTimeFormatName;
  version: number;
}

export function hasRight(account: Pick<AccountContext, 'rights'>, resource: ResourceType, verb: Verb): boolean {
  return account.rights[resource]?.includes(verb) ?? false;
}
