import { AccountContext, hasRight } from './account';
import { IncludeGraph, IncludeType, parseIncludeNames } from './include';
import { CampaignRecord, EMPTY_SNAPSHOT, OrgSnapshot, OrgUnitRecord, UserRecord } from './organization';

/**
 * The include graph (docs/decisions.md, Include engine) of the organisation types: OrgUnit, User and Campaign, with
 * their complex properties resolved from one request's in-memory snapshot. The calls
 * serializer adds the Call type on top (src/domain/callSerializer.ts).
 *
 * Field order follows the OpenAPI document; complex properties render as `undefined`
 * placeholders so an included one keeps its place and an absent one is left out of JSON.
 * Absent optional fields are left out too (never `null`).
 */

export const ORG_UNIT = 'OrgUnit';
export const USER = 'User';
export const CAMPAIGN = 'Campaign';

/** Names of the complex properties of OrgUnit: when none is requested, an org unit renders flat. */
export const ORG_UNIT_PROPERTIES = ['parent', 'children', 'users'] as const;

export function renderOrgUnit(u: OrgUnitRecord): Record<string, unknown> {
  return {
    uniqueId: u.uniqueId,
    name: u.name,
    orgCode: u.orgCode,
    level: u.level,
    parent: undefined,
    children: undefined,
    users: undefined,
  };
}

export function renderCampaign(c: CampaignRecord): Record<string, unknown> {
  return {
    uniqueId: c.uniqueId,
    name: c.name,
    code: c.code,
    project: c.project,
    leadDefinitionUniqueId: c.leadDefinitionUniqueId,
    active: c.active,
  };
}

/** A user's visible campaigns and their distinct projects, in campaign-code order. */
function visibleCampaignsOf(user: UserRecord, org: OrgSnapshot): CampaignRecord[] {
  const out: CampaignRecord[] = [];
  for (const id of user.campaignIds) {
    const c = org.campaigns.get(id);
    if (c !== undefined) out.push(c);
  }
  return out;
}

function renderUser(u: UserRecord, org: OrgSnapshot): Record<string, unknown> {
  const projects: string[] = [];
  for (const c of visibleCampaignsOf(u, org)) if (!projects.includes(c.project)) projects.push(c.project);
  return {
    uniqueId: u.uniqueId,
    username: u.username,
    name: u.name,
    orgCode: u.orgCode,
    email: u.email ?? undefined,
    inboundPhoneNumber: u.inboundPhoneNumber ?? undefined,
    parent: undefined,
    campaigns: undefined,
    projects,
    roles: u.roles,
    employeeNumber: u.employeeNumber ?? undefined,
    payrollNumber: u.payrollNumber ?? undefined,
  };
}

/** OrgUnit, User and Campaign over one snapshot; extra types (Call) can be added by the caller. */
export function organizationGraph(org: OrgSnapshot, extra: Record<string, IncludeType> = {}): IncludeGraph {
  const unitOf = (id: number | null): OrgUnitRecord | null => (id === null ? null : (org.units.get(id) ?? null));
  return {
    [ORG_UNIT]: {
      identity: (u: OrgUnitRecord) => u.id,
      render: renderOrgUnit,
      properties: {
        parent: { type: ORG_UNIT, many: false, resolve: (u: OrgUnitRecord) => unitOf(u.parentId) },
        children: { type: ORG_UNIT, many: true, resolve: (u: OrgUnitRecord) => org.childrenOf.get(u.id) },
        users: { type: USER, many: true, resolve: (u: OrgUnitRecord) => org.usersOf.get(u.id) },
      },
    },
    [USER]: {
      identity: (u: UserRecord) => u.id,
      render: (u: UserRecord) => renderUser(u, org),
      properties: {
        parent: { type: ORG_UNIT, many: false, resolve: (u: UserRecord) => unitOf(u.parentId) },
        campaigns: { type: CAMPAIGN, many: true, resolve: (u: UserRecord) => visibleCampaignsOf(u, org) },
      },
    },
    [CAMPAIGN]: {
      identity: (c: CampaignRecord) => c.id,
      render: renderCampaign,
      properties: {},
    },
    ...extra,
  };
}

/**
 * Lower-case include names by which the organisation types lead to org units and users
 * (`parent`, `children`, `users`): walking the organisation tree, which GET /users and
 * /orgunits guard with Organization: Get. Read off the graph, so a property added to it is
 * covered. A call's user or a lead's references are the endpoint's own objects, not these.
 */
export const ORGANIZATION_TREE_INCLUDES: ReadonlySet<string> = treeIncludes(organizationGraph(EMPTY_SNAPSHOT));

function treeIncludes(graph: IncludeGraph): Set<string> {
  const names = new Set<string>();
  for (const type of Object.values(graph)) {
    for (const [name, property] of Object.entries(type.properties)) {
      if (property.type === ORG_UNIT || property.type === USER) names.add(name.toLowerCase());
    }
  }
  return names;
}

/**
 * The include names of a request (parseIncludeNames) that the account may follow
 * (docs/decisions.md, Include engine). Without Organization: Get the tree names are dropped, as
 * unknown names are: no 403, since the rest of the answer is within the endpoint's own right.
 */
export function permittedIncludeNames(raw: unknown, account: Pick<AccountContext, 'rights'>): Set<string> {
  const names = parseIncludeNames(raw);
  if (!hasRight(account, 'Organization', 'Get')) for (const name of ORGANIZATION_TREE_INCLUDES) names.delete(name);
  return names;
}
