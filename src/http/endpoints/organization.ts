import { z } from 'zod';
import { defineEndpoint, Endpoint, right } from '../endpoint';
import { notFound } from '../problem';
import {
  campaignOut,
  campaignPath,
  campaignsQuery,
  campaignWithDefinitionOut,
  includeQuery,
  orgUnitOut,
  projectOut,
  orgUnitPath,
  orgUnitPathLower,
  userOut,
  userPath,
  usersQuery,
} from '../schemas/organization';
import { listUsers, listVisibleCampaigns, loadOrgSnapshot } from '../../data/organizationRepository';
import { listVisibleProjects } from '../../data/projectRepository';
import { findLeadDefinition } from '../../data/leadDefinitionRepository';
import { findCampaignDuplicateDefaults } from '../../data/leadRepository';
import { formatTimeSpan } from '../../domain/timespan';
import { compileIncludes } from '../../domain/include';
import { ORG_UNIT, organizationGraph, renderCampaign, USER } from '../../domain/organizationGraph';
import { findBySpelling, orgCodeSpellings } from '../../domain/organization';

/**
 * Organisation and campaign reads (the OpenAPI document; docs/decisions.md, Organisation):
 * users, org units and the account's campaigns and projects. The tree and the
 * visible campaigns are small, so each request loads them once and resolves `Include` from
 * memory (src/domain/organizationGraph.ts).
 */

const INCLUDE_RULES =
  'Include: complex properties only when named; a nested name counts only when every property on its path is named; no loops or repeated objects; unknown names are ignored.';

const listUsersEndpoint = defineEndpoint({
  service: 'users.list',
  operationId: 'listUsers',
  method: 'get',
  path: '/users',
  summary: 'Users',
  description: `Every user, by org code; Limit caps the count. Include: parent, campaigns (only campaigns in the account's projects appear). ${INCLUDE_RULES}`,
  tags: ['Organisation'],
  access: right('Organization', 'Get'),
  representations: ['json', 'html'],
  query: usersQuery,
  response: z.array(userOut),
  async handler({ query, scope, db, include }) {
    // Users of other units appear only through parent → users.
    const [org, users] = await Promise.all([
      loadOrgSnapshot(db, scope, { users: include.has('users') }),
      listUsers(db, scope, { limit: query.Limit }),
    ]);
    const expand = compileIncludes(organizationGraph(org), USER, include);
    return { body: users.map(expand), title: 'Users' };
  },
});

const getUserEndpoint = defineEndpoint({
  service: 'users.get',
  operationId: 'getUser',
  method: 'get',
  path: '/users/{OrgCode}',
  summary: 'One user',
  description: `The user with this org code; 404 when there is none. Include: parent, campaigns. ${INCLUDE_RULES}`,
  tags: ['Organisation'],
  access: right('Organization', 'Get'),
  representations: ['json', 'html'],
  params: userPath,
  query: includeQuery,
  response: userOut,
  errorStatuses: [404],
  async handler({ params, scope, db, include }) {
    const [org, users] = await Promise.all([
      loadOrgSnapshot(db, scope, { users: include.has('users') }),
      listUsers(db, scope, { orgCodes: orgCodeSpellings(params.OrgCode) }),
    ]);
    const user = users.find((u) => u.orgCode === params.OrgCode) ?? users[0];
    if (user === undefined) throw notFound(`no user with org code ${params.OrgCode}`);
    const expand = compileIncludes(organizationGraph(org), USER, include);
    return { body: expand(user), title: `User ${user.orgCode}` };
  },
});

function orgUnitListEndpoint(service: string, operationId: string, path: string): Endpoint {
  return defineEndpoint({
    service,
    operationId,
    method: 'get',
    path,
    summary: 'Org units',
    description: `Every org unit, root first, then by level and org code. Include: parent, children, users, campaigns (campaigns under users). ${INCLUDE_RULES}`,
    tags: ['Organisation'],
    access: right('Organization', 'Get'),
    representations: ['json', 'html'],
    query: includeQuery,
    response: z.array(orgUnitOut),
    async handler({ scope, db, include }) {
      const org = await loadOrgSnapshot(db, scope);
      const expand = compileIncludes(organizationGraph(org), ORG_UNIT, include);
      return { body: [...org.units.values()].map(expand), title: 'Org units' };
    },
  });
}

function orgUnitGetEndpoint(
  service: string,
  operationId: string,
  path: string,
  params: typeof orgUnitPath | typeof orgUnitPathLower,
): Endpoint {
  return defineEndpoint({
    service,
    operationId,
    method: 'get',
    path,
    summary: 'One org unit',
    description: `The org unit with this org code; 404 when there is none. Include: parent, children, users, campaigns (campaigns under users). ${INCLUDE_RULES}`,
    tags: ['Organisation'],
    access: right('Organization', 'Get'),
    representations: ['json', 'html'],
    params,
    query: includeQuery,
    response: orgUnitOut,
    errorStatuses: [404],
    async handler({ params: p, scope, db, include }) {
      const orgCode = (p as Record<string, string>).OrgCode ?? (p as Record<string, string>).orgCode;
      const org = await loadOrgSnapshot(db, scope);
      const units = [...org.units.values()];
      const unit = orgCode === undefined ? undefined : findBySpelling(orgCode, (spelling) => units.find((u) => u.orgCode === spelling));
      if (unit === undefined) throw notFound(`no org unit with org code ${orgCode}`);
      const expand = compileIncludes(organizationGraph(org), ORG_UNIT, include);
      return { body: expand(unit), title: `Org unit ${unit.orgCode}` };
    },
  });
}

const listCampaignsEndpoint = defineEndpoint({
  service: 'campaigns.list',
  operationId: 'listCampaigns',
  method: 'get',
  path: '/campaigns',
  summary: 'Campaigns',
  description:
    "The campaigns in the account's projects, by code. `Project` narrows them to projects (patterns or project unique ids), " +
    '`Active` to active (`true`) or inactive (`false`) campaigns (default `All`), and `Limit` caps the count.',
  tags: ['Campaigns'],
  access: right('Campaigns', 'Get'),
  representations: ['json', 'html'],
  query: campaignsQuery,
  response: z.array(campaignOut),
  async handler({ query, scope, db }) {
    const projects = query.Project?.map((p) => p.trim()).filter((p) => p !== '');
    const campaigns = await listVisibleCampaigns(db, scope, { projects, active: query.Active, limit: query.Limit });
    return { body: campaigns.map(renderCampaign), title: 'Campaigns' };
  },
});

const getCampaignEndpoint = defineEndpoint({
  service: 'campaigns.get',
  operationId: 'getCampaign',
  method: 'get',
  path: '/campaigns/{Code}',
  summary: 'One campaign',
  description:
    "The campaign with this code (or unique id); 404 when there is none or it is outside the account's projects. " +
    "Include: leadDefinition (the campaign's lead definition, with the fields the account's entry access reaches). " +
    "Carries the import defaults of the duplicate check (`duplicateCheck`, `duplicateKey`, `duplicateWindow`, `onDuplicate`), set by the loader; an import's parameters override them.",
  tags: ['Campaigns'],
  access: right('Campaigns', 'Get'),
  representations: ['json', 'html'],
  params: campaignPath,
  query: includeQuery,
  response: campaignWithDefinitionOut,
  errorStatuses: [404],
  async handler({ params, scope, account, db, include }) {
    const [campaign] = await listVisibleCampaigns(db, scope, { key: params.Code });
    if (campaign === undefined) throw notFound(`no campaign ${params.Code}`);
    const duplicates = await findCampaignDuplicateDefaults(db, campaign.id);
    const body: Record<string, unknown> = {
      ...renderCampaign(campaign),
      duplicateCheck: duplicates.check ?? 'None',
      duplicateKey: duplicates.key ?? 'Phone',
      duplicateWindow: duplicates.window === undefined ? null : formatTimeSpan(duplicates.window),
      onDuplicate: duplicates.onDuplicate ?? 'Reject',
    };
    if (include.has('leaddefinition')) {
      body.leadDefinition = await findLeadDefinition(db, campaign.leadDefinitionUniqueId, account.entryAccess);
    }
    return { body, title: `Campaign ${campaign.code}` };
  },
});

const listProjectsEndpoint = defineEndpoint({
  service: 'projects.list',
  operationId: 'listProjects',
  method: 'get',
  path: '/projects',
  summary: 'Projects',
  description:
    'The projects of the campaigns the account can see, sorted by name; names that differ only in case are one project. ' +
    'A project is active when at least one of those campaigns is. Its `uniqueId` is accepted wherever a project pattern is ' +
    '(`Projects=` on the lead exports, `project=` on saved searches, `Project=` on calendar events and do-not-call numbers, hook `projects`) and matches that project only.',
  tags: ['Campaigns'],
  access: right('Campaigns', 'Get'),
  representations: ['json', 'html'],
  response: z.array(projectOut),
  async handler({ scope, db }) {
    return { body: await listVisibleProjects(db, scope), title: 'Projects' };
  },
});

export const organizationEndpoints: Endpoint[] = [
  listUsersEndpoint,
  getUserEndpoint,
  orgUnitListEndpoint('orgunits.list', 'listOrgUnits', '/orgunits'),
  orgUnitGetEndpoint('orgunits.get', 'getOrgUnit', '/orgunits/{orgCode}', orgUnitPathLower),
  orgUnitListEndpoint('organizationalunits.list', 'listOrganizationalUnits', '/organizationalunits'),
  orgUnitGetEndpoint('organizationalunits.get', 'getOrganizationalUnit', '/organizationalunits/{OrgCode}', orgUnitPath),
  listCampaignsEndpoint,
  getCampaignEndpoint,
  listProjectsEndpoint,
];
