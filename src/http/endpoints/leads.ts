import type { Knex } from 'knex';
import { defineEndpoint, right } from '../endpoint';
import { forbidden, HttpProblem, invalidBody, invalidParameter, notFound } from '../problem';
import { EMPTY_SNAPSHOT, streamLeadsCsv, streamLeadsJson } from '../leadExportResponse';
import {
  importLeadBody,
  importLeadBodyAliases,
  importLeadResponse,
  leadGetQuery,
  leadOut,
  leadPath,
  leadsOut,
  savedSearchCsvQuery,
  savedSearchQuery,
} from '../schemas/leads';
import type { AccountContext } from '../../domain/account';
import { formatCompactLocal } from '../../domain/datetime';
import { parseIncludeNames } from '../../domain/include';
import { savedSearchLeadFilter } from '../../domain/leadFilters';
import { leadIncludesNeedSnapshot, leadIncludesNeedUsers, leadToJson, visibleFieldsByDefinition } from '../../domain/leadSerializer';
import type { LeadRow } from '../../domain/leadRecords';
import { findLead, loadLeadLookups } from '../../data/leadRepository';
import { findSavedSearch } from '../../data/savedSearchRepository';
import { loadOrgSnapshot } from '../../data/organizationRepository';
import { importLead, ImportLeadRequest, ImportRefused } from '../../ingest/importLead';

// ---- import -------------------------------------------------------------------------------

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** An import the use case refused: an unknown campaign is a 400 naming the field, a foreign one a 403. */
function refusal(err: unknown): never {
  if (!(err instanceof ImportRefused)) throw err;
  if (err.reason === 'unknown_campaign') {
    throw invalidBody(`CampaignCode: no campaign has the code ${JSON.stringify(err.campaignCode)}`, [
      { field: 'CampaignCode', message: 'is not the code of a campaign' },
    ]);
  }
  throw forbidden(`campaign ${err.campaignCode} belongs to a project outside this account's project rights`);
}

export const importLeadEndpoint = defineEndpoint({
  service: 'leads.import',
  operationId: 'importLead',
  method: 'post',
  path: '/leads',
  summary: 'Import one lead',
  description:
    'Validates the data against the campaign\'s lead definition: a failure is a 200 with `success: false` and one error per field (missing required field, unknown field, value not of the field\'s type). ' +
    'A faulty request (not JSON, no campaign code, data not an object of strings, unknown campaign) is a 400; a campaign outside the account\'s projects a 403. ' +
    'The lead is New and goes into the named pool (created when missing) or `(auto) yyyy-MM-dd` of the platform-local date. ' +
    'With an `Idempotency-Key` header a retry returns the first answer (header `Idempotent-Replayed: true`) without a second lead; the same key with a different body is a 409. Keys are kept 24 hours.',
  tags: ['Leads'],
  access: right('Leads', 'Post'),
  // A write service: JSON only, like the other writes.
  representations: ['json'],
  body: importLeadBody,
  bodyAliases: importLeadBodyAliases,
  response: importLeadResponse,
  errorStatuses: [403, 409, 413],
  headers: [
    {
      name: 'Idempotency-Key',
      description: 'Up to 255 visible ASCII characters, unique per import; a retry with the same key returns the first answer.',
    },
  ],
  async handler({ req, res, body, account, scope, db, clock, zone }) {
    const pool = body.LeadPool?.trim();
    const request: ImportLeadRequest = { campaignCode: body.CampaignCode, data: body.Data, ...(pool ? { pool } : {}) };
    const key = req.get('Idempotency-Key');
    if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw invalidParameter('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
    const importer = { accountId: account.id, userId: account.userId, scope };
    const outcome = await importLead({ db, clock, zone }, importer, request, key).catch(refusal);
    if (outcome.kind === 'key_reused') throw idempotencyKeyReused();
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    return { body: outcome.answer };
  },
});

/** 409: the key was first used with another request body. */
function idempotencyKeyReused(): HttpProblem {
  // Same problem shape as invalid_body, with the status of a conflict with an earlier request.
  return new HttpProblem(
    'invalid_body',
    'Idempotency-Key: this key was already used with a different request; use a new key for a new import',
    [{ parameter: 'Idempotency-Key', message: 'was already used with a different request' }],
    {},
    [409, 'Conflict'],
  );
}

// ---- one lead -----------------------------------------------------------------------------

export const getLeadEndpoint = defineEndpoint({
  service: 'leads.get',
  operationId: 'getLead',
  method: 'get',
  path: '/leads/{UniqueId}',
  summary: 'One lead',
  description: 'The lead in the shape of the exports; 404 when it does not exist or its campaign is outside the account\'s projects.',
  tags: ['Leads'],
  access: right('Leads', 'Get'),
  representations: ['json', 'html'],
  params: leadPath,
  query: leadGetQuery,
  response: leadOut,
  dateTimes: true,
  errorStatuses: [404],
  async handler({ params, query, account, scope, db, zone, dateTimeFormat }) {
    const row: LeadRow | undefined = await findLead(db, params.UniqueId, scope, account.entryAccess);
    if (!row) throw notFound(`no lead ${params.UniqueId}`);
    const include = parseIncludeNames(query.Include);
    const [lookups, org] = await Promise.all([
      loadLeadLookups(db, {}, scope, [row.campaignId]),
      leadIncludesNeedSnapshot(include) ? loadOrgSnapshot(db, scope, { users: leadIncludesNeedUsers(include) }) : EMPTY_SNAPSHOT,
    ]);
    const expand = leadToJson({
      zone,
      dateTimeFormat,
      visible: visibleFieldsByDefinition(lookups.definitions, account.entryAccess),
      lookups,
      include,
      org,
    });
    return { body: expand(row), title: `Lead ${row.uniqueId}` };
  },
});

// ---- saved searches -------------------------------------------------------------------------

async function savedSearchFilter(db: Knex, account: AccountContext, searchName: string, modifiedFrom: Date, project?: string) {
  const search = await findSavedSearch(db, account.userId, searchName);
  if (!search) throw notFound(`the user ${account.userOrgCode} has no saved search named ${JSON.stringify(searchName)}`);
  return savedSearchLeadFilter(search, modifiedFrom, project);
}

export const savedSearchEndpoint = defineEndpoint({
  service: 'leads.search',
  operationId: 'listSavedSearchLeads',
  method: 'get',
  path: '/leads',
  summary: 'Run a saved search',
  description:
    'Runs a search saved in the UI by the user linked to the account (another user\'s search is a 404), for leads modified at or after modifiedFrom. ' +
    '`project` replaces the search\'s campaign selection by the campaigns of that project. Limited by the account\'s project rights and entry access; streamed.',
  tags: ['Leads'],
  access: right('Leads', 'Get'),
  representations: ['json'],
  bulk: true,
  query: savedSearchQuery,
  response: leadsOut,
  dateTimes: true,
  errorStatuses: [404],
  async handler(ctx) {
    const { query } = ctx;
    const filter = await savedSearchFilter(ctx.db, ctx.account, query.searchName, query.modifiedFrom, query.project);
    return streamLeadsJson(ctx, filter, query.Include);
  },
});

export const savedSearchCsvEndpoint = defineEndpoint({
  service: 'leads.csv',
  operationId: 'exportSavedSearchLeadsCsv',
  method: 'get',
  path: '/leads/csv',
  summary: 'Run a saved search as CSV',
  description:
    'The saved-search export as CSV: the lead columns, then one column per data field the account may see (the lead definitions\' fields in sort order). ' +
    '`Encoding` (default utf-8) and `CsvFieldSeparator` (default `;`) as in /calls/csv. File name `Leads-{searchName}-{now:yyyyMMddHHmmss}.csv`.',
  tags: ['Leads'],
  access: right('Leads', 'Get'),
  representations: ['csv'],
  bulk: true,
  query: savedSearchCsvQuery,
  dateTimes: true,
  errorStatuses: [404],
  async handler(ctx) {
    const { query, clock, zone } = ctx;
    const filter = await savedSearchFilter(ctx.db, ctx.account, query.searchName, query.modifiedFrom, query.project);
    return streamLeadsCsv(ctx, filter, {
      separator: query.CsvFieldSeparator ?? ';',
      encoding: query.Encoding ?? 'utf-8',
      fileName: `Leads-${query.searchName}-${formatCompactLocal(clock(), zone)}.csv`,
    });
  },
});

/** `/leads/csv` before `/leads/{UniqueId}`, so the literal path wins. */
export const leadEndpoints = [importLeadEndpoint, savedSearchEndpoint, savedSearchCsvEndpoint, getLeadEndpoint];
