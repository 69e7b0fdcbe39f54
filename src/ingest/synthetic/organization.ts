import type { Knex } from 'knex';
import type { Prng } from './prng';
import { ascii, CATEGORIES, Category, COUNTRIES, FIRST_NAMES, LAST_NAMES } from './vocabulary';

/**
 * The org tree and its users. Tree: root → country → business line (department) → team →
 * squad, five levels. Users: a manager per department, a team leader per team (who also
 * calls), eight agents per squad.
 */

interface Unit {
  uid: string;
  code: string;
  name: string;
  level: number;
  /** Index of the parent in the unit list. */
  parent: number | null;
  category: Category | null;
  id: number;
  /** Ids of the unit chain, root first. */
  chain: number[];
}

export interface GenUser {
  uid: string;
  username: string;
  name: string;
  /** Index of the user's unit in the unit list. */
  unit: number;
  roles: string[];
  /** Makes calls (agents and team leaders). */
  caller: boolean;
  id: number;
  /** `ou0\tou1\tou2\tou3\tou4` for call rows. */
  chainCols: string;
  /** The country unit: owner of the leads this user uploads. */
  ownerUnitId: number;
}

export interface Organization {
  units: Unit[];
  users: GenUser[];
}

/** Inserts the tree level by level (parents first, for their ids), then the users. */
export async function insertOrganization(trx: Knex.Transaction, prefix: string, names: Prng): Promise<Organization> {
  const units = await insertOrgTree(trx, prefix);
  const users = await insertUsers(trx, prefix, units, names);
  return { units, users };
}

async function insertOrgTree(trx: Knex.Transaction, P: string): Promise<Unit[]> {
  const units: Unit[] = [];
  const addUnit = (name: string, level: number, parent: number | null, category: Category | null) => {
    const idx = units.length;
    units.push({ uid: `${P}-ou${idx}`, code: `${P} ${name}`, name, level, parent, category, id: 0, chain: [] });
    return idx;
  };
  const root = addUnit('Nordic Contact Center A/S', 0, null, null);
  for (const country of COUNTRIES) {
    const c = addUnit(country, 1, root, null);
    for (const category of CATEGORIES) {
      const dep = addUnit(`${country} ${category}`, 2, c, category);
      for (const team of ['Team A', 'Team B']) {
        const t = addUnit(`${country} ${category} ${team}`, 3, dep, category);
        for (const squad of ['Squad 1', 'Squad 2']) addUnit(`${country} ${category} ${team} ${squad}`, 4, t, category);
      }
    }
  }
  for (let level = 0; level <= 4; level++) {
    const batch = units.filter((u) => u.level === level);
    const rows = await trx('org_units')
      .insert(
        batch.map((u) => ({
          unique_id: u.uid,
          org_code: u.code,
          name: u.name,
          level,
          parent_id: u.parent === null ? null : units[u.parent]!.id,
        })),
      )
      .returning(['id', 'unique_id']);
    const ids = new Map<string, number>(rows.map((r: { id: number; unique_id: string }) => [r.unique_id, r.id]));
    for (const u of batch) {
      u.id = ids.get(u.uid)!;
      u.chain = u.parent === null ? [u.id] : [...units[u.parent]!.chain, u.id];
    }
  }
  return units;
}

async function insertUsers(trx: Knex.Transaction, P: string, units: Unit[], names: Prng): Promise<GenUser[]> {
  const users: GenUser[] = [];
  const usernames = new Set<string>();
  const addUser = (unit: number, roles: string[], caller: boolean) => {
    const first = names.pick(FIRST_NAMES);
    const last = names.pick(LAST_NAMES);
    const base = `${ascii(first)}.${ascii(last)}`;
    let username = `${base}.${P}`;
    for (let n = 2; usernames.has(username); n++) username = `${base}${n}.${P}`;
    usernames.add(username);
    users.push({
      uid: `${P}-u${users.length}`,
      username,
      name: `${first} ${last}`,
      unit,
      roles,
      caller,
      id: 0,
      chainCols: '',
      ownerUnitId: units[unit]!.chain[1]!,
    });
  };
  // Users in this order (departments, teams, squads, each in tree order) keep their names for a seed.
  const unitsAt = (level: number) => units.flatMap((u, i) => (u.level === level ? [i] : []));
  for (const dep of unitsAt(2)) addUser(dep, ['Manager'], false);
  for (const t of unitsAt(3)) addUser(t, ['TeamLeader', 'Agent'], true);
  for (const s of unitsAt(4)) for (let i = 0; i < 8; i++) addUser(s, ['Agent'], true);
  const userRows = await trx('users')
    .insert(
      users.map((u, i) => ({
        unique_id: u.uid,
        org_code: u.username,
        username: u.username,
        name: u.name,
        parent_id: units[u.unit]!.id,
        email: `${u.username.replace(/\.g\d+(r\d+)?$/, '')}@${P}.example.com`,
        inbound_phone_number: names.chance(0.3) ? `+45 70 ${String(1000 + i).padStart(4, '0')} 00` : null,
        roles: u.roles,
        employee_number: `E${String(i + 1).padStart(5, '0')}`,
        payroll_number: names.chance(0.8) ? `P${String(100000 + i)}` : null,
      })),
    )
    .returning(['id', 'unique_id']);
  const userIds = new Map<string, number>(userRows.map((r: { id: number; unique_id: string }) => [r.unique_id, r.id]));
  for (const u of users) {
    u.id = userIds.get(u.uid)!;
    const chain = units[u.unit]!.chain;
    u.chainCols = [0, 1, 2, 3, 4].map((l) => (chain[l] === undefined ? '\\N' : String(chain[l]))).join('\t');
  }
  return users;
}
