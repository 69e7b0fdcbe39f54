import type { EndpointContext } from './endpoint';
import { csvEncoding, csvText, setCsvHeaders } from './csvResponse';
import { openExport, sendExportBody } from './exportStream';
import type { LeadFilter } from '../domain/leadFilters';
import {
  dataColumns,
  leadCsvHeader,
  leadIncludesNeedSnapshot,
  leadIncludesNeedUsers,
  leadToCsvLine,
  leadToJson,
  leadToJsonText,
  leadVisibilityByCampaign,
  rawLeadLines,
  rawLeadsHeader,
  visibleFieldsByDefinition,
} from '../domain/leadSerializer';
import { leadCsvTranscoder, leadJsonTranscoder, rawLeadTranscoder } from '../export/leadTranscoder';
import type { LeadRow, RawLeadRow } from '../domain/leadRecords';
import { loadLeadLookups, openLeadCursor, openRawLeadCursor } from '../data/leadRepository';
import { loadOrgSnapshot } from '../data/organizationRepository';
import { leadCopySql, rawLeadCopySql } from '../data/exportQueries';
import { transcodeCopy } from '../export/copyTranscode';
import { jsonArrayText } from '../streams/rowsToText';

/**
 * The lead exports (SimpleLeads, saved searches as JSON and CSV, RawLeads). Each runs in one
 * export session: the lookups that name the rows' ids (campaigns, pools, users, org units,
 * lead definitions) are read first, then the rows, from the same snapshot on the same
 * connection. The rows come from the binary COPY transcoder, or from the reference serializers
 * over a cursor (EXPORT_TRANSCODER=false, and the JSON export with `Include`, whose expanded
 * objects are the include engine's work: docs/decisions.md, Streaming exports).
 */

/** What a lead export reads from its request's context. */
export type LeadExportContext = Pick<
  EndpointContext<unknown, unknown, unknown>,
  'res' | 'account' | 'scope' | 'zone' | 'dateTimeFormat' | 'include' | 'cursor' | 'logger' | 'exports' | 'countRows'
>;

/**
 * Streams the leads matching `filter` as a JSON array of Lead objects (the OpenAPI document;
 * docs/decisions.md, Leads), with the account's project scope and entry access applied and
 * the `Include` names the account may follow expanded.
 */
export async function streamLeadsJson(ctx: LeadExportContext, filter: LeadFilter): Promise<undefined> {
  const { res, account, scope, zone, dateTimeFormat, include } = ctx;
  const expands = leadIncludesNeedSnapshot(include);
  const body = await openExport(ctx, async (session) => {
    const lookups = await loadLeadLookups(session.db, filter, scope);
    const visible = visibleFieldsByDefinition(lookups.definitions, account.entryAccess);
    if (ctx.exports.transcoder && !expands) {
      const copy = await session.copy(leadCopySql(session.db, filter, leadVisibilityByCampaign(lookups, account.entryAccess)));
      return transcodeCopy(copy, leadJsonTranscoder({ zone, dateTimeFormat, lookups, visible }));
    }
    let toJson: (row: LeadRow) => string;
    if (expands) {
      const org = await loadOrgSnapshot(session.db, scope, { users: leadIncludesNeedUsers(include) });
      const expand = leadToJson({ zone, dateTimeFormat, visible, lookups, include, org });
      toJson = (row) => JSON.stringify(expand(row));
    } else {
      toJson = leadToJsonText(zone, visible, lookups, dateTimeFormat);
    }
    const rows = await openLeadCursor(session.db, filter, scope, account.entryAccess, ctx.cursor);
    return jsonArrayText(rows, toJson);
  });
  res.status(200).type('application/json; charset=utf-8');
  return sendExportBody(ctx, body);
}

export interface CsvExport {
  separator: string;
  encoding: string;
  fileName: string;
}

/** Streams the leads matching `filter` as the saved-search CSV: lead columns, then the visible data fields. */
export async function streamLeadsCsv(ctx: LeadExportContext, filter: LeadFilter, csv: CsvExport): Promise<undefined> {
  const { account, scope, zone, dateTimeFormat } = ctx;
  const { separator } = csv;
  const body = await openExport(ctx, async (session) => {
    const lookups = await loadLeadLookups(session.db, filter, scope);
    const columns = dataColumns(lookups.definitions, account.entryAccess);
    if (ctx.exports.transcoder) {
      const copy = await session.copy(leadCopySql(session.db, filter, leadVisibilityByCampaign(lookups, account.entryAccess)));
      return transcodeCopy(copy, leadCsvTranscoder({ zone, dateTimeFormat, separator, lookups, columns }));
    }
    const rows = await openLeadCursor(session.db, filter, scope, account.entryAccess, ctx.cursor);
    return csvText<LeadRow>(rows, leadCsvHeader(columns, separator), leadToCsvLine({ zone, dateTimeFormat, separator, columns, lookups }));
  });
  setCsvHeaders(ctx.res, csv.encoding, csv.fileName);
  return sendExportBody(ctx, body, csvEncoding(csv.encoding));
}

/** Streams the RawLeads CSV: one `UniqueLeadId;FieldName;FieldValue` line per visible data field with a value. */
export async function streamRawLeads(ctx: LeadExportContext, filter: LeadFilter, csv: CsvExport): Promise<undefined> {
  const { account, scope } = ctx;
  const { separator } = csv;
  const body = await openExport(ctx, async (session) => {
    const lookups = await loadLeadLookups(session.db, filter, scope);
    const visible = visibleFieldsByDefinition(lookups.definitions, account.entryAccess);
    if (ctx.exports.transcoder) {
      const copy = await session.copy(rawLeadCopySql(session.db, filter, [...lookups.campaigns.keys()]));
      return transcodeCopy(copy, rawLeadTranscoder({ separator, visible, lookups }));
    }
    const rows = await openRawLeadCursor(session.db, filter, scope, ctx.cursor);
    return csvText<RawLeadRow>(rows, rawLeadsHeader(separator), rawLeadLines({ separator, visible, lookups }));
  });
  setCsvHeaders(ctx.res, csv.encoding, csv.fileName);
  return sendExportBody(ctx, body, csvEncoding(csv.encoding));
}
