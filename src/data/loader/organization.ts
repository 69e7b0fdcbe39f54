import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The loader's reads and upserts of the organisation: org units, users, their campaigns, and the
 * org codes units and users share. Keyed by the natural keys the load files use.
 */

/** An org unit and its chain of ids from the root down (itself last). */
export interface UnitChain {
  id: number;
  level: number;
  chain: number[];
}

/** The org unit with this code and its ancestors; undefined when there is none. */
export async function findUnitChain(trx: Knex.Transaction, orgCode: string): Promise<UnitChain | undefined> {
  const { rows } = await trx.raw<{ rows: { id: number; level: number }[] }>(
    `with recursive up as (
       select id, parent_id, level from org_units where org_code = ?
       union all
       select o.id, o.parent_id, o.level from org_units o join up on o.id = up.parent_id)
     select id, level from up order by level`,
    [orgCode],
  );
  const last = rows[rows.length - 1];
  if (last === undefined) return undefined;
  return { id: last.id, level: last.level, chain: rows.map((r) => r.id) };
}

/** The level of the org unit with this code, if there is one. */
export async function findUnitLevel(trx: Knex.Transaction, orgCode: string): Promise<number | undefined> {
  const row = await trx('org_units').where({ org_code: orgCode }).first<{ level: number } | undefined>('level');
  return row?.level;
}

/** The code of the org unit with this id. */
export async function findUnitCode(trx: Knex.Transaction, id: number): Promise<string | undefined> {
  const row = await trx('org_units').where({ id }).first<{ org_code: string } | undefined>('org_code');
  return row?.org_code;
}

/** Which kind holds an org code (units and users share them), if any. */
export async function findOrgCodeKind(trx: Knex.Transaction, orgCode: string): Promise<'user' | 'unit' | undefined> {
  const row = await trx('org_codes').where({ org_code: orgCode }).first<{ kind: 'user' | 'unit' } | undefined>('kind');
  return row?.kind;
}

export interface OrgUnitInput {
  orgCode: string;
  name: string;
  level: number;
  parentId: number | null;
  /** Kept as it is when not given (a new unit gets one). */
  uniqueId: string | undefined;
}

/** Adds the org unit or updates the one with its code. */
export async function upsertOrgUnit(trx: Knex.Transaction, unit: OrgUnitInput): Promise<void> {
  await trx('org_units')
    .insert({
      unique_id: unit.uniqueId ?? randomUUID(),
      org_code: unit.orgCode,
      name: unit.name,
      level: unit.level,
      parent_id: unit.parentId,
    })
    .onConflict('org_code')
    .merge(['name', 'parent_id', ...(unit.uniqueId ? ['unique_id'] : [])]);
}

/** A user as the loader references it. */
export interface UserRef {
  id: number;
  parentId: number | null;
}

export async function findUser(trx: Knex.Transaction, orgCode: string): Promise<UserRef | undefined> {
  const row = await trx('users')
    .where({ org_code: orgCode })
    .first<{ id: number; parent_id: number | null } | undefined>('id', 'parent_id');
  return row && { id: row.id, parentId: row.parent_id };
}

/** The columns of a loaded user besides its unique id. */
export interface UserRow {
  org_code: string;
  username: string;
  name: string;
  parent_id: number | null;
  email: string | null;
  inbound_phone_number: string | null;
  roles: string[];
  employee_number: string | null;
  payroll_number: string | null;
}

/** Adds the user or updates the one with its org code; returns its id. */
export async function upsertUser(trx: Knex.Transaction, user: UserRow, uniqueId: string | undefined): Promise<number> {
  const [row] = await trx('users')
    .insert({ unique_id: uniqueId ?? randomUUID(), ...user })
    .onConflict('org_code')
    .merge([...Object.keys(user).filter((k) => k !== 'org_code'), ...(uniqueId ? ['unique_id'] : [])])
    .returning<{ id: number }[]>('id');
  return row!.id;
}

/** The user's campaigns become exactly these. */
export async function replaceUserCampaigns(trx: Knex.Transaction, userId: number, campaignIds: number[]): Promise<void> {
  await trx('user_campaigns').where({ user_id: userId }).delete();
  for (const campaignId of campaignIds) {
    await trx('user_campaigns').insert({ user_id: userId, campaign_id: campaignId }).onConflict().ignore();
  }
}
