import { z } from 'zod';
import { defineEndpoint, Endpoint, right } from '../endpoint';
import { notFound } from '../problem';
import { leadDefinitionOut, leadDefinitionPath } from '../schemas/leadDefinitions';
import { findVisibleLeadDefinition, listVisibleLeadDefinitions } from '../../data/leadDefinitionRepository';

/**
 * Lead definition reads (docs/decisions.md, Lead definitions): the definitions of the
 * campaigns in the account's projects, each with the fields its entry access reaches.
 */

const listLeadDefinitionsEndpoint = defineEndpoint({
  service: 'leaddefinitions.list',
  operationId: 'listLeadDefinitions',
  method: 'get',
  path: '/leaddefinitions',
  summary: 'Lead definitions',
  description:
    "The lead definitions used by campaigns in the account's projects, by name. Each lists its fields in sort order; a field whose access is above the account's entry access is left out.",
  tags: ['Campaigns'],
  access: right('LeadDefinitions', 'Get'),
  representations: ['json', 'html'],
  response: z.array(leadDefinitionOut),
  async handler({ scope, account, db }) {
    return { body: await listVisibleLeadDefinitions(db, scope, account.entryAccess), title: 'Lead definitions' };
  },
});

const getLeadDefinitionEndpoint = defineEndpoint({
  service: 'leaddefinitions.get',
  operationId: 'getLeadDefinition',
  method: 'get',
  path: '/leaddefinitions/{UniqueId}',
  summary: 'One lead definition',
  description:
    "The lead definition with this unique id; 404 when there is none or no campaign in the account's projects uses it. Fields above the account's entry access are left out.",
  tags: ['Campaigns'],
  access: right('LeadDefinitions', 'Get'),
  representations: ['json', 'html'],
  params: leadDefinitionPath,
  response: leadDefinitionOut,
  errorStatuses: [404],
  async handler({ params, scope, account, db }) {
    const definition = await findVisibleLeadDefinition(db, params.UniqueId, scope, account.entryAccess);
    if (definition === undefined) throw notFound(`no lead definition ${params.UniqueId}`);
    return { body: definition, title: `Lead definition ${definition.name}` };
  },
});

export const leadDefinitionEndpoints: Endpoint[] = [listLeadDefinitionsEndpoint, getLeadDefinitionEndpoint];
