import type { Knex } from 'knex';
import {
  DateTimeFormat,
  DateTimeFormatName,
  EntryAccess,
  EntryAccessName,
  RESOURCE_TYPES,
  ResourceType,
  VERBS,
  Verb,
} from '../domain/enums';
import { hashPassword } from '../domain/password';

/**
 * Account administration (docs/decisions.md, Accounts and rights): used by `lcm account`, the demo seed and tests.
 * Every change bumps accounts.version so credential caches keyed on it go stale; telling
 * running servers at once is notifyAccountChanged (src/data/accountChanges.ts), called after
 * the change has committed.
 */

/** A bad input or an unknown account/user; the message is one line meant for the operator. */
export class AccountCommandError extends Error {}

export type Rights = Partial<Record<ResourceType, Verb[]>>;

export interface AccountInput {
  username: string;
  password: string;
  /** Org code of the linked platform user. */
  userOrgCode: string;
  projects: string[];
  rights: Rights;
  entryAccess: EntryAccessName;
  /** How answers write DateTimes; default Offset. */
  dateTimeFormat?: DateTimeFormatName;
  enabled?: boolean;
}

export interface AccountChange {
  id: number;
  version: number;
}

const resourceByLower = new Map<string, ResourceType>(RESOURCE_TYPES.map((r) => [r.toLowerCase(), r]));
const verbByLower = new Map<string, Verb>(VERBS.map((v) => [v.toLowerCase(), v]));

/**
 * `Calls:Get;Leads:Get,Post` → { Calls: ['Get'], Leads: ['Get', 'Post'] }. Names are matched
 * case-insensitively and stored in their canonical spelling; an unknown one is an error naming it.
 */
export function parseRights(spec: string): Rights {
  const rights: Rights = {};
  for (const part of spec.split(';')) {
    const entry = part.trim();
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    if (colon < 0) throw new AccountCommandError(`bad rights entry "${entry}": expected Resource:Verb[,Verb...]`);
    const resourceName = entry.slice(0, colon).trim();
    const resource = resourceByLower.get(resourceName.toLowerCase());
    if (!resource) {
      throw new AccountCommandError(`unknown resource type "${resourceName}" (one of ${RESOURCE_TYPES.join(', ')})`);
    }
    const verbs = new Set(rights[resource] ?? []);
    for (const verbText of entry.slice(colon + 1).split(',')) {
      const verbName = verbText.trim();
      const verb = verbByLower.get(verbName.toLowerCase());
      if (!verb) throw new AccountCommandError(`unknown verb "${verbName}" for ${resource} (one of ${VERBS.join(', ')})`);
      verbs.add(verb);
    }
    rights[resource] = VERBS.filter((v) => verbs.has(v));
  }
  return rights;
}

/** Rights back in the `Calls:Get;Leads:Get,Post` form (account list). */
export function formatRights(rights: Rights): string {
  return RESOURCE_TYPES.filter((r) => rights[r]?.length)
    .map((r) => `${r}:${rights[r]!.join(',')}`)
    .join(';');
}

export function parseProjects(spec: string): string[] {
  const patterns = spec
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (patterns.length === 0) throw new AccountCommandError('no project pattern given (use * for all projects)');
  return patterns;
}

export function parseEntryAccess(value: string): EntryAccessName {
  const access = EntryAccess.parse(value);
  if (!access) throw new AccountCommandError(`unknown entry access "${value}" (one of ${EntryAccess.names.join(', ')})`);
  return access;
}

export function parseDateTimeFormat(value: string): DateTimeFormatName {
  const format = DateTimeFormat.parse(value);
  if (!format) throw new AccountCommandError(`unknown DateTime format "${value}" (one of ${DateTimeFormat.names.join(', ')})`);
  return format;
}

function validate(input: AccountInput): void {
  if (input.username.trim() === '' || input.username !== input.username.trim()) {
    throw new AccountCommandError('username must be non-empty without leading or trailing spaces');
  }
  // Basic authentication splits the header at the first colon.
  if (input.username.includes(':')) throw new AccountCommandError('username must not contain ":"');
  if (input.password === '') throw new AccountCommandError('password must not be empty');
  for (const [resource, verbs] of Object.entries(input.rights)) {
    if (!resourceByLower.has(resource.toLowerCase())) throw new AccountCommandError(`unknown resource type "${resource}"`);
    for (const verb of verbs ?? [])
      if (!(VERBS as readonly string[]).includes(verb)) throw new AccountCommandError(`unknown verb "${verb}" for ${resource}`);
  }
  if (!EntryAccess.names.includes(input.entryAccess)) throw new AccountCommandError(`unknown entry access "${input.entryAccess}"`);
  if (input.dateTimeFormat !== undefined && !DateTimeFormat.names.includes(input.dateTimeFormat)) {
    throw new AccountCommandError(`unknown DateTime format "${input.dateTimeFormat}"`);
  }
}

async function userId(db: Knex, orgCode: string): Promise<number> {
  const user = await db('users').where({ org_code: orgCode }).first<{ id: number } | undefined>('id');
  if (!user) throw new AccountCommandError(`no user with org code "${orgCode}"`);
  return user.id;
}

async function accountValues(db: Knex, input: AccountInput) {
  validate(input);
  return {
    username: input.username,
    password_hash: await hashPassword(input.password),
    user_id: await userId(db, input.userOrgCode),
    project_patterns: input.projects,
    rights: JSON.stringify(input.rights),
    entry_access: EntryAccess.toNumber(input.entryAccess),
    date_time_format: DateTimeFormat.toNumber(input.dateTimeFormat ?? 'Offset'),
    enabled: input.enabled ?? true,
  };
}

/** Creates a new account; an existing username is an error. */
export async function createAccount(db: Knex, input: AccountInput): Promise<AccountChange> {
  const values = await accountValues(db, input);
  const [row] = await db('accounts').insert(values).onConflict('username').ignore().returning<AccountChange[]>(['id', 'version']);
  if (!row) throw new AccountCommandError(`account "${input.username}" already exists`);
  return { id: row.id, version: row.version };
}

/** Creates the account or replaces every setting of an existing one (and bumps its version). */
export async function upsertAccount(db: Knex, input: AccountInput): Promise<AccountChange> {
  const values = await accountValues(db, input);
  const [row] = await db('accounts')
    .insert(values)
    .onConflict('username')
    .merge({ ...values, version: db.raw('accounts.version + 1') })
    .returning<AccountChange[]>(['id', 'version']);
  return { id: row!.id, version: row!.version };
}

async function updateAccount(db: Knex, username: string, values: Record<string, unknown>): Promise<AccountChange> {
  const [row] = await db('accounts')
    .where({ username })
    .update({ ...values, version: db.raw('version + 1') })
    .returning<AccountChange[]>(['id', 'version']);
  if (!row) throw new AccountCommandError(`no account "${username}"`);
  return { id: row.id, version: row.version };
}

export async function setPassword(db: Knex, username: string, password: string): Promise<AccountChange> {
  if (password === '') throw new AccountCommandError('password must not be empty');
  return updateAccount(db, username, { password_hash: await hashPassword(password) });
}

export async function setEnabled(db: Knex, username: string, enabled: boolean): Promise<AccountChange> {
  return updateAccount(db, username, { enabled });
}
