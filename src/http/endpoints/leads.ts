import type { Knex } from 'knex';
import { defineEndpoint, right } from '../endpoint';
import { forbidden, HttpProblem, invalidBody, invalidParameter, notFound } from '../problem';
import { cursorOptions } from '../streamResponse';
import { streamCsv } from '../csvResponse';
import { EMPTY_SNAPSHOT, openWithLookups, streamLeadsJson } from '../leadExportResponse';
import type { AppServices } from '../services';
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
import { formatCompactLocal, localDate } from '../../domain/datetime';
import { parseIncludeNames } from '../../domain/include';
import { mapLeadData } from '../../domain/leadData';
import { savedSearchLeadFilter } from '../../domain/leadFilters';
import {
  dataColumns,
  leadCsvHeader,
  leadIncludesNeedSnapshot,
  leadIncludesNeedUsers,
  leadToCsvLine,
  leadToJson,
  visibleFieldsByDefinition,
} from '../../domain/leadSerializer';
import { autoPoolName } from '../../data/leadPools';
import { findImportCampaign, findLead, insertLead, isCampaignVisible, loadLeadLookups, openLeadCursor } from '../../data/leadRepository';
import type { LeadRow } from '../../domain/leadRecords';
import { findSavedSearch } from '../../data/savedSearchRepository';
import { requestHash, runIdempotent, StoredAnswer } from '../../data/idempotency';
import { loadOrgSnapshot } from '../../data/organizationRepository';
import { projectScope, ProjectScope } from '../../data/projectScope';

// ---- import -------------------------------------------------------------------------------

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

interface ImportRequest {
  campaignCode: string;
  data: Record<string, string>;
  pool?: string;
}

const unknownCampaign = (code: string) =>
  invalidBody(`CampaignCode: no campaign has the code ${JSON.stringify(code)}`, [
    { field: 'CampaignCode', message: 'is not the code of a campaign' },
  ]);
const campaignForbidden = (code: string) => forbidden(`campaign ${code} belongs to a project outside this account's project rights`);

/**
 * One import (DESIGN §6): campaign → project check → lead definition → pool → insert. The
 * project check is SQL: in the campaign lookup, or, when the campaign came from the short-lived
 * cache, in the insert statement itself (and in a query of its own before a validation answer).
 */
async function importLead(db: Knex | Knex.Transaction, services: AppServices, account: AccountContext, scope: ProjectScope, request: ImportRequest): Promise<StoredAnswer> {
  const zone = services.settings.PLATFORM_TIMEZONE;
  const found = await findImportCampaign(db, request.campaignCode, scope);
  if (!found) throw unknownCampaign(request.campaignCode);
  const { campaign } = found;
  if (found.visible === false) throw campaignForbidden(campaign.code);
  const mapped = mapLeadData(campaign.fields, request.data, zone);
  if (mapped.errors.length > 0) {
    if (found.visible === undefined && !(await isCampaignVisible(db, campaign.id, scope))) throw campaignForbidden(campaign.code);
    return { status: 200, body: { success: false, errors: mapped.errors } };
  }
  // The moment of insert decides the automatic pool: an upload across midnight lands in two pools.
  const now = services.clock();
  const pool = request.pool ?? autoPoolName(localDate(now, zone));
  const inserted = await insertLead(
    db,
    {
      campaignId: campaign.id,
      poolName: pool,
      data: mapped.data,
      phoneNumber: mapped.phoneNumber,
      externalKey: mapped.externalKey,
      now,
      userId: account.userId,
    },
    scope,
  );
  if (inserted.kind === 'forbidden') throw campaignForbidden(campaign.code);
  if (inserted.kind === 'unknown_campaign') {
    // The cached campaign was removed meanwhile; a fresh lookup decides.
    const fresh = await findImportCampaign(db, request.campaignCode, scope, { fresh: true });
    if (!fresh) throw unknownCampaign(request.campaignCode);
    return importLead(db, services, account, scope, request);
  }
  return { status: 200, body: { success: true, uniqueId: inserted.uniqueId, pool } };
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
  async handler({ req, res, body, account, services }) {
    const pool = body.LeadPool?.trim();
    const request: ImportRequest = { campaignCode: body.CampaignCode, data: body.Data, ...(pool ? { pool } : {}) };
    const scope = projectScope(account.projectPatterns);
    const key = req.get('Idempotency-Key');
    if (key === undefined) {
      const answer = await importLead(services.db, services, account, scope, request);
      return { status: answer.status, body: answer.body };
    }
    if (!IDEMPOTENCY_KEY.test(key)) throw invalidParameter('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
    const outcome = await runIdempotent(services.db, account.id, key, requestHash(request), (trx) =>
      importLead(trx, services, account, scope, request),
    );
    if (outcome.kind === 'mismatch') throw idempotencyKeyReused();
    if (outcome.kind === 'replayed') res.setHeader('Idempotent-Replayed', 'true');
    return { status: outcome.answer.status, body: outcome.answer.body };
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
  errorStatuses: [404],
  async handler({ params, query, account, services }) {
    const { db } = services;
    const scope = projectScope(account.projectPatterns);
    const row: LeadRow | undefined = await findLead(db, params.UniqueId, scope, account.entryAccess);
    if (!row) throw notFound(`no lead ${params.UniqueId}`);
    const include = parseIncludeNames(query.Include);
    const [lookups, org] = await Promise.all([
      loadLeadLookups(db, {}, scope, [row.campaignId]),
      leadIncludesNeedSnapshot(include) ? loadOrgSnapshot(db, scope, { users: leadIncludesNeedUsers(include) }) : EMPTY_SNAPSHOT,
    ]);
    const expand = leadToJson({
      zone: services.settings.PLATFORM_TIMEZONE,
      visible: visibleFieldsByDefinition(lookups.definitions, account.entryAccess),
      lookups,
      include,
      org,
    });
    return { body: expand(row), title: `Lead ${row.uniqueId}` };
  },
});

// ---- saved searches -------------------------------------------------------------------------

async function savedSearchFilter(services: AppServices, account: AccountContext, searchName: string, modifiedFrom: Date, project?: string) {
  const search = await findSavedSearch(services.db, account.userId, searchName);
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
  errorStatuses: [404],
  async handler({ res, query, account, services }) {
    const filter = await savedSearchFilter(services, account, query.searchName, query.modifiedFrom, query.project);
    return streamLeadsJson(res, services, account, filter, query.Include);
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
  errorStatuses: [404],
  async handler({ res, query, account, services }) {
    const { db } = services;
    const zone = services.settings.PLATFORM_TIMEZONE;
    const filter = await savedSearchFilter(services, account, query.searchName, query.modifiedFrom, query.project);
    const scope = projectScope(account.projectPatterns);
    const separator = query.CsvFieldSeparator ?? ';';
    const encoding = query.Encoding ?? 'utf-8';
    const { cursor, lookups } = await openWithLookups(
      () => openLeadCursor(db, filter, scope, account.entryAccess, cursorOptions(res, services.settings.CURSOR_BATCH_SIZE)),
      () => loadLeadLookups(db, filter, scope),
    );
    const columns = dataColumns(lookups.definitions, account.entryAccess);
    return streamCsv<LeadRow>(
      res,
      services,
      cursor,
      leadCsvHeader(columns, separator),
      leadToCsvLine({ zone, separator, columns, lookups }),
      encoding,
      `Leads-${query.searchName}-${formatCompactLocal(services.clock(), zone)}.csv`,
    );
  },
});

/** `/leads/csv` before `/leads/{UniqueId}`, so the literal path wins. */
export const leadEndpoints = [importLeadEndpoint, savedSearchEndpoint, savedSearchCsvEndpoint, getLeadEndpoint];
