import type { Readable } from 'node:stream';
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
  'res' | 'account' | 'scope' | 'db' | 'bulkReads' | 'zone' | 'dateTimeFormat' | 'cursor' | 'logger'
>;

/**
 * Streams the leads matching `filter` as a JSON array of Lead objects (the OpenAPI document;
 * docs/decisions.md, Leads), with the account's project scope and entry access applied and
 * `Include` expanded.
 */
export async function streamLeadsJson(ctx: LeadExportContext, filter: LeadFilter, includeRaw: unknown): Promise<undefined> {
  const { res, account, scope, db, bulkReads, zone, dateTimeFormat } = ctx;
  const include = parseIncludeNames(includeRaw);
  // The rows are a bulk read (the replica while it is up); what names them comes from the
  // primary, which is never behind the replica.
  const { cursor, lookups } = await openWithLookups(
    () => bulkReads.read((replica) => openLeadCursor(replica, filter, scope, account.entryAccess, ctx.cursor)),
    () => loadLeadLookups(db, filter, scope),
  );
  let toJson: (row: LeadRow) => string;
  try {
    const visible = visibleFieldsByDefinition(lookups.definitions, account.entryAccess);
    if (leadIncludesNeedSnapshot(include)) {
      const org = await loadOrgSnapshot(db, scope, { users: leadIncludesNeedUsers(include) });
      const expand = leadToJson({ zone, dateTimeFormat, visible, lookups, include, org });
      toJson = (row) => JSON.stringify(expand(row));
    } else {
      toJson = leadToJsonText(zone, visible, lookups, dateTimeFormat);
    }
  } catch (err) {
    cursor.destroy();
    throw err;
  }
  res.status(200).type('application/json; charset=utf-8');
  await streamToResponse(res, jsonArrayText(cursor, toJson), [], ctx.logger);
  return undefined;
}

/**
 * Opens the cursor, then loads what its rows are named by (every pool or campaign a row of the
 * cursor's snapshot refers to exists by then); the cursor is closed if loading fails.
 */
export async function openWithLookups<T>(openRows: () => Promise<Readable>, load: () => Promise<T>): Promise<{ cursor: Readable; lookups: T }> {
  const cursor = await openRows();
  try {
    return { cursor, lookups: await load() };
  } catch (err) {
    cursor.destroy();
    throw err;
  }
}

