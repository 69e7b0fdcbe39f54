import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { EndpointContext } from './endpoint';
import { streamToResponse } from './streamResponse';
import { parseIncludeNames } from '../domain/include';
import type { LeadFilter } from '../domain/leadFilters';
import {
  leadIncludesNeedSnapshot,
  leadIncludesNeedUsers,
  leadToJson,
  leadToJsonText,
  visibleFieldsByDefinition,
} from '../domain/leadSerializer';
import { loadLeadLookups, openLeadCursor } from '../data/leadRepository';
import type { LeadRow } from '../domain/leadRecords';
import { loadOrgSnapshot } from '../data/organizationRepository';
import type { OrgSnapshot } from '../domain/organization';
import { jsonArrayText } from '../streams/rowsToText';
import { openExportReads } from '../data/exportReads';

// Shared by the lead exports (SimpleLeads, saved searches, RawLeads).

export const EMPTY_SNAPSHOT: OrgSnapshot = {
  units: new Map(),
  childrenOf: new Map(),
  users: new Map(),
  usersOf: new Map(),
  campaigns: new Map(),
};

/** What a lead export reads from its request's context. */
export type LeadExportContext = Pick<
  EndpointContext<unknown, unknown, unknown>,
  'res' | 'account' | 'scope' | 'exportDb' | 'zone' | 'dateTimeFormat' | 'cursor' | 'logger' | 'stallTimeoutMs'
>;

/**
 * Streams the leads matching `filter` as a JSON array of Lead objects (the OpenAPI document;
 * docs/decisions.md, Leads), with the account's project scope and entry access applied and
 * `Include` expanded. Lookups, snapshot and rows are read on one export connection.
 */
export async function streamLeadsJson(ctx: LeadExportContext, filter: LeadFilter, includeRaw: unknown): Promise<undefined> {
  const { res, account, scope, zone, dateTimeFormat } = ctx;
  const include = parseIncludeNames(includeRaw);
  const { rows, lookups, org } = await openExportReads(
    ctx.exportDb,
    async (trx) => {
      const lookups = await loadLeadLookups(trx, filter, scope);
      const org = leadIncludesNeedSnapshot(include) ? await loadOrgSnapshot(trx, scope, { users: leadIncludesNeedUsers(include) }) : undefined;
      const rows = await openLeadCursor(trx, filter, scope, account.entryAccess, ctx.cursor);
      return { rows, lookups, org };
    },
    ctx.cursor.signal,
  );
  let toJson: (row: LeadRow) => string;
  try {
    const visible = visibleFieldsByDefinition(lookups.definitions, account.entryAccess);
    if (org) {
      const expand = leadToJson({ zone, dateTimeFormat, visible, lookups, include, org });
      toJson = (row) => JSON.stringify(expand(row));
    } else {
      toJson = leadToJsonText(zone, visible, lookups, dateTimeFormat);
    }
  } catch (err) {
    rows.destroy();
    throw err;
  }
  res.status(200).type('application/json; charset=utf-8');
  await streamToResponse(res, jsonArrayText(rows, toJson), [], ctx.logger, ctx.stallTimeoutMs);
  return undefined;
}

/**
 * Opens a lead export's rows with the lookups that name them, on one export connection and
 * from one snapshot (src/data/exportReads.ts): `load` runs first, then `openRows`.
 */
export async function openWithLookups<T>(
  ctx: Pick<LeadExportContext, 'exportDb' | 'cursor'>,
  load: (db: Knex) => Promise<T>,
  openRows: (db: Knex) => Promise<Readable>,
): Promise<{ cursor: Readable; lookups: T }> {
  const { rows, lookups } = await openExportReads(
    ctx.exportDb,
    async (trx) => {
      const lookups = await load(trx);
      return { lookups, rows: await openRows(trx) };
    },
    ctx.cursor.signal,
  );
  return { cursor: rows, lookups };
}
