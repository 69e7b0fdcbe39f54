import {
  HttpProblem,
  invalidBody,
  invalidParameter,
  missingParameter,
  notFound,
  ProblemCode,
  problemCodes,
  problemStatus,
  problemTitle,
  problemTypeUri,
  rateLimited,
} from './problem';

/**
 * What each problem `type` link (`/api/problems/{code}`) tells a client: what the code means,
 * when this API answers it, what to do about it, and an example body. The examples are built
 * with the same constructors the API throws, so their shape cannot drift from real answers.
 * The record is keyed by ProblemCode, so a new code does not compile without its page.
 */
export interface ProblemType {
  code: ProblemCode;
  type: string;
  title: string;
  status: number;
  meaning: string;
  whenAnswered: string[];
  whatToDo: string;
  example: Record<string, unknown>;
}

interface Entry {
  meaning: string;
  whenAnswered: string[];
  whatToDo: string;
  example: () => { problem: HttpProblem; instance: string };
}

const ENTRIES: Record<ProblemCode, Entry> = {
  invalid_parameter: {
    meaning: 'A query or path parameter has a value the endpoint cannot use.',
    whenAnswered: [
      'A DateTime that is not ISO 8601, or a TimeSpan that is not an ISO 8601 duration (durations are case-sensitive: `pt2h` is refused, `PT2H` is right).',
      'A `Limit` that is not a positive integer, an enumeration name that does not exist, an `Encoding` iconv-lite does not know, or a `CsvFieldSeparator` that is not one allowed character.',
      'An `OrgCode` on `/calls` that is neither a user nor an org unit, or a `ToDate` that is not after `FromDate`.',
      'A value holding a NUL character, or a path segment that is not valid percent-encoded UTF-8.',
      'A DateTime outside 1900-01-01 to 9999-12-31 in platform time.',
      'The method CONNECT (status 405, `errors[].parameter` is `method`): the server is an API, not a proxy.',
      'A method the path does not take, such as DELETE on `/calls` (status 405, `errors[].parameter` is `method`; the `Allow` header lists the methods it takes).',
      'A POST whose method-override headers (`X-HTTP-Method-Override`, `X-HTTP-Method`, `X-Method-Override`) name different methods; `errors[].parameter` names each header.',
    ],
    whatToDo:
      'Correct the parameter named in `errors[].parameter` as its `message` says, then send the request again; the same request will fail the same way. On a counted endpoint the refused request still counts.',
    example: () => ({
      problem: invalidParameter('TimeSpan', 'expected an ISO 8601 duration such as PT2H or P1DT12H (upper case), or d.hh:mm:ss'),
      instance: '/api/calls?OrgCode=Sales&StartTime=2026-05-06&TimeSpan=pt2h',
    }),
  },
  missing_parameter: {
    meaning: 'A parameter the endpoint requires was not sent.',
    whenAnswered: [
      'A required query parameter is absent or empty, for example `StartTime` on `/calls`, or `searchName` on `/leads`. Parameter names are case-insensitive, so `starttime` counts as `StartTime`.',
    ],
    whatToDo: 'Add the parameter named in `errors[].parameter`; the OpenAPI document (`/api/docs`) lists every required parameter.',
    example: () => ({ problem: missingParameter('StartTime'), instance: '/api/calls?OrgCode=Sales&TimeSpan=PT2H' }),
  },
  invalid_body: {
    meaning: 'The request body cannot be used: it is not JSON, or a property is missing or invalid.',
    whenAnswered: [
      'The body is not valid JSON, or not a JSON object where one is expected. Every body is read as JSON whatever its Content-Type; one that is not JSON is this problem when it came as JSON or without a type, and a 415 when it came as another type (a form).',
      'Bytes that are not valid UTF-8 in a UTF-8 body, or one property sent under two names with different values.',
      'A required property is missing or has the wrong type, for example a lead import without `CampaignCode`, or `data` values that are not strings; the property is named in `errors[].field`.',
      'A reference in the body does not exist, for example an unknown campaign or calendar code.',
    ],
    whatToDo:
      'Correct the body as `errors` says and send it again. A lead whose data fails its lead definition is not this problem: that answers 200 with `success: false`.',
    example: () => ({
      problem: invalidBody('CampaignCode: is required', [{ field: 'CampaignCode', message: 'is required' }]),
      instance: '/api/leads',
    }),
  },
  unauthorized: {
    meaning: 'The request carries no valid credentials.',
    whenAnswered: [
      'No `Authorization` header, a header that is not HTTP Basic, an unknown username, a wrong password, or a disabled account. The answer does not say which, on purpose.',
      'Every endpoint needs credentials except the index (`/api`), health, readiness, the documentation and the OpenAPI document, these problem pages, and the metrics unless the operator sets `METRICS_REQUIRE_AUTH`.',
    ],
    whatToDo:
      'Send `Authorization: Basic base64(username:password)` of an enabled web service account on every request. The answer carries `WWW-Authenticate: Basic realm="lead-call-api", charset="UTF-8"`. A 401 is never counted against request limits.',
    example: () => ({
      problem: new HttpProblem('unauthorized', 'valid HTTP Basic credentials are required'),
      instance: '/api/calls',
    }),
  },
  forbidden: {
    meaning: 'The account is known but may not do this.',
    whenAnswered: [
      'The account lacks the resource right the endpoint needs, for example Get on Calls for `/calls` (the rights of an account are shown by `/api/myaccount`).',
      'A write into a campaign or calendar whose project matches none of the account’s project patterns. (Reads never answer 403 for projects: data outside them is simply invisible.)',
      'A request for what the account may not read although it may use the endpoint, for example `GET /events` naming events of a resource it has no Get right on.',
      'A plain-HTTP request to a server that requires HTTPS.',
    ],
    whatToDo:
      'Do not retry unchanged. Ask the administrator of the account for the right or the project, or use HTTPS. A 403 for a right the endpoint needs spends no request quota; one the endpoint decides from what was asked counts as an answered request, as a 400 does.',
    example: () => ({ problem: new HttpProblem('forbidden', 'this account lacks the Get right on Calls'), instance: '/api/calls' }),
  },
  not_found: {
    meaning: 'Nothing answers at this address, or the addressed resource is not visible to the account.',
    whenAnswered: [
      'No endpoint has this path and method.',
      'The resource named in the path does not exist, for example `/users/{OrgCode}` with an unknown org code, or a lead or calendar event by an unknown unique id.',
      'The resource exists but lies outside the account’s projects: to the account it does not exist.',
      'A problem page for a code this API does not have.',
    ],
    whatToDo:
      'Check the path (org codes with spaces, `/` or non-ASCII letters must be percent-encoded) and the identifier. If the resource should be visible, ask for the project right.',
    example: () => ({ problem: notFound('no user with org code Sales-42'), instance: '/api/users/Sales-42' }),
  },
  not_acceptable: {
    meaning: 'The endpoint cannot answer any of the media types the `Accept` header allows.',
    whenAnswered: [
      'Small services answer `application/json` and `text/html`; exports answer `application/json` or their CSV (`text/csv`) and never HTML, so `Accept: text/html` there is refused. A CSV export (`/calls/csv`, `/rawleads`, `/leads/csv`) answers its CSV to an Accept that allows JSON too.',
    ],
    whatToDo: 'Send no `Accept` header (JSON is the default), `*/*`, or one of the media types the endpoint lists in the OpenAPI document.',
    example: () => ({
      problem: new HttpProblem('not_acceptable', 'this service answers application/json'),
      instance: '/api/calls?OrgCode=Sales&StartTime=2026-05-06&TimeSpan=PT2H',
    }),
  },
  rate_limited: {
    meaning: 'A request limit of this service is used up for the account.',
    whenAnswered: [
      'The daily limit of the service is reached: a period of 24 hours starts at the first request to that service, and each request adds its weight (high-limit services weigh more during production hours).',
      'Under the fair use policy (`X-Rate-Limit-Fair-Use-Policy: Minute rated`), the minute limit is reached as well.',
    ],
    whatToDo:
      'Wait the number of seconds in `Retry-After` before calling this service again; the refused request was not counted. `/api/myaccount/request/limits` and `/api/myaccount/request/counts` show the limits and what is spent; make fewer, larger requests (calls over longer windows) rather than many small ones.',
    example: () => ({
      problem: rateLimited('calls', { exceeded: 'daily', retryAfterSeconds: 3600, resetSeconds: 3600 }),
      instance: '/api/calls?OrgCode=Sales&StartTime=2026-05-06&TimeSpan=PT2H',
    }),
  },
  conflict: {
    meaning: 'The resource is in a state that does not allow this change, or the Idempotency-Key belongs to another request.',
    whenAnswered: [
      'A `PATCH /leads/{UniqueId}` of a lead that was anonymized: an Anonymized lead does not change any more.',
      'An `Idempotency-Key` that was already used with a different request (`errors[].parameter` is `Idempotency-Key`); in a bulk import, also a key another request with it is storing rows under at the same time, as the element that ends the answer.',
    ],
    whatToDo:
      'For an anonymized lead, do not retry: the state will not change. For a key used with another request, send the new request with a new Idempotency-Key; for a key in use by a request still running, retry once that request has ended.',
    example: () => ({
      problem: new HttpProblem('conflict', 'the lead is Anonymized and cannot be changed'),
      instance: '/api/leads/3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
    }),
  },
  precondition_failed: {
    meaning: 'The resource changed since the client read it: the `If-Match` header names another version.',
    whenAnswered: [
      'A `PATCH /leads/{UniqueId}` or `POST /leads/{UniqueId}/anonymize` whose `If-Match` holds none of the lead’s current ETag (lost-update protection).',
    ],
    whatToDo:
      'Read the resource again (`GET` answers its current `ETag`), apply the change to what it is now, and send it with the new ETag.',
    example: () => ({
      problem: new HttpProblem('precondition_failed', 'the lead changed since it was read: If-Match does not name its current ETag'),
      instance: '/api/leads/3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
    }),
  },
  payload_too_large: {
    meaning: 'The request body is over the server’s size limit.',
    whenAnswered: [
      'A JSON body larger than the `BODY_LIMIT` setting of the server (1 MB unless the operator changed it).',
      'A lead data value larger than the `LEAD_VALUE_MAX_BYTES` setting (64 KiB unless the operator changed it) in `POST /leads` or `PATCH /leads/{UniqueId}`; `errors[].field` names it.',
      'A `POST /leads/bulk` body over `BULK_BODY_LIMIT`: a plain 413, or the last element of the answer once rows were answered.',
    ],
    whatToDo: 'Send less in one request, for example one lead per import request.',
    example: () => ({ problem: new HttpProblem('payload_too_large', 'the request body is over the size limit'), instance: '/api/leads' }),
  },
  unsupported_media_type: {
    meaning: 'The request body is encoded in a way the server cannot read.',
    whenAnswered: [
      'A `Content-Encoding` or a charset in `Content-Type` the server does not support.',
      'A JSON-body endpoint got a body that is not JSON under a type that is not JSON (a form, XML, multipart); the detail names the types it reads. JSON itself is read under any type, or none.',
      'A bulk import whose `Content-Type` is none of its formats.',
    ],
    whatToDo: 'Send the body as plain (uncompressed) UTF-8 JSON.',
    example: () => ({
      problem: new HttpProblem('unsupported_media_type', 'the request body encoding is not supported'),
      instance: '/api/leads',
    }),
  },
  service_unavailable: {
    meaning: 'The request cannot be served now: something the API depends on is not reachable, or the server is shedding load.',
    whenAnswered: [
      'The database cannot be reached (refused, restarting, failing over). `/api/readyz` reports the same condition with status 503 and its own body (`{"status":"unavailable",…}`) rather than this problem.',
      'Load shedding, with `Retry-After`: the process runs as many exports as it may (`EXPORT_MAX_CONCURRENT`), no database connection came free in time, the queue of password checks is full, or the server is stopping (an event stream then reconnects elsewhere).',
    ],
    whatToDo: 'Retry later with back-off (for example 1, 2, 4, 8 seconds, with jitter).',
    example: () => ({ problem: new HttpProblem('service_unavailable', 'the database is not reachable'), instance: '/api/calls' }),
  },
  internal_error: {
    meaning: 'The server failed in a way the request did not cause.',
    whenAnswered: [
      'An unexpected failure while answering, for example the database failing mid-request. The answer never shows details or a stack trace; the server logs the failure with the request id.',
      'When a streamed answer has already started, an error cannot become a problem document: the connection is cut instead, so the body is visibly incomplete (a JSON array without its closing `]`).',
    ],
    whatToDo:
      'Retry later with back-off. If it persists, report the `X-Request-Id` response header to the operator; it finds the logged failure.',
    example: () => ({ problem: new HttpProblem('internal_error', 'an internal error occurred'), instance: '/api/calls' }),
  },
};

export function problemType(code: ProblemCode): ProblemType {
  const entry = ENTRIES[code];
  const { problem, instance } = entry.example();
  return {
    code,
    type: problemTypeUri(code),
    title: problemTitle(code),
    status: problemStatus(code),
    meaning: entry.meaning,
    whenAnswered: entry.whenAnswered,
    whatToDo: entry.whatToDo,
    example: problem.toJSON(instance),
  };
}

export const problemTypes = (): ProblemType[] => problemCodes.map(problemType);
