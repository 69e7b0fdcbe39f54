import type { Knex } from 'knex';

/** The loader's upserts of what belongs to users and accounts: saved searches and request limits. */

/** The columns of a saved search besides its user and name. */
export interface SavedSearchRow {
  campaigns: string[];
  projects: string[];
  statuses: number[];
  lead_closures: number[];
  all_open_statuses: boolean;
  all_closed_statuses: boolean;
}

/** Adds the user's saved search or updates the one with its name. */
export async function upsertSavedSearch(trx: Knex.Transaction, userId: number, name: string, search: SavedSearchRow): Promise<void> {
  await trx('saved_searches')
    .insert({ user_id: userId, name, ...search })
    .onConflict(['user_id', 'name'])
    .merge(Object.keys(search));
}

export async function findAccountId(trx: Knex.Transaction, username: string): Promise<number | undefined> {
  const row = await trx('accounts').where({ username }).first<{ id: number } | undefined>('id');
  return row?.id;
}

/** Sets the account's daily limit for a service. */
export async function upsertRequestLimit(trx: Knex.Transaction, accountId: number, service: string, dailyLimit: number): Promise<void> {
  await trx('request_limits')
    .insert({ account_id: accountId, service, daily_limit: dailyLimit })
    .onConflict(['account_id', 'service'])
    .merge(['daily_limit']);
}
