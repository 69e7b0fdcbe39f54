import { z } from 'zod';
import { anyAccount, defineEndpoint, Endpoint, serviceNamesOf } from '../endpoint';
import type { AppServices } from '../services';
import { dailyLimitFor } from '../../ratelimit/countRequests';
import { myAccountBody, requestCountBody, requestLimitBody, requestLogEntryBody, requestLogQuery } from '../schemas/myAccount';
import { openRequestLogCursor } from '../../data/requestLog';
import { renderRequestLogRow, requestLogCsvHeader, requestLogCsvLine, RequestLogRow, unknownServiceName } from '../../domain/requestLog';
import { openExport, sendExportBody } from '../exportStream';
import { csvEncoding, csvText, setCsvHeaders } from '../csvResponse';
import { jsonArrayText } from '../../streams/rowsToText';
import { timeSpanWindowEnd } from '../timeSpanWindow';
import { invalidParameter } from '../problem';
import { RESOURCE_TYPES, VERBS } from '../../domain/enums';
import type { AccountContext } from '../../domain/account';
import { isHighLimit, minuteLimit } from '../../ratelimit/requestWeight';
import { formatCompactLocal, formatDateTime } from '../../domain/datetime';

/** A service as request counting sees it: its name and whether it has the bulk default limit. */
export type CountedService = Pick<Endpoint, 'service' | 'bulk'>;

/**
 * The services the account's requests are counted under, one per name, sorted by name:
 * every endpoint that needs an account and is not exempt from counting.
 */
export function countedServices(endpoints: readonly Endpoint[]): CountedService[] {
  const byName = new Map<string, CountedService>();
  for (const e of endpoints) {
    if (e.access.kind === 'public' || e.counted === false || byName.has(e.service)) continue;
    byName.set(e.service, { service: e.service, bulk: e.bulk });
  }
  return [...byName.values()].sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
}

/** The account as its owner may see it: never the password hash, the limits or internal ids. */
function describeAccount(account: AccountContext, logRequestData: boolean) {
  const resourceRights: Partial<Record<string, string[]>> = {};
  // Canonical order of resource types and verbs, so the answer does not depend on storage order.
  for (const resource of RESOURCE_TYPES) {
    const verbs = VERBS.filter((v) => account.rights[resource]?.includes(v));
    if (verbs.length > 0) resourceRights[resource] = verbs;
  }
  return {
    username: account.username,
    userOrgCode: account.userOrgCode,
    // The same value under the name clients of the live service read.
    orgCode: account.userOrgCode,
    dateTimeFormat: account.dateTimeFormat,
    projectRights: [...account.projectPatterns],
    resourceRights,
    leadDefinitionEntryAccess: account.entryAccess,
    logRequestData,
  };
}

/**
 * `/myaccount` and its request limits and counts (docs/decisions.md, Request counting). The
 * limits list every counted service of the API, so the factory is handed the endpoint list
 * (read lazily: this module's own endpoints are part of it), the limit settings and the
 * request counters.
 */
export function myAccountEndpoints(
  endpoints: () => readonly Endpoint[],
  { settings, counter }: Pick<AppServices, 'settings' | 'counter'>,
): Endpoint[] {
  let services: CountedService[] | undefined;
  const listServices = () => (services ??= countedServices(endpoints()));
  // Every service a request can be logged under (GET /metrics, not counted, too), sorted.
  let names: string[] | undefined;
  const serviceNames = () => (names ??= serviceNamesOf(endpoints()));

  const myAccount = defineEndpoint({
    service: 'myaccount',
    operationId: 'getMyAccount',
    method: 'get',
    path: '/myaccount',
    summary: 'The calling account',
    description:
      'Username, linked platform user (`userOrgCode`, and the same value as `orgCode`), DateTime format, project patterns, resource rights and lead definition entry access of the account the request authenticates as.',
    tags: ['Account'],
    access: anyAccount,
    representations: ['json', 'html'],
    response: myAccountBody,
    handler({ account }) {
      return Promise.resolve({ body: describeAccount(account, settings.REQUEST_LOG), title: 'My account' });
    },
  });

  const limits = defineEndpoint({
    service: 'myaccount.limits',
    operationId: 'getMyAccountLimits',
    method: 'get',
    path: '/myaccount/request/limits',
    summary: 'Request limits of the calling account',
    description:
      "One row per counted service: the daily limit (the account's own, else the default), whether it is a high-limit service, and the fair use minute limit.",
    tags: ['Account'],
    access: anyAccount,
    representations: ['json', 'html'],
    response: z.array(requestLimitBody),
    handler({ req }) {
      // The stored account: its per-service limit overrides.
      const account = req.account!;
      const body = listServices().map((service) => {
        const dailyLimit = dailyLimitFor(service, account, settings);
        return { service: service.service, dailyLimit, highLimit: isHighLimit(dailyLimit), minuteLimit: minuteLimit(dailyLimit) };
      });
      return Promise.resolve({ body, title: 'Request limits' });
    },
  });

  const counts = defineEndpoint({
    service: 'myaccount.counts',
    operationId: 'getMyAccountCounts',
    method: 'get',
    path: '/myaccount/request/counts',
    summary: 'Request counts of the calling account',
    description:
      'One row per service with a running 24-hour period, this request included: what was spent, when the period started and the seconds until it ends.',
    tags: ['Account'],
    access: anyAccount,
    representations: ['json', 'html'],
    // It counts itself, and its seconds run down.
    changesEveryTime: true,
    response: z.array(requestCountBody),
    dateTimes: true,
    async handler({ account, clock, zone, dateTimeFormat }) {
      const rows = await counter.counts(account.id, clock().getTime());
      const body = rows.map((r) => ({
        service: r.service,
        count: r.count,
        periodStart: formatDateTime(r.periodStart, zone, dateTimeFormat),
        resetSeconds: r.resetSeconds,
        minuteCount: r.minuteCount,
      }));
      return { body, title: 'Request counts' };
    },
  });

  const requests = defineEndpoint({
    service: 'myaccount.requests',
    operationId: 'getMyAccountRequests',
    method: 'get',
    path: '/myaccount/requests',
    summary: 'The request log of the calling account',
    description:
      "The account's own authenticated requests that arrived in [FromTime, FromTime + TimeSpan), oldest first, streamed: time, request id, method, path and query, service, status, " +
      'the weight counted, duration, bytes sent and client address; never a header or a body. `Status` and `Service` narrow it. ' +
      'JSON (default) or CSV (`Accept: text/csv`: a header row, RFC 4180 quoting with CsvFieldSeparator, CRLF line ends, Encoding). ' +
      `Entries are written in batches within about a second and kept for the server's retention (REQUEST_LOG_RETENTION, default P30D); ` +
      'without the request log (`logRequestData: false` on /myaccount) the answer is empty.',
    tags: ['Account'],
    access: anyAccount,
    representations: ['json', 'csv'],
    bulk: true,
    query: requestLogQuery,
    response: z.array(requestLogEntryBody),
    dateTimes: true,
    async handler(ctx) {
      const { query, zone, dateTimeFormat, account, representation } = ctx;
      const unknownService =
        query.Service && unknownServiceName(query.Service, serviceNames(), 'GET /myaccount/request/limits lists every service');
      if (unknownService) throw invalidParameter('Service', unknownService);
      const filter = {
        from: query.FromTime,
        to: timeSpanWindowEnd(query.FromTime, query.TimeSpan, zone),
        ...(query.Status ? { statuses: query.Status } : {}),
        ...(query.Service ? { services: query.Service } : {}),
      };
      const csv = representation === 'csv';
      const separator = query.CsvFieldSeparator ?? ';';
      const encoding = query.Encoding ?? 'utf-8';
      const body = await openExport(ctx, async (session) => {
        const rows = await openRequestLogCursor(session.db, account.id, filter, ctx.cursor);
        return csv
          ? csvText<RequestLogRow>(rows, requestLogCsvHeader(separator), requestLogCsvLine(separator, zone, dateTimeFormat))
          : jsonArrayText<RequestLogRow>(rows, (row) => JSON.stringify(renderRequestLogRow(row, zone, dateTimeFormat)));
      });
      if (csv) {
        setCsvHeaders(ctx.res, encoding, `Requests-${formatCompactLocal(filter.from, zone)}-${formatCompactLocal(filter.to, zone)}.csv`);
      } else {
        ctx.res.status(200).type('application/json; charset=utf-8');
      }
      return sendExportBody(ctx, body, csv ? csvEncoding(encoding) : []);
    },
  });

  return [myAccount, limits, counts, requests];
}
