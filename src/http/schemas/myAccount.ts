import { z } from 'zod';
import { DateTimeFormat, EntryAccess, RESOURCE_TYPES, VERBS } from '../../domain/enums';
import { dateTimeOut, dateTimeParam, listParam, positiveIntParam, timeSpanParam } from './common';
import { csvExportQuery, encodingParam, separatorParam } from './calls';

/** Response bodies of the /myaccount services (docs/decisions.md, Request counting); they document the OpenAPI output. */

export const myAccountBody = z
  .object({
    username: z.string(),
    userOrgCode: z.string().meta({ description: 'Org code of the platform user linked to the account.' }),
    orgCode: z.string().meta({ description: 'The same value as userOrgCode, under the name existing clients read.' }),
    dateTimeFormat: z.enum(DateTimeFormat.names as [string, ...string[]]).meta({
      description:
        'How answers write DateTimes unless a request sends `Prefer: datetime=…`: `Offset` (`2026-05-06T10:16:41.000+02:00`) or `Local` (platform wall time, `2026-05-06T10:16:41.0000000`).',
    }),
    projectRights: z.array(z.string()).meta({
      description: 'Project name patterns (`*` any run of characters, `?` one character; anchored, case-insensitive).',
    }),
    resourceRights: z.partialRecord(z.enum(RESOURCE_TYPES), z.array(z.enum(VERBS))).meta({
      description: 'Verbs granted per resource type; resource types without a verb are absent.',
      example: { Calls: ['Get'], Leads: ['Get', 'Post'] },
    }),
    leadDefinitionEntryAccess: z.enum(EntryAccess.names as [string, ...string[]]),
    logRequestData: z.boolean().meta({
      description: "Whether this server writes the account's requests to its request log (GET /myaccount/requests).",
    }),
  })
  .meta({ id: 'MyAccount' });

export const requestLimitBody = z
  .object({
    service: z.string(),
    dailyLimit: z.number().int().meta({ description: 'Counter units allowed per 24-hour period.' }),
    highLimit: z.boolean().meta({ description: 'More than 10000 a day: a request adds 8 in production hours.' }),
    minuteLimit: z.number().int().meta({ description: 'The fair use minute limit: max(ceil(dailyLimit / 1440), 240).' }),
  })
  .meta({ id: 'RequestLimit' });

export const requestCountBody = z
  .object({
    service: z.string(),
    count: z.number().int().meta({ description: 'Counter units spent in the current 24-hour period.' }),
    periodStart: dateTimeOut.meta({ description: 'When the current period started (its first request).' }),
    resetSeconds: z.number().int().meta({ description: 'Seconds left in the current period.' }),
    minuteCount: z.number().int().meta({ description: 'Spent in the current fair use minute window; 0 when none is open.' }),
  })
  .meta({ id: 'RequestCount' });

export const requestLogQuery = csvExportQuery(
  z.object({
    FromTime: dateTimeParam.meta({ description: 'Start of the window (inclusive), matched against the time each request arrived.' }),
    TimeSpan: timeSpanParam.meta({ description: 'Length of the window; requests that arrived before FromTime + TimeSpan.' }),
    Status: z.array(positiveIntParam(999)).optional().meta({ description: 'Only requests answered with one of these HTTP status codes.' }),
    Service: listParam.optional().meta({ description: 'Only requests of these services (case-insensitive), e.g. `leads.import`.' }),
    Encoding: encodingParam.optional().meta({ description: 'CSV only: character encoding of the file (default utf-8).' }),
    CsvFieldSeparator: separatorParam.optional().meta({ description: 'CSV only: field separator, one character (default `;`).' }),
  }),
);

export const requestLogEntryBody = z
  .object({
    time: dateTimeOut.meta({ description: 'When the request arrived.' }),
    requestId: z.string().meta({ description: 'The request id (X-Request-Id of the answer).' }),
    method: z.string(),
    path: z.string().meta({
      description:
        'Path and query as sent; values of credential-like query parameters, and any part holding the request’s own password or Basic token, replaced by `[redacted]`.',
    }),
    service: z.string().meta({ description: 'The service the request was counted under.' }),
    status: z.number().int().meta({ description: 'HTTP status of the answer; 499 when the client left before its answer began.' }),
    weight: z.number().int().meta({ description: 'Counter units the request spent (0 when refused or not counted).' }),
    durationMs: z.number().meta({ description: 'From arrival to the end of the answer, in milliseconds.' }),
    bytesSent: z.number().int().meta({ description: 'Bytes of the answer on the connection (headers and body, after compression).' }),
    clientAddress: z.string().nullable().meta({ description: "The client's address (behind a trusted proxy, the one it forwarded)." }),
  })
  .meta({ id: 'RequestLogEntry' });
