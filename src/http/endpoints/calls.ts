import type { Response } from 'express';
import { z } from 'zod';
import { defineEndpoint, Endpoint, right } from '../endpoint';
import { invalidParameter, notFound } from '../problem';
import { cursorOptions, streamToResponse } from '../streamResponse';
import { streamCsv } from '../csvResponse';
import {
  callOut,
  callsCsvQuery,
  callsOfQuery,
  callsQuery,
  orgCodePath,
  readyPeriodOut,
  readyPeriodsQuery,
  recordingOut,
  recordingsPath,
  recordingsQuery,
} from '../schemas/calls';
import { jsonArrayText } from '../../streams/rowsToText';
import { projectScope, ProjectScope } from '../../data/projectScope';
import { CallSubject, findVisibleCallId, listRecordings, streamCalls, streamReadyPeriods } from '../../data/callRepository';
import { findOrgCodeKind, findOrgUnit, findUserId, loadOrgSnapshot } from '../../data/organizationRepository';
import {
  callIncludesNeedUsers,
  CallRow,
  ReadyPeriodRow,
  callToCsvLine,
  callToJsonText,
  flattenedCallHeader,
  readyPeriodToJson,
  recordingToJson,
} from '../../domain/callSerializer';
import { parseIncludeNames } from '../../domain/include';
import { addTimeSpan, TimeSpan } from '../../domain/timespan';
import { formatCompactLocal } from '../../domain/datetime';
import type { AppServices } from '../services';
import type { AccountContext } from '../../domain/account';

/**
 * The calls family (spec 4.1, DESIGN §5). The list endpoints stream: a Postgres cursor in
 * index order → one row-to-text stage (include expansion from the request's in-memory
 * snapshot, JSON array or CSV lines) → encoding → coalesced writes → response, headers before
 * the first row, the cursor released when the client leaves.
 */

const WINDOW_RULE =
  'Calls with StartTime <= startTime < StartTime + TimeSpan (TimeSpan added in platform time), ordered by startTime, then uniqueId. Limit caps the count (it is not for paging).';
const INCLUDE_RULE =
  'Include: campaign, user (and their properties, e.g. parent, campaigns). organizationalUnits is always present, root first.';
const SCOPE_RULE = "Calls of campaigns outside the account's projects are left out.";

function windowEnd(start: Date, span: TimeSpan, services: AppServices): Date {
  if (span.negative) throw invalidParameter('TimeSpan', 'must not be negative');
  const end = addTimeSpan(start, span, services.settings.PLATFORM_TIMEZONE);
  // Postgres and the DateTime format end at year 9999; `P99999999Y` must be a 400, not a 500.
  if (!Number.isFinite(end.getTime()) || end.getUTCFullYear() > 9999) {
    throw invalidParameter('TimeSpan', 'reaches beyond the year 9999');
  }
  return end;
}

/** `/calls?OrgCode=`: a user or a unit; anything else is a 400 (DESIGN §4). */
async function subjectOfQuery(services: AppServices, orgCode: string): Promise<CallSubject> {
  const kind = await findOrgCodeKind(services.db, orgCode);
  const subject =
    kind === 'user' ? await userSubject(services, orgCode) : kind === 'unit' ? await unitSubject(services, orgCode) : undefined;
  if (subject === undefined) throw invalidParameter('OrgCode', `${orgCode} is neither a user nor an org unit`);
  return subject;
}

async function userSubject(services: AppServices, orgCode: string): Promise<CallSubject | undefined> {
  const userId = await findUserId(services.db, orgCode);
  return userId === undefined ? undefined : { kind: 'user', userId };
}

async function unitSubject(services: AppServices, orgCode: string): Promise<CallSubject | undefined> {
  const unit = await findOrgUnit(services.db, orgCode);
  return unit === undefined ? undefined : { kind: 'unit', unitId: unit.id, level: unit.level };
}

interface WindowQuery {
  StartTime: Date;
  TimeSpan: TimeSpan;
  Limit?: number;
  Include?: string[];
}

/** Streams the calls of a subject as a JSON array of Call objects. */
async function streamCallsJson(
  res: Response,
  services: AppServices,
  account: AccountContext,
  findSubject: () => Promise<CallSubject>,
  query: WindowQuery,
): Promise<undefined> {
  const zone = services.settings.PLATFORM_TIMEZONE;
  // Parameter errors first, then the org code (400 or 404).
  const end = windowEnd(query.StartTime, query.TimeSpan, services);
  const subject = await findSubject();
  const scope = projectScope(account.projectPatterns);
  const include = parseIncludeNames(query.Include);
  const cursor = cursorOptions(res, services.settings.CURSOR_BATCH_SIZE);
  const org = await loadOrgSnapshot(services.db, scope, { users: callIncludesNeedUsers(include) });
  const rows = await streamCalls(services.db, { subject, start: query.StartTime, end, limit: query.Limit, scope }, cursor);
  const format = callToJsonText({ zone, include, org });
  res.status(200).type('application/json; charset=utf-8');
  await streamToResponse(res, jsonArrayText<CallRow>(rows, format), [], services.logger);
  return undefined;
}

export const listCalls = defineEndpoint({
  service: 'calls',
  operationId: 'listCalls',
  method: 'get',
  path: '/calls',
  summary: 'Calls of a user or an org unit in a time window',
  description: `${WINDOW_RULE} OrgCode names a user (their calls) or an org unit (the calls of its users and of every unit below it, by the hierarchy stored on each call); an org code that is neither is a 400. ${INCLUDE_RULE} ${SCOPE_RULE}`,
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['json'],
  bulk: true,
  query: callsQuery,
  response: z.array(callOut),
  async handler({ query, account, services, res }) {
    return streamCallsJson(res, services, account, () => subjectOfQuery(services, query.OrgCode), query);
  },
});

export const listUserCalls = defineEndpoint({
  service: 'users.calls',
  operationId: 'listUserCalls',
  method: 'get',
  path: '/users/{OrgCode}/calls',
  summary: "A user's calls in a time window",
  description: `${WINDOW_RULE} 404 when no user has the org code. ${INCLUDE_RULE} ${SCOPE_RULE}`,
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['json'],
  bulk: true,
  params: orgCodePath,
  query: callsOfQuery,
  response: z.array(callOut),
  errorStatuses: [404],
  async handler({ params, query, account, services, res }) {
    const findSubject = async () => {
      const subject = await userSubject(services, params.OrgCode);
      if (subject === undefined) throw notFound(`no user with org code ${params.OrgCode}`);
      return subject;
    };
    return streamCallsJson(res, services, account, findSubject, query);
  },
});

export const listOrgUnitCalls = defineEndpoint({
  service: 'organizationalunits.calls',
  operationId: 'listOrganizationalUnitCalls',
  method: 'get',
  path: '/organizationalunits/{OrgCode}/calls',
  summary: "An org unit's calls in a time window",
  description: `${WINDOW_RULE} The calls of the unit's users and of every unit below it, judged by the hierarchy stored on each call. 404 when no org unit has the org code. ${INCLUDE_RULE} ${SCOPE_RULE}`,
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['json'],
  bulk: true,
  params: orgCodePath,
  query: callsOfQuery,
  response: z.array(callOut),
  errorStatuses: [404],
  async handler({ params, query, account, services, res }) {
    const findSubject = async () => {
      const subject = await unitSubject(services, params.OrgCode);
      if (subject === undefined) throw notFound(`no org unit with org code ${params.OrgCode}`);
      return subject;
    };
    return streamCallsJson(res, services, account, findSubject, query);
  },
});

/** Characters a file name cannot hold on common systems become `_` (`TRYG Forsikring A/S`). */
function fileNamePart(value: string): string {
  return value.replace(/[\\/:*?"<>|\u0000-\u001f\u007f]/g, '_');
}

export const callsCsv = defineEndpoint({
  service: 'calls.csv',
  operationId: 'exportCallsCsv',
  method: 'get',
  path: '/calls/csv',
  summary: 'Calls of a user or an org unit as a CSV file (FlattenedCall rows)',
  description: `${WINDOW_RULE} One header row with the FlattenedCall field names (the call fields, then campaignCode … organizationalUnit4OrgCode), RFC 4180 quoting with CsvFieldSeparator (default ;), CRLF line ends, absent values empty. Encoding: any encoding iconv-lite knows (default utf-8). The attachment is named Calls-{OrgCode}-{StartTime:yyyyMMddHHmmss}-{EndTime:yyyyMMddHHmmss}.csv in platform time. ${SCOPE_RULE}`,
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['csv'],
  bulk: true,
  query: callsCsvQuery,
  response: z.string().meta({ description: 'text/csv' }),
  async handler({ query, account, services, res }) {
    const zone = services.settings.PLATFORM_TIMEZONE;
    const encoding = query.Encoding ?? 'utf-8';
    const separator = query.CsvFieldSeparator ?? ';';
    const end = windowEnd(query.StartTime, query.TimeSpan, services);
    const subject = await subjectOfQuery(services, query.OrgCode);
    const scope: ProjectScope = projectScope(account.projectPatterns);
    const cursor = cursorOptions(res, services.settings.CURSOR_BATCH_SIZE);
    const org = await loadOrgSnapshot(services.db, scope);
    const rows = await streamCalls(services.db, { subject, start: query.StartTime, end, limit: query.Limit, scope }, cursor);
    const fileName = `Calls-${fileNamePart(query.OrgCode)}-${formatCompactLocal(query.StartTime, zone)}-${formatCompactLocal(end, zone)}.csv`;
    return streamCsv(res, services, rows, flattenedCallHeader(separator), callToCsvLine({ zone, separator, org }), encoding, fileName);
  },
});

export const callRecordings = defineEndpoint({
  service: 'calls.recordings',
  operationId: 'listCallRecordings',
  method: 'get',
  path: '/calls/{UniqueId}/recordings',
  summary: 'Recordings of one call',
  description:
    "Recorded conversations of the call, by start time. StartTime (and TimeSpan) keep those that started in [StartTime, StartTime + TimeSpan); Limit caps the count. 404 when the call is unknown or outside the account's projects.",
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  // One call's recordings are a small list: JSON and the HTML page, default (not bulk) limits.
  representations: ['json', 'html'],
  params: recordingsPath,
  query: recordingsQuery,
  response: z.array(recordingOut),
  errorStatuses: [404],
  async handler({ params, query, account, services }) {
    const zone = services.settings.PLATFORM_TIMEZONE;
    if (query.TimeSpan !== undefined && query.StartTime === undefined) {
      throw invalidParameter('StartTime', 'is required with TimeSpan');
    }
    const callId = await findVisibleCallId(services.db, params.UniqueId, projectScope(account.projectPatterns));
    if (callId === undefined) throw notFound(`no call ${params.UniqueId}`);
    const end = query.StartTime && query.TimeSpan ? windowEnd(query.StartTime, query.TimeSpan, services) : undefined;
    const rows = await listRecordings(services.db, callId, { start: query.StartTime, end, limit: query.Limit });
    return { body: rows.map((r) => recordingToJson(r, zone)), title: `Recordings of call ${params.UniqueId}` };
  },
});

export const agentReadyPeriods = defineEndpoint({
  service: 'calls.agentreadyperiods',
  operationId: 'listAgentReadyPeriods',
  method: 'get',
  path: '/calls/agentreadyperiods',
  summary: 'Agent ready-for-call periods that ended in a time window',
  description:
    "Periods whose end (startTime + seconds) lies in [FromTime, FromTime + TimeSpan), ordered by that end, then uniqueId. Periods of campaigns outside the account's projects are left out.",
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['json'],
  bulk: true,
  query: readyPeriodsQuery,
  response: z.array(readyPeriodOut),
  async handler({ query, account, services, res }) {
    const zone = services.settings.PLATFORM_TIMEZONE;
    const scope = projectScope(account.projectPatterns);
    const to = windowEnd(query.FromTime, query.TimeSpan, services);
    const cursor = cursorOptions(res, services.settings.CURSOR_BATCH_SIZE);
    const org = await loadOrgSnapshot(services.db, scope, { users: false });
    const rows = await streamReadyPeriods(services.db, { from: query.FromTime, to, scope }, cursor);
    const toPeriod = readyPeriodToJson(org, zone);
    res.status(200).type('application/json; charset=utf-8');
    await streamToResponse(res, jsonArrayText<ReadyPeriodRow>(rows, (row) => JSON.stringify(toPeriod(row))), [], services.logger);
    return undefined;
  },
});

export const callEndpoints: Endpoint[] = [listCalls, callsCsv, agentReadyPeriods, callRecordings, listUserCalls, listOrgUnitCalls];
