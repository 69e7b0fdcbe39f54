import { defineEndpoint, right } from '../endpoint';
import { leadFilterFromQuery, rawLeadsQuery } from '../schemas/leads';
import { formatCompactLocal } from '../../domain/datetime';
import { streamRawLeads } from '../leadExportResponse';

/**
 * The RawLeads export at `/rawleads`, and at `/rawleads/csv`, the address clients of the live
 * service call it by: the same export, counted as the same service.
 */
function rawLeadsEndpoint(path: string, operationId: string, alias: boolean) {
  return defineEndpoint({
    service: 'rawleads',
    operationId,
    method: 'get',
    path,
    summary: alias ? 'Export lead data as rows (RawLeads), by its CSV address' : 'Export lead data as rows (RawLeads)',
    description:
      (alias ? 'The same export as GET /rawleads, counted as the same service. ' : '') +
      "CSV rows `UniqueLeadId;FieldName;FieldValue` after a header row: one row per data field with a value that the account's entry access reaches, " +
      'leads ordered by lastModifiedTime, then uniqueId, fields in sort order. Takes the filters of /simpleleads (`Limit` caps the leads, each with all its rows); ' +
      '`Encoding` and `CsvFieldSeparator` as in /calls/csv. File name `RawLeads-{now:yyyyMMddHHmmss}.csv`.',
    tags: ['Leads'],
    access: right('Leads', 'Get'),
    representations: ['csv'],
    bulk: true,
    query: rawLeadsQuery,
    async handler(ctx) {
      const { query, clock, zone } = ctx;
      return streamRawLeads(ctx, leadFilterFromQuery(query), {
        separator: query.CsvFieldSeparator ?? ';',
        encoding: query.Encoding ?? 'utf-8',
        fileName: `RawLeads-${formatCompactLocal(clock(), zone)}.csv`,
      });
    },
  });
}

export const rawLeadsEndpoints = [
  rawLeadsEndpoint('/rawleads', 'exportRawLeadsCsv', false),
  rawLeadsEndpoint('/rawleads/csv', 'exportRawLeadsCsvAlias', true),
];
