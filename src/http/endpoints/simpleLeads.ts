import { defineEndpoint, right } from '../endpoint';
import { leadFilterFromQuery, leadsOut, simpleLeadsQuery } from '../schemas/leads';
import { streamLeadsJson } from '../leadExportResponse';

const simpleLeadsEndpoint = defineEndpoint({
  service: 'simpleleads',
  operationId: 'listSimpleLeads',
  method: 'get',
  path: '/simpleleads',
  summary: 'Export leads (SimpleLeads)',
  description:
    'The recommended lead export, streamed as a JSON array ordered by lastModifiedTime, then uniqueId. Filters combine (all must hold): ' +
    'Projects (patterns, default `*`), Campaigns (codes or unique ids), ModifiedFrom (inclusive), ModifiedTo (exclusive), ' +
    'the union of Statuses, AllOpenStatuses=true and AllClosedStatuses=true (none of them: every status), LeadClosures, UniqueId. ' +
    "Limited by the account's project rights; `data` holds only the fields its lead definition entry access reaches, and `phoneNumber` and `externalKey` come only when it reaches their fields. `Limit` caps the count (the first leads in that order). Nothing paginates: skip, take and PageSize are ignored.",
  tags: ['Leads'],
  access: right('SimpleLeads', 'Get'),
  representations: ['json'],
  bulk: true,
  query: simpleLeadsQuery,
  response: leadsOut,
  dateTimes: true,
  async handler(ctx) {
    return streamLeadsJson(ctx, leadFilterFromQuery(ctx.query));
  },
});

export const simpleLeadsEndpoints = [simpleLeadsEndpoint];
