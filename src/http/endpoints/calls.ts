import { z } from 'zod';
import { defineEndpoint, Endpoint, EndpointContext, right } from '../endpoint';
import { HttpProblem, invalidParameter, notFound } from '../problem';
import type { Knex } from 'knex';
import { csvEncoding, csvText, setCsvHeaders } from '../csvResponse';
import { openExport, sendExportBody } from '../exportStream';
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
import { ORGANIZATION_TREE_INCLUDE_RULE } from '../schemas/common';
import { jsonArrayText } from '../../streams/rowsToText';
import { findVisibleCall, listRecordings, streamCalls, streamReadyPeriods } from '../../data/callRepository';
import { loadOrgSnapshot } from '../../data/organizationRepository';
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
import { CallSubject, callSubjectOf } from '../../domain/callSubject';
import type { OrgSnapshot } from '../../domain/organization';
import type { TimeSpan } from '../../domain/timespan';
import { timeSpanWindowEnd } from '../timeSpanWindow';
import { formatCompactLocal } from '../../domain/datetime';
import { callCsvTranscoder, callJsonTranscoder, readyPeriodJsonTranscoder } from '../../export/callTranscoder';
import { callCopySql, readyPeriodCopySql } from '../../data/exportQueries';
import { transcodeCopy } from '../../export/copyTranscode';

/**
 * The calls family (the OpenAPI document; docs/decisions.md, Calls family; Organisation).
 * The list endpoints stream: a Postgres cursor in index order → one row-to-text stage
 * (include expansion from the request's in-memory snapshot, JSON array or CSV lines) →
 * encoding → coalesced writes → response, headers before the first row, the cursor released
 * when the client leaves.
 */

const WINDOW_RULE =
  'Calls with StartTime <= startTime < StartTime + TimeSpan (TimeSpan added in platform time), ordered by startTime, then uniqueId. Limit caps the count (it is not for paging).';
const INCLUDE_RULE = `Include: campaign, user (and their properties, e.g. parent, campaigns); ${ORGANIZATION_TREE_INCLUDE_RULE} organizationalUnits is always present, root first.`;
const SCOPE_RULE = "Calls of campaigns outside the account's projects are left out.";

/** Which org codes a list accepts, and how one it cannot resolve is answered. */
interface SubjectRule {
  kind?: CallSubject['kind'];
  unknown: (orgCode: string) => HttpProblem;
}

/** `/calls?OrgCode=`: a user or a unit; anything else is a 400 naming the parameter. */
const QUERY_SUBJECT: SubjectRule = {
  unknown: (orgCode) => invalidParameter('OrgCode', `${orgCode} is neither a user nor an org unit`),
};
/** The path endpoints: 404 for an unknown code. */
const USER_SUBJECT: SubjectRule = { kind: 'user', unknown: (orgCode) => notFound(`no user with org code ${orgCode}`) };
const UNIT_SUBJECT: SubjectRule = { kind: 'unit', unknown: (orgCode) => notFound(`no org unit with org code ${orgCode}`) };

type CallsContext = Pick<
  EndpointContext<unknown, unknown, unknown>,
  'res' | 'scope' | 'db' | 'zone' | 'dateTimeFormat' | 'include' | 'cursor' | 'logger' | 'exports' | 'countRows'
>;

/**
 * The request's organisation snapshot and the subject its org code names, resolved from that
 * snapshot (it holds every unit, and every user when a user may be named): no round trip of
 * its own. `db` is the export session's (the snapshot and the rows read from one snapshot).
 */
async function snapshotWithSubject(
  db: Knex,
  ctx: Pick<CallsContext, 'scope'>,
  orgCode: string,
  rule: SubjectRule,
  needUsers: boolean,
): Promise<{ org: OrgSnapshot; subject: CallSubject }> {
  const org = await loadOrgSnapshot(db, ctx.scope, { users: needUsers || rule.kind !== 'unit' });
  const subject = callSubjectOf(org, orgCode, rule.kind);
  if (subject === undefined) throw rule.unknown(orgCode);
  return { org, subject };
}

/** The visible campaigns of a snapshot: the account's project scope as ids for the COPY. */
const visibleCampaignIds = (org: OrgSnapshot): number[] => [...org.campaigns.keys()];

interface WindowQuery {
  StartTime: Date;
  TimeSpan: TimeSpan;
  Limit?: number;
}

/**
 * Streams the calls of the subject an org code names as a JSON array of Call objects: the
 * binary COPY transcoder, or (EXPORT_TRANSCODER=false) the reference serializer over a cursor.
 */
async function streamCallsJson(ctx: CallsContext, orgCode: string, rule: SubjectRule, query: WindowQuery): Promise<undefined> {
  const { res, scope, zone, dateTimeFormat, include } = ctx;
  // Parameter errors first, then the org code (400 or 404).
  const end = timeSpanWindowEnd(query.StartTime, query.TimeSpan, zone);
  const body = await openExport(ctx, async (session) => {
    const { org, subject } = await snapshotWithSubject(session.db, ctx, orgCode, rule, callIncludesNeedUsers(include));
    const window = { subject, start: query.StartTime, end, limit: query.Limit };
    if (ctx.exports.transcoder) {
      const copy = await session.copy(callCopySql(session.db, window, visibleCampaignIds(org)));
      return transcodeCopy(copy, callJsonTranscoder({ zone, dateTimeFormat, include, org }));
    }
    const rows = await streamCalls(session.db, { ...window, scope }, ctx.cursor);
    return jsonArrayText<CallRow>(rows, callToJsonText({ zone, dateTimeFormat, include, org }));
  });
  res.status(200).type('application/json; charset=utf-8');
  return sendExportBody(ctx, body);
}

const listCalls = defineEndpoint({
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
  dateTimes: true,
  async handler(ctx) {
    return streamCallsJson(ctx, ctx.query.OrgCode, QUERY_SUBJECT, ctx.query);
  },
});

/** `/users/{OrgCode}/calls` and `/organizationalunits/{OrgCode}/calls`: one code, the subject's kind apart. */
function subjectCallsEndpoint(
  rule: SubjectRule,
  endpoint: { service: string; operationId: string; path: string; summary: string; subjectRule: string; exampleOrgCode: string },
): Endpoint {
  return defineEndpoint({
    service: endpoint.service,
    operationId: endpoint.operationId,
    method: 'get',
    path: endpoint.path,
    summary: endpoint.summary,
    description: `${WINDOW_RULE} ${endpoint.subjectRule} ${INCLUDE_RULE} ${SCOPE_RULE}`,
    tags: ['Calls'],
    access: right('Calls', 'Get'),
    representations: ['json'],
    bulk: true,
    params: orgCodePath(endpoint.exampleOrgCode),
    query: callsOfQuery,
    response: z.array(callOut),
    dateTimes: true,
    errorStatuses: [404],
    async handler(ctx) {
      return streamCallsJson(ctx, ctx.params.OrgCode, rule, ctx.query);
    },
  });
}

const listUserCalls = subjectCallsEndpoint(USER_SUBJECT, {
  service: 'users.calls',
  operationId: 'listUserCalls',
  path: '/users/{OrgCode}/calls',
  summary: "A user's calls in a time window",
  subjectRule: '404 when no user has the org code.',
  exampleOrgCode: 'anna.jensen@demo.example',
});

const listOrgUnitCalls = subjectCallsEndpoint(UNIT_SUBJECT, {
  service: 'organizationalunits.calls',
  operationId: 'listOrganizationalUnitCalls',
  path: '/organizationalunits/{OrgCode}/calls',
  summary: "An org unit's calls in a time window",
  subjectRule:
    "The calls of the unit's users and of every unit below it, judged by the hierarchy stored on each call. 404 when no org unit has the org code.",
  exampleOrgCode: 'TRYG Forsikring A/S',
});

const callsCsv = defineEndpoint({
  service: 'calls.csv',
  operationId: 'exportCallsCsv',
  method: 'get',
  path: '/calls/csv',
  summary: 'Calls of a user or an org unit as a CSV file (FlattenedCall rows)',
  description: `${WINDOW_RULE} One header row with the FlattenedCall field names (the call fields, then campaignCode … organizationalUnit4OrgCode), RFC 4180 quoting with CsvFieldSeparator (default ;; one character the Encoding can write), CRLF line ends, absent values empty. Encoding: any encoding iconv-lite knows (default utf-8). The attachment is named Calls-{OrgCode}-{StartTime:yyyyMMddHHmmss}-{EndTime:yyyyMMddHHmmss}.csv in platform time. ${SCOPE_RULE}`,
  tags: ['Calls'],
  access: right('Calls', 'Get'),
  representations: ['csv'],
  bulk: true,
  query: callsCsvQuery,
  response: z.string().meta({ description: 'text/csv' }),
  dateTimes: true,
  async handler(ctx) {
    const { query, zone, dateTimeFormat, scope } = ctx;
    const separator = query.CsvFieldSeparator ?? ';';
    const encoding = query.Encoding ?? 'utf-8';
    const end = timeSpanWindowEnd(query.StartTime, query.TimeSpan, zone);
    const body = await openExport(ctx, async (session) => {
      // The CSV names each call's user: the snapshot holds the users in any case.
      const { org, subject } = await snapshotWithSubject(session.db, ctx, query.OrgCode, QUERY_SUBJECT, true);
      const window = { subject, start: query.StartTime, end, limit: query.Limit };
      if (ctx.exports.transcoder) {
        const copy = await session.copy(callCopySql(session.db, window, visibleCampaignIds(org)));
        return transcodeCopy(copy, callCsvTranscoder({ zone, dateTimeFormat, separator, org }));
      }
      const rows = await streamCalls(session.db, { ...window, scope }, ctx.cursor);
      return csvText<CallRow>(rows, flattenedCallHeader(separator), callToCsvLine({ zone, dateTimeFormat, separator, org }));
    });
    const fileName = `Calls-${query.OrgCode}-${formatCompactLocal(query.StartTime, zone)}-${formatCompactLocal(end, zone)}.csv`;
    setCsvHeaders(ctx.res, encoding, fileName);
    return sendExportBody(ctx, body, csvEncoding(encoding));
  },
});

const callRecordings = defineEndpoint({
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
  dateTimes: true,
  errorStatuses: [404],
  async handler({ params, query, scope, db, zone, dateTimeFormat }) {
    if (query.TimeSpan !== undefined && query.StartTime === undefined) {
      throw invalidParameter('StartTime', 'is required with TimeSpan');
    }
    const call = await findVisibleCall(db, params.UniqueId, scope);
    if (call === undefined) throw notFound(`no call ${params.UniqueId}`);
    const end = query.StartTime && query.TimeSpan ? timeSpanWindowEnd(query.StartTime, query.TimeSpan, zone) : undefined;
    const rows = await listRecordings(db, call, { start: query.StartTime, end, limit: query.Limit });
    return { body: rows.map(recordingToJson(zone, dateTimeFormat)), title: `Recordings of call ${params.UniqueId}` };
  },
});

const agentReadyPeriods = defineEndpoint({
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
  dateTimes: true,
  async handler(ctx) {
    const { query, res, scope, zone, dateTimeFormat } = ctx;
    const to = timeSpanWindowEnd(query.FromTime, query.TimeSpan, zone);
    const body = await openExport(ctx, async (session) => {
      const org = await loadOrgSnapshot(session.db, scope, { users: false });
      const window = { from: query.FromTime, to };
      if (ctx.exports.transcoder) {
        const copy = await session.copy(readyPeriodCopySql(session.db, window, visibleCampaignIds(org)));
        return transcodeCopy(copy, readyPeriodJsonTranscoder({ zone, dateTimeFormat, org }));
      }
      const rows = await streamReadyPeriods(session.db, { ...window, scope }, ctx.cursor);
      const toPeriod = readyPeriodToJson(org, zone, dateTimeFormat);
      return jsonArrayText<ReadyPeriodRow>(rows, (row) => JSON.stringify(toPeriod(row)));
    });
    res.status(200).type('application/json; charset=utf-8');
    return sendExportBody(ctx, body);
  },
});

export const callEndpoints: Endpoint[] = [listCalls, callsCsv, agentReadyPeriods, callRecordings, listUserCalls, listOrgUnitCalls];
