import { defineEndpoint, right } from '../endpoint';
import { leadFilterFromQuery, rawLeadsQuery } from '../schemas/leads';
import { formatCompactLocal } from '../../domain/datetime';
import { streamRawLeads } from '../leadExportResponse';

const rawLeadsEndpoint = defineEndpoint({
  service: 'rawleads',
  operationId: 'exportRawLeadsCsv',
  method: 'get',
  path: '/rawleads',
  summary: 'Export lead data as rows (RawLeads)',
  description:
    "CSV rows `UniqueLeadId;FieldName;FieldValue` after a header row: one row per data field with a value that the account's entry access reaches, " +
    'leads ordered by lastModifiedTime, then uniqueId, fields in sort order. Takes the filters of /simpleleads; `Encoding` and `CsvFieldSeparator` as in /calls/csv. ' +
    'File name `RawLeads-{now:yyyyMMddHHmmss}.csv`.',
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

export const rawLeadsEndpoints = [rawLeadsEndpoint];
