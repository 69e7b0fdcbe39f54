import type { Knex } from 'knex';
import type { Settings } from '../../config/settings';
import { defineEndpoint, EndpointContext, EndpointResult, right } from '../endpoint';
import { forbidden, HttpProblem, invalidBody, notFound } from '../problem';
import { streamLeadsCsv, streamLeadsJson } from '../leadExportResponse';
import {
  importLeadBody,
  importLeadBodyAliases,
  importLeadQuery,
  importLeadResponse,
  duplicateSettings,
  IF_MATCH_HEADER,
  LEAD_PATCH_PROPERTIES,
  leadPatchBody,
  leadGetQuery,
  leadOut,
  leadPath,
  leadsOut,
  savedSearchCsvQuery,
  savedSearchQuery,
} from '../schemas/leads';
import type { AccountContext } from '../../domain/account';
import { formatCompactLocal } from '../../domain/datetime';
import { savedSearchLeadFilter, SavedSearchRun } from '../../domain/leadFilters';
import { leadIncludesNeedSnapshot, leadIncludesNeedUsers, leadToJson, visibleFieldsByDefinition } from '../../domain/leadSerializer';
import { leadVersionTag } from '../../domain/entityTag';
import { leadSnapshotToJson } from '../../domain/hookMessages';
import { EMPTY_SNAPSHOT } from '../../domain/organization';
import { findLead, loadLeadLookups } from '../../data/leadRepository';
import { findSavedSearch } from '../../data/savedSearchRepository';
import { loadOrgSnapshot } from '../../data/organizationRepository';
import { oversizedValues } from '../../domain/leadData';
import { importLead, ImportLeadRequest, ImportRefused } from '../../ingest/importLead';
import { anonymizeLead, LeadChangeOutcome, LeadChangeRefusal, LeadPatch, patchLead } from '../../ingest/leadChanges';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKey, idempotencyKeyReused } from '../idempotencyKey';

// ---- import -------------------------------------------------------------------------------

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

/** A lead value over LEAD_VALUE_MAX_BYTES is a 413 naming it (docs/decisions.md, Leads). */
function refuseOversizedValues(data: Readonly<Record<string, string | null>>, maxBytes: number, prefix: string): void {
  const errors = oversizedValues(data, maxBytes, prefix);
  if (errors.length > 0) throw new HttpProblem('payload_too_large', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
}

const importLeadEndpoint = (settings: Pick<Settings, 'LEAD_VALUE_MAX_BYTES'>) =>
  defineEndpoint({
    service: 'leads.import',
    operationId: 'importLead',
    method: 'post',
    path: '/leads',
    summary: 'Import one lead',
    description:
      "Validates the data against the campaign's lead definition: a failure is a 200 with `success: false` and one error per field (missing required field, unknown field, value not of the field's type). " +
      "A field above the account's entry access counts as a field the definition does not have. " +
      "A faulty request (not JSON, no campaign code, data not an object of strings, unknown campaign) is a 400; a campaign outside the account's projects a 403; a value over the server's limit (LEAD_VALUE_MAX_BYTES, 64 KiB by default) a 413 naming it. " +
      'The lead is New and goes into the named pool (created when missing) or `(auto) yyyy-MM-dd` of the platform-local date. ' +
      'With an `Idempotency-Key` header a retry returns the first answer (header `Idempotent-Replayed: true`) without a second lead; the same key with a different body is a 409. Keys are kept 24 hours. ' +
      "The duplicate check (`DuplicateCheck`, `DuplicateKey`, `DuplicateWindow`, `DuplicateStatuses`, `OnDuplicate`) is taken from the query or the body (the body's win), over the campaign's defaults; " +
      'concurrent imports of one key store one lead. A bad value is a 400.',
    tags: ['Leads'],
    access: right('Leads', 'Post'),
    // A write service: JSON only, like the other writes.
    representations: ['json'],
    query: importLeadQuery,
    body: importLeadBody,
    bodyAliases: importLeadBodyAliases,
    response: importLeadResponse,
    errorStatuses: [403, 409, 413],
    headers: [IDEMPOTENCY_KEY_HEADER],
    async handler({ req, res, query, body, account, scope, db, clock, zone }) {
      const pool = body.LeadPool;
      refuseOversizedValues(body.Data, settings.LEAD_VALUE_MAX_BYTES, 'Data.');
      const duplicates = { ...duplicateSettings(query), ...duplicateSettings(body) };
      const request: ImportLeadRequest = {
        campaignCode: body.CampaignCode,
        data: body.Data,
        ...(pool ? { pool } : {}),
        ...(Object.keys(duplicates).length > 0 ? { duplicates } : {}),
      };
      const key = idempotencyKey(req);
      const importer = { accountId: account.id, userId: account.userId, scope, entryAccess: account.entryAccess };
      const outcome = await importLead({ db, clock, zone }, importer, request, key).catch(refusal);
      if (outcome.kind === 'key_reused') throw idempotencyKeyReused();
      if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
      return { body: outcome.answer };
    },
  });

// ---- one lead -----------------------------------------------------------------------------

type LeadContext = Pick<
  EndpointContext<unknown, unknown, unknown>,
  'res' | 'account' | 'scope' | 'db' | 'zone' | 'dateTimeFormat' | 'include'
>;

/** The lead as GET answers it, with its ETag header; 404 when it is unknown or outside the account's projects. */
async function leadAnswer(ctx: LeadContext, uniqueId: string): Promise<EndpointResult> {
  const { account, scope, db, zone, dateTimeFormat, include } = ctx;
  const row = await findLead(db, uniqueId, scope, account.entryAccess);
  if (!row) throw notFound(`no lead ${uniqueId}`);
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
  return { body: expand(row), title: `Lead ${row.uniqueId}`, entityVersion: leadVersionTag(row.uniqueId, row.version) };
}

const getLeadEndpoint = defineEndpoint({
  service: 'leads.get',
  operationId: 'getLead',
  method: 'get',
  path: '/leads/{UniqueId}',
  summary: 'One lead',
  description:
    "The lead in the shape of the exports; 404 when it does not exist or its campaign is outside the account's projects. " +
    'The `ETag` response header names this version of the lead as this answer shows it, for `If-Match` on PATCH and anonymize (a tag of any answer of the same version goes through).',
  tags: ['Leads'],
  access: right('Leads', 'Get'),
  representations: ['json', 'html'],
  params: leadPath,
  query: leadGetQuery,
  response: leadOut,
  dateTimes: true,
  errorStatuses: [404],
  async handler(ctx) {
    return leadAnswer(ctx, ctx.params.UniqueId);
  },
});

/**
 * The answer to a change: the lead as the change left it, rendered as GET renders it, with its
 * new ETag (no read after the write); a refusal is a 404 like the GET, 412, 409, or 400 naming
 * the fields.
 */
function changeAnswer(
  ctx: Pick<LeadContext, 'res' | 'account' | 'zone' | 'dateTimeFormat'>,
  outcome: LeadChangeOutcome,
  uniqueId: string,
): EndpointResult {
  if (outcome.kind !== 'changed') changeRefusal(outcome, uniqueId);
  const { version, snapshot, fields } = outcome.lead;
  const { lead } = leadSnapshotToJson(snapshot, {
    zone: ctx.zone,
    dateTimeFormat: ctx.dateTimeFormat,
    entryAccess: ctx.account.entryAccess,
    fields,
  });
  return { body: lead, title: `Lead ${snapshot.row.uniqueId}`, entityVersion: leadVersionTag(snapshot.row.uniqueId, version) };
}

function changeRefusal(outcome: LeadChangeRefusal, uniqueId: string): never {
  switch (outcome.kind) {
    case 'not_found':
      throw notFound(`no lead ${uniqueId}`);
    case 'precondition_failed':
      throw new HttpProblem('precondition_failed', 'the lead changed since it was read: If-Match does not name its current ETag');
    case 'anonymized':
      throw new HttpProblem('conflict', 'the lead is Anonymized and cannot be changed');
    case 'invalid':
      throw invalidBody(outcome.errors.map((e) => `${e.field}: ${e.message}`).join('; '), outcome.errors);
  }
}

/** The lead properties a merge patch names that it cannot change (the schema itself drops unknown names). */
function unchangeableProperties(raw: unknown): string[] {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return [];
  const allowed = new Set<string>(LEAD_PATCH_PROPERTIES);
  return Object.keys(raw).filter((k) => !allowed.has(k.toLowerCase()));
}

const patchLeadEndpoint = (settings: Pick<Settings, 'LEAD_VALUE_MAX_BYTES'>) =>
  defineEndpoint({
    service: 'leads.patch',
    operationId: 'patchLead',
    method: 'patch',
    path: '/leads/{UniqueId}',
    summary: 'Change a lead',
    description:
      "A JSON merge patch (RFC 7396) of `data` (editable fields within the account's entry access, checked as an import checks them; null removes a value), `priority` and `status` (`Removed` or `DoNotCall`). " +
      "Any other property, a field that is unknown, hidden or not editable, or a value not of the field's type is a 400 naming it, a value over the server's limit (LEAD_VALUE_MAX_BYTES) a 413; nothing is written. " +
      "A changed phone number that is on a do-not-call list moves an open lead to DoNotCall, as an import would; `status: DoNotCall` also lists the lead's number for its project. " +
      'A status change sends `lead.statusChanged` to hooks, in the same transaction. An Anonymized lead is a 409; `If-Match` with another version is a 412. ' +
      "Answers the changed lead with its new `ETag`; 404 like GET for a lead that is unknown or outside the account's projects.",
    tags: ['Leads'],
    access: right('Leads', 'Put'),
    representations: ['json'],
    params: leadPath,
    body: leadPatchBody,
    bodyMediaTypes: ['application/merge-patch+json', 'application/json'],
    response: leadOut,
    dateTimes: true,
    errorStatuses: [404, 409, 412, 413],
    headers: [IF_MATCH_HEADER],
    async handler(ctx) {
      const { req, params, body, account, scope, db, clock, zone } = ctx;
      if (body.data) refuseOversizedValues(body.data, settings.LEAD_VALUE_MAX_BYTES, 'data.');
      const unchangeable = unchangeableProperties(req.body);
      if (unchangeable.length > 0) {
        throw invalidBody(
          `${unchangeable.join(', ')}: a patch may change only ${LEAD_PATCH_PROPERTIES.join(', ')}`,
          unchangeable.map((field) => ({ field, message: 'cannot be changed with a patch' })),
        );
      }
      const patch: LeadPatch = {
        ...(body.data !== undefined ? { data: body.data } : {}),
        ...(body.priority !== undefined ? { priority: body.priority } : {}),
        ...(body.status !== undefined ? { status: body.status } : {}),
      };
      const changer = { userId: account.userId, scope, entryAccess: account.entryAccess };
      const outcome = await patchLead({ db, clock, zone }, changer, params.UniqueId, patch, req.get('If-Match'));
      return changeAnswer(ctx, outcome, params.UniqueId);
    },
  });

const anonymizeLeadEndpoint = defineEndpoint({
  service: 'leads.anonymize',
  operationId: 'anonymizeLead',
  method: 'post',
  path: '/leads/{UniqueId}/anonymize',
  summary: 'Anonymize a lead',
  description:
    "For a person who asked for their data to be cleared; irreversible. In one transaction: the lead's data, phone number, external key and closure data are cleared and its status becomes Anonymized; " +
    "its calls lose the lead's phone number and external key; its calendar events lose their title and notes; copies of these held for hook deliveries are cleared too. " +
    'Sends `lead.statusChanged` (and `calendarEvent.updated` per event) to hooks. A lead already Anonymized is answered as it is, so a retry succeeds. ' +
    'Answers the anonymized lead; 404 like GET; `If-Match` with another version is a 412.',
  tags: ['Leads'],
  access: right('Leads', 'Delete'),
  representations: ['json'],
  params: leadPath,
  response: leadOut,
  dateTimes: true,
  errorStatuses: [404, 412],
  headers: [IF_MATCH_HEADER],
  async handler(ctx) {
    const { req, params, account, scope, db, clock, zone } = ctx;
    const changer = { userId: account.userId, scope, entryAccess: account.entryAccess };
    const outcome = await anonymizeLead({ db, clock, zone }, changer, params.UniqueId, req.get('If-Match'));
    return changeAnswer(ctx, outcome, params.UniqueId);
  },
});

// ---- saved searches -------------------------------------------------------------------------

async function savedSearchFilter(db: Knex, account: AccountContext, searchName: string, run: SavedSearchRun) {
  const search = await findSavedSearch(db, account.userId, searchName);
  if (!search) throw notFound(`the user ${account.userOrgCode} has no saved search named ${JSON.stringify(searchName)}`);
  return savedSearchLeadFilter(search, run);
}

const savedSearchEndpoint = defineEndpoint({
  service: 'leads.search',
  operationId: 'listSavedSearchLeads',
  method: 'get',
  path: '/leads',
  summary: 'Run a saved search',
  description:
    "Runs a search saved in the UI by the user linked to the account (another user's search is a 404), for leads modified at or after modifiedFrom (and before modifiedTo when given). " +
    "`project` replaces the search's campaign selection by the campaigns of that project. Limited by the account's project rights and entry access; streamed.",
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
    const { searchName, modifiedFrom, modifiedTo, project } = query;
    const filter = await savedSearchFilter(ctx.db, ctx.account, searchName, { modifiedFrom, modifiedTo, project });
    return streamLeadsJson(ctx, filter);
  },
});

const savedSearchCsvEndpoint = defineEndpoint({
  service: 'leads.csv',
  operationId: 'exportSavedSearchLeadsCsv',
  method: 'get',
  path: '/leads/csv',
  summary: 'Run a saved search as CSV',
  description:
    "The saved-search export as CSV: the lead columns, then one column per data field the account may see (the lead definitions' fields in sort order). " +
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
    const { searchName, modifiedFrom, modifiedTo, project } = query;
    const filter = await savedSearchFilter(ctx.db, ctx.account, searchName, { modifiedFrom, modifiedTo, project });
    return streamLeadsCsv(ctx, filter, {
      separator: query.CsvFieldSeparator ?? ';',
      encoding: query.Encoding ?? 'utf-8',
      fileName: `Leads-${query.searchName}-${formatCompactLocal(clock(), zone)}.csv`,
    });
  },
});

/** `/leads/csv` before `/leads/{UniqueId}`, so the literal path wins. */
export const leadEndpoints = (settings: Pick<Settings, 'LEAD_VALUE_MAX_BYTES'>) => [
  importLeadEndpoint(settings),
  savedSearchEndpoint,
  savedSearchCsvEndpoint,
  getLeadEndpoint,
  patchLeadEndpoint(settings),
  anonymizeLeadEndpoint,
];
