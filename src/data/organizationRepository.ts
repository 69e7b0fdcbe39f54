import type { Knex } from 'knex';
import type { ProjectScope } from './projectScope';
import { projectVisibleSql } from './projectScope';
import { projectSelectedSql } from './projectRepository';
import { readAll } from './db';
import type { CampaignRecord, OrgSnapshot, OrgUnitRecord, UserRecord } from '../domain/organization';
import { canonicalUniqueId } from '../domain/uniqueId';

/**
 * Reads of the organisation (org units, users) and of the campaigns an account can see. The
 * whole tree and the visible campaigns are small, so a request loads them once into maps and
 * every include is resolved from memory: no query per row or per object.
 */

interface UnitRow {
  id: number;
  unique_id: string;
  org_code: string;
  name: string;
  level: number;
  parent_id: number | null;
}

const toUnit = (r: UnitRow): OrgUnitRecord => ({
  id: r.id,
  uniqueId: r.unique_id,
  orgCode: r.org_code,
  name: r.name,
  level: r.level,
  parentId: r.parent_id,
});

/** Every org unit, root levels first, then by org code. */
async function listOrgUnits(db: Knex): Promise<OrgUnitRecord[]> {
  const rows = await db<UnitRow>('org_units')
    .select('id', 'unique_id', 'org_code', 'name', 'level', 'parent_id')
    .orderBy([{ column: 'level' }, { column: 'org_code' }]);
  return rows.map(toUnit);
}

interface CampaignRow {
  id: number;
  unique_id: string;
  name: string;
  code: string;
  project: string;
  lead_definition_unique_id: string;
  campaign_type: number;
  active: boolean;
}

/** Narrows a campaign list: a project selection (patterns or project ids), active or not, a cap. */
export interface CampaignListFilter {
  /** The one campaign with this code (else unique id). */
  key?: string;
  /** Project patterns or project unique ids (one of); within the account's projects. */
  projects?: readonly string[];
  /** Only active (true) or inactive (false) campaigns; undefined = both. */
  active?: boolean;
  limit?: number;
}

/** The campaigns of the account's projects, by code, narrowed by `options`. */
export async function listVisibleCampaigns(db: Knex, scope: ProjectScope, options: CampaignListFilter = {}): Promise<CampaignRecord[]> {
  const visible = projectVisibleSql('c.project', scope);
  const query = db('campaigns as c')
    .join('lead_definitions as d', 'd.id', 'c.lead_definition_id')
    .select(
      'c.id',
      'c.unique_id',
      'c.name',
      'c.code',
      'c.project',
      'd.unique_id as lead_definition_unique_id',
      'c.campaign_type',
      'c.active',
    )
    .whereRaw(visible.sql, visible.bindings as Knex.RawBinding[])
    .orderBy('c.code');
  if (options.projects !== undefined && options.projects.length > 0) {
    const selected = projectSelectedSql('c.project', options.projects);
    query.whereRaw(selected.sql, selected.bindings);
  }
  if (options.active !== undefined) query.where('c.active', options.active);
  if (options.limit !== undefined) query.limit(options.limit);
  if (options.key !== undefined) {
    // A code wins over another campaign's unique id that happens to be spelled the same.
    query
      .where((q) => {
        q.where('c.code', options.key!).orWhere('c.unique_id', canonicalUniqueId(options.key!));
      })
      .clearOrder()
      .orderByRaw('c.code = ? desc', [options.key])
      .limit(1);
  }
  const rows = (await query) as CampaignRow[];
  return rows.map((r): CampaignRecord => ({
    id: r.id,
    uniqueId: r.unique_id,
    name: r.name,
    code: r.code,
    project: r.project,
    leadDefinitionUniqueId: r.lead_definition_unique_id,
    campaignType: r.campaign_type,
    active: r.active,
  }));
}

interface UserRow {
  id: number;
  unique_id: string;
  username: string;
  name: string;
  org_code: string;
  email: string | null;
  inbound_phone_number: string | null;
  parent_id: number | null;
  roles: string[] | null;
  employee_number: string | null;
  payroll_number: string | null;
  campaign_ids: (string | number)[];
}

/**
 * Users by org code with the ids of their visible active campaigns (ordered by campaign code:
 * a User's campaigns are the active campaigns it can access, and its projects theirs);
 * `orgCodes` narrows to the users of those codes, `limit` caps the count.
 */
export async function listUsers(
  db: Knex,
  scope: ProjectScope,
  options: { orgCodes?: readonly string[]; limit?: number } = {},
): Promise<UserRecord[]> {
  const visible = projectVisibleSql('c.project', scope);
  const query = db('users as u')
    .select(
      'u.id',
      'u.unique_id',
      'u.username',
      'u.name',
      'u.org_code',
      'u.email',
      'u.inbound_phone_number',
      'u.parent_id',
      'u.roles',
      'u.employee_number',
      'u.payroll_number',
      db.raw(
        `coalesce((select array_agg(c.id order by c.code) from user_campaigns uc join campaigns c on c.id = uc.campaign_id
          where uc.user_id = u.id and c.active and ${visible.sql}), '{}') as campaign_ids`,
        visible.bindings as Knex.RawBinding[],
      ),
    )
    .orderBy('u.org_code');
  if (options.orgCodes !== undefined) query.whereIn('u.org_code', options.orgCodes);
  if (options.limit !== undefined) query.limit(options.limit);
  const rows = (await query) as UserRow[];
  return rows.map((r): UserRecord => ({
    id: r.id,
    uniqueId: r.unique_id,
    username: r.username,
    name: r.name,
    orgCode: r.org_code,
    email: r.email,
    inboundPhoneNumber: r.inbound_phone_number,
    parentId: r.parent_id,
    roles: r.roles ?? [],
    employeeNumber: r.employee_number,
    payrollNumber: r.payroll_number,
    // bigint[] arrives as strings: pg's global int8 parser does not apply to arrays.
    campaignIds: r.campaign_ids.map(Number),
  }));
}

function groupBy<T>(items: Iterable<T>, key: (item: T) => number | null): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const item of items) {
    const k = key(item);
    if (k === null) continue;
    let list = out.get(k);
    if (list === undefined) out.set(k, (list = []));
    list.push(item);
  }
  return out;
}

/**
 * The snapshot a request resolves includes from. `users: false` skips the users (the calls
 * export without `Include=user` needs only units and campaigns).
 */
export async function loadOrgSnapshot(db: Knex, scope: ProjectScope, options: { users?: boolean } = {}): Promise<OrgSnapshot> {
  const [units, campaigns, users] = await readAll<[OrgUnitRecord[], CampaignRecord[], Awaited<ReturnType<typeof listUsers>>]>(db, [
    () => listOrgUnits(db),
    () => listVisibleCampaigns(db, scope),
    () => (options.users === false ? Promise.resolve([]) : listUsers(db, scope)),
  ]);
  return {
    units: new Map(units.map((u) => [u.id, u])),
    childrenOf: groupBy(units, (u) => u.parentId),
    users: new Map(users.map((u) => [u.id, u])),
    usersOf: groupBy(users, (u) => u.parentId),
    campaigns: new Map(campaigns.map((c) => [c.id, c])),
  };
}
