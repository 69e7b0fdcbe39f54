import { defineEndpoint, right } from '../endpoint';
import { leadFilterFromQuery, rawLeadsQuery } from '../schemas/leads';
import { formatCompactLocal } from '../../domain/datetime';
import { rawLeadLines, rawLeadsHeader, visibleFieldsByDefinition } from '../../domain/leadSerializer';
import { loadLeadLookups, openRawLeadCursor } from '../../data/leadRepository';
import type { RawLeadRow } from '../../domain/leadRecords';
import { streamCsv } from '../csvResponse';
import { openWithLookups } from '../leadExportResponse';

export const rawLeadsEndpoint = defineEndpoint({
  service: 'rawleads',
  operationId: 'exportRawLeadsCsv',
  method: 'get',
  path: '/rawleads',
  summary: 'Export lead data as rows (RawLeads)',
  description:
    'CSV rows `UniqueLeadId;FieldName;FieldValue` after a header row: one row per data field with a value that the account\'s entry access reaches, ' +
    'leads ordered by lastModifiedTime, then uniqueId, fields in sort order. Takes the filters of /simpleleads; `Encoding` and `CsvFieldSeparator` as in /calls/csv. ' +
    'File name `RawLeads-{now:yyyyMMddHHmmss}.csv`.',
  tags: ['Leads'],
  access: right('Leads', 'Get'),
  representations: ['csv'],
  bulk: true,
  query: rawLeadsQuery,
  async handler({ res, query, account, scope, db, bulkReads, clock, zone, cursor: cursorOptions, logger }) {
    const filter = leadFilterFromQuery(query);
    const separator = query.CsvFieldSeparator ?? ';';
    const { cursor, lookups } = await openWithLookups(
      () => bulkReads.read((replica) => openRawLeadCursor(replica, filter, scope, cursorOptions)),
      () => loadLeadLookups(db, filter, scope),
    );
    const visible = visibleFieldsByDefinition(lookups.definitions, account.entryAccess);
    return streamCsv<RawLeadRow>(res, logger, cursor, {
      header: rawLeadsHeader(separator),
      toLines: rawLeadLines({ separator, visible, lookups }),
      encoding: query.Encoding ?? 'utf-8',
      fileName: `RawLeads-${formatCompactLocal(clock(), zone)}.csv`,
    });
  },
});

export const rawLeadsEndpoints = [rawLeadsEndpoint];
