import type { Knex } from 'knex';
import type { AccountContext } from '../domain/account';
import { DateTimeFormat, EntryAccess, ResourceType, Verb } from '../domain/enums';

export interface StoredAccount extends AccountContext {
  passwordHash: string;
  enabled: boolean;
  /** Per-service daily limit overrides. */
  limits: Record<string, number>;
}

interface AccountRow {
  id: number;
  username: string;
  password_hash: string;
  user_id: number;
  user_org_code: string;
  project_patterns: string[];
  rights: Partial<Record<ResourceType, Verb[]>>;
  entry_access: number;
  date_time_format: number;
  enabled: boolean;
  version: number;
  limits: Record<string, number> | null;
}

function toAccount(row: AccountRow): StoredAccount {
  return {
    id: row.id,
    username: row.username,
    passwordHash: row.password_hash,
    userId: row.user_id,
    userOrgCode: row.user_org_code,
    projectPatterns: row.project_patterns,
    rights: row.rights,
    entryAccess: EntryAccess.toName(row.entry_access),
    dateTimeFormat: DateTimeFormat.toName(row.date_time_format),
    enabled: row.enabled,
    version: row.version,
    limits: row.limits ?? {},
  };
}

const SELECT_ACCOUNT = `
  select a.id, a.username, a.password_hash, a.user_id, u.org_code as user_org_code,
         a.project_patterns, a.rights, a.entry_access, a.date_time_format, a.enabled, a.version,
         (select jsonb_object_agg(l.service, l.daily_limit) from request_limits l where l.account_id = a.id) as limits
    from accounts a join users u on u.id = a.user_id`;

export async function findAccountByUsername(db: Knex, username: string): Promise<StoredAccount | undefined> {
  const { rows } = await db.raw<{ rows: AccountRow[] }>(`${SELECT_ACCOUNT} where a.username = ?`, [username]);
  return rows[0] ? toAccount(rows[0]) : undefined;
}

export async function accountVersion(db: Knex, id: number): Promise<number | undefined> {
  const row = await db<Pick<AccountRow, 'id' | 'version'>>('accounts').where({ id }).first('version');
  return row?.version;
}

export async function listAccounts(db: Knex): Promise<StoredAccount[]> {
  const { rows } = await db.raw<{ rows: AccountRow[] }>(`${SELECT_ACCOUNT} order by a.username`);
  return rows.map(toAccount);
}
