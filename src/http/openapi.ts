import { z } from 'zod';
import { addCodeSamples } from './codeSamples';
import {
  createDocument,
  oas31,
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
  ZodOpenApiResponsesObject,
} from 'zod-openapi';

type ZodOpenApiRequestBodyContent =
  NonNullable<ZodOpenApiOperationObject['requestBody']> extends infer B ? (B extends { content: infer C } ? C : never) : never;
import type { Endpoint } from './endpoint';
import { answersConditionally } from './endpoint';
import { mediaType } from './negotiate';
import { isListSchema } from './requestParsing';
import { problemCodes } from './problem';
import { version } from '../../package.json';

/**
 * The OpenAPI 3.1 document, generated from the endpoint descriptions of src/http/routes.ts —
 * the same zod schemas the requests are validated with (their input side: parameters as they
 * travel) and the response schemas the handlers are documented with. Nothing here names an
 * individual endpoint, so a new endpoint is documented by being listed.
 */
export type OpenApiDocument = oas31.OpenAPIObject;

const problemSchema = z
  .object({
    type: z.string().meta({
      description:
        'Relative URI of the problem type, `/api/problems/{code}`; it answers a page saying what the problem means and what to do (JSON, or HTML for browsers).',
      example: '/api/problems/invalid_parameter',
    }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(problemCodes as [string, ...string[]]).meta({ description: 'Machine-readable error code.' }),
    instance: z.string().optional().meta({ description: 'The request path.' }),
    errors: z
      .array(
        z.object({
          parameter: z.string().optional().meta({ description: 'Query or path parameter at fault.' }),
          field: z.string().optional().meta({ description: 'Body property at fault.' }),
          message: z.string(),
        }),
      )
      .optional()
      .meta({ description: 'One entry per invalid parameter or body property.' }),
  })
  .meta({ id: 'Problem', description: 'An error, as application/problem+json (RFC 9457).' });

const ref = (kind: 'schemas' | 'headers' | 'parameters', name: string): oas31.ReferenceObject => ({
  $ref: `#/components/${kind}/${name}`,
});

const RATE_LIMIT_HEADERS: Record<string, oas31.HeaderObject> = {
  'X-Rate-Limit-Limit': {
    description:
      'Requests (in counter units) allowed in the current period; under fair use the minute period, unless a limit was exceeded.',
    schema: { type: 'integer' },
  },
  'X-Rate-Limit-Remaining': {
    description: 'Counter units remaining in the current period.',
    schema: { type: 'integer' },
  },
  'X-Rate-Limit-Reset': {
    description: 'Seconds left in the current period.',
    schema: { type: 'integer' },
  },
  'RateLimit-Policy': {
    description:
      'The same periods in the syntax of the IETF httpapi RateLimit header fields draft (a Structured Field list): ' +
      '`"daily";q={daily limit};w=86400` for the 24-hour period that starts at the first request to the service, ' +
      'and under fair use also `"minute";q={minute limit};w=60`. Quotas are in counter units: a request spends its weight (1, or 8 / OFF_HOURS_WEIGHT on high-limit services).',
    schema: { type: 'string' },
    example: '"daily";q=20000;w=86400, "minute";q=240;w=60',
  },
  RateLimit: {
    description:
      'What is left of each period in `RateLimit-Policy`: `r` counter units remaining, `t` seconds until the period ends. ' +
      'Under fair use it names both periods, so the daily remainder is visible beside the minute one. ' +
      'A 429 names only the exhausted period; its `t` equals Retry-After.',
    schema: { type: 'string' },
    example: '"daily";r=19759;t=86340, "minute";r=239;t=60',
  },
};

const OTHER_HEADERS: Record<string, oas31.HeaderObject> = {
  'Retry-After': {
    description:
      'Seconds to wait before retrying: until the exceeded period ends (request limits), or a few seconds (busy: exports, connections).',
    schema: { type: 'integer' },
  },
  'WWW-Authenticate': {
    description: 'The Basic challenge: `Basic realm="lead-call-api", charset="UTF-8"`.',
    schema: { type: 'string' },
  },
  Location: { description: 'Path of the created resource.', schema: { type: 'string' } },
  ETag: {
    description:
      'A validator of this answer: weak (`W/"…"`, made from the body, so it differs per representation and DateTime format) ' +
      "unless the operation says it is strong (a lead's, from its version). Send it back in `If-None-Match` to get a 304 while nothing changed.",
    schema: { type: 'string' },
    example: 'W/"1b2-5kX0mZqT3b1cQy8g2b9wZk0sV0o"',
  },
};

const IF_NONE_MATCH_PARAMETER: oas31.ParameterObject = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description:
    'RFC 9110: one or more ETags this client holds (comma-separated, or `*`). When one matches the current answer (weak comparison), ' +
    'the answer is 304 Not Modified with no body. A 304 counts as a request like the 200 it stands for.',
  schema: { type: 'string' },
};

const FAIR_USE_PARAMETER: oas31.ParameterObject = {
  name: 'X-Rate-Limit-Fair-Use-Policy',
  in: 'header',
  required: false,
  description:
    'Opt in to the fair use policy: every request then adds 1 to the counter, and a per-minute limit of max(ceil(daily limit / 1440), 240) applies besides the daily limit.',
  schema: { type: 'string', enum: ['Minute rated'] },
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: queued, to be done shortly.',
  204: 'No Content',
  304: 'Not Modified: `If-None-Match` names the current ETag; no body.',
  400: 'The request is faulty: a parameter or body property is missing or invalid (named in `errors`).',
  401: 'Authentication failed or no credentials were sent.',
  403: 'The account lacks the right this endpoint needs, or the target lies outside its projects.',
  404: 'The resource does not exist or lies outside the account’s projects.',
  406: 'None of the media types in Accept is offered by this endpoint.',
  409: 'The request conflicts with an earlier one (for example an Idempotency-Key reused with a different body) or with the resource’s state.',
  412: 'The resource changed since it was read: `If-Match` names none of its current ETags.',
  413: 'The request body is over the size limit.',
  415: 'The request body is of a media type (Content-Type) or in an encoding this operation does not read.',
  429: 'A request limit (daily, or the fair use minute limit) is used up, or (exports) this account already runs its most exports at once; retry after Retry-After seconds.',
  500: 'Internal failure; no details are disclosed.',
  503: 'The server is busy (no database connection was free in time, or, for exports, it runs its most exports at once) or a service it depends on is unavailable; retry after Retry-After seconds when it is given.',
};

function isCounted(e: Endpoint): boolean {
  return e.access.kind !== 'public' && e.counted !== false;
}

function accessText(e: Endpoint): string {
  switch (e.access.kind) {
    case 'public':
      return 'No authentication.';
    case 'authenticated':
      return 'Any authenticated account.';
    case 'right':
      return `Requires the ${e.access.verb} right on ${e.access.resource}.`;
  }
}

function operationDescription(e: Endpoint): string {
  const parts = [e.description, accessText(e)];
  if (isCounted(e)) {
    parts.push(`Counted as service \`${e.service}\`${e.bulk ? ' (a large-data service with the bulk default daily limit)' : ''}.`);
  } else {
    parts.push('Not counted against request limits.');
  }
  if (e.query) parts.push('Query parameter names are case-insensitive; unknown parameters are ignored.');
  if (e.body) parts.push('Body property names are case-insensitive.');
  return parts.filter(Boolean).join('\n\n');
}

function successContent(e: Endpoint): ZodOpenApiResponseObject['content'] {
  const content: NonNullable<ZodOpenApiResponseObject['content']> = {};
  if (e.ownMediaType && !e.response && !e.representations.includes('html')) {
    // Metrics and the like write their own text format.
    content[e.writesMediaType ?? 'text/plain'] = { schema: { type: 'string' } };
    return content;
  }
  for (const r of e.representations) {
    if (r === 'json') content[mediaType('json')] = { schema: e.response ?? { type: 'object' } };
    if (r === 'html') {
      content[mediaType('html')] = {
        schema: { type: 'string', description: 'A readable, escaped HTML page of the same data.' },
      };
    }
    if (r === 'csv') {
      content[mediaType('csv')] = {
        schema: { type: 'string', description: 'A CSV stream with a header row; `charset` follows the Encoding parameter.' },
      };
    }
    if (r === 'events') {
      content[mediaType('events')] = {
        schema: {
          type: 'string',
          description:
            'Server-Sent Events that do not end: per event `id: <position>`, `event: <type>` and `data: <envelope as JSON>`, ' +
            'and a `: heartbeat` comment when nothing else was sent for a while.',
        },
      };
    }
  }
  return content;
}

function problemResponse(status: number, headers: Record<string, oas31.ReferenceObject>): ZodOpenApiResponseObject {
  return {
    description: STATUS_TEXT[status] ?? 'Error.',
    content: { 'application/problem+json': { schema: ref('schemas', 'Problem') } },
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
  };
}

function responses(e: Endpoint): ZodOpenApiResponsesObject {
  const counted = isCounted(e);
  const rateHeaders: Record<string, oas31.ReferenceObject> = counted
    ? Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((h) => [h, ref('headers', h)]))
    : {};
  const out: ZodOpenApiResponsesObject = {};
  const success = e.successStatus ?? 200;
  const conditional = answersConditionally(e);
  const successHeaders = {
    ...rateHeaders,
    ...(success === 201 ? { Location: ref('headers', 'Location') } : {}),
    ...(conditional ? { ETag: ref('headers', 'ETag') } : {}),
    ...Object.fromEntries(
      (e.responseHeaders ?? []).map((h) => [h.name, { description: h.description, schema: { type: 'string' as const } }]),
    ),
  };
  out[`${success}`] =
    success === 204
      ? { description: STATUS_TEXT[204]!, ...(counted ? { headers: rateHeaders } : {}) }
      : {
          description: STATUS_TEXT[success]!,
          content: successContent(e),
          ...(Object.keys(successHeaders).length > 0 ? { headers: successHeaders } : {}),
        };

  if (conditional) out['304'] = { description: STATUS_TEXT[304]!, headers: { ETag: ref('headers', 'ETag'), ...rateHeaders } };

  const statuses = new Set<number>([500]);
  if (e.query || e.params || e.body) statuses.add(400);
  if (e.access.kind !== 'public') statuses.add(401);
  if (e.access.kind === 'right') statuses.add(403);
  if (!e.ownMediaType) statuses.add(406);
  if (e.body || e.streamedBody) statuses.add(413);
  if (e.body || e.streamedBody) statuses.add(415);
  if (counted || e.bulk) statuses.add(429);
  // Anything that reads the database (authentication does) may find no connection free in time.
  if (e.access.kind !== 'public' || e.bulk) statuses.add(503);
  for (const s of e.errorStatuses ?? []) statuses.add(s);
  for (const status of [...statuses].sort((a, b) => a - b)) {
    // 401 and 403 are decided before counting, so they carry no rate-limit headers.
    let headers = status === 401 || status === 403 || status === 413 ? {} : rateHeaders;
    if (status === 401) headers = { 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') };
    if (status === 429) headers = { ...headers, 'Retry-After': ref('headers', 'Retry-After') };
    // Answered before counting (or by /readyz without one).
    if (status === 503) headers = { 'Retry-After': ref('headers', 'Retry-After') };
    out[`${status}` as `4${string}`] = problemResponse(status, headers);
  }
  return out;
}

function operation(e: Endpoint): ZodOpenApiOperationObject {
  const parameters: (oas31.ParameterObject | oas31.ReferenceObject)[] = [];
  if (isCounted(e)) parameters.push(ref('parameters', 'FairUsePolicy'));
  if (answersConditionally(e)) parameters.push(ref('parameters', 'IfNoneMatch'));
  for (const h of e.headers ?? []) {
    parameters.push({ name: h.name, in: 'header', required: false, description: h.description, schema: { type: 'string' } });
  }
  return {
    operationId: e.operationId,
    summary: e.summary,
    description: operationDescription(e),
    tags: e.tags,
    security: e.access.kind === 'public' ? [] : [{ basicAuth: [] }],
    'x-service': e.service,
    ...(e.query || e.params ? { requestParams: { ...(e.query ? { query: e.query } : {}), ...(e.params ? { path: e.params } : {}) } } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(e.body
      ? {
          requestBody: {
            required: !e.bodyOptional,
            content: Object.fromEntries((e.bodyMediaTypes ?? ['application/json']).map((type) => [type, { schema: e.body }])),
          },
        }
      : {}),
    ...(e.streamedBody
      ? {
          requestBody: {
            required: true,
            description: e.streamedBody.description,
            content: e.streamedBody.content as ZodOpenApiRequestBodyContent,
          },
        }
      : {}),
    responses: responses(e),
  };
}

/**
 * The description a parameter's schema carries, wherever it was set. zod-openapi lifts only the
 * outermost schema's description onto the parameter, so `limitParam.optional()` (described
 * inside the `optional`) would otherwise reach the document with none: look through the
 * wrappers (optional, default, nullable, the input side of a pipe) for the nearest one.
 */
function schemaDescription(schema: z.ZodType | undefined): string | undefined {
  let current = schema;
  while (current) {
    const description = z.globalRegistry.get(current)?.description ?? current.description;
    if (description) return description;
    const def = (current as unknown as { def: { type: string; innerType?: z.ZodType; in?: z.ZodType } }).def;
    if (['optional', 'default', 'nullable', 'prefault', 'readonly', 'catch'].includes(def.type)) current = def.innerType;
    else if (def.type === 'pipe') current = def.in;
    else return undefined;
  }
  return undefined;
}

/** Adds the wire rules to each generated parameter: case-insensitive query names, list syntax, path encoding. */
function describeParameters(doc: OpenApiDocument, endpoints: Endpoint[]): void {
  for (const e of endpoints) {
    const op = doc.paths?.[e.path]?.[e.method];
    if (!op?.parameters) continue;
    for (const p of op.parameters) {
      if ('$ref' in p) continue;
      if (p.in === 'path') {
        const own = p.description ?? schemaDescription(e.params?.shape[p.name] as z.ZodType | undefined);
        p.description = [own, 'Percent-encode it: values may hold spaces, `/` and non-ASCII letters.'].filter(Boolean).join(' ');
        continue;
      }
      if (p.in !== 'query') continue;
      const fieldSchema = e.query?.shape[p.name] as z.ZodType | undefined;
      const notes = ['The name is case-insensitive.'];
      if (fieldSchema && isListSchema(fieldSchema)) {
        p.style = 'form';
        p.explode = true;
        notes.push('Give several values comma-separated, as repeated parameters, or both.');
      }
      p.description = [p.description ?? schemaDescription(fieldSchema), ...notes].filter(Boolean).join(' ');
    }
  }
}

/** An identifier every code generator takes as a method name as it is. */
const OPERATION_ID = /^[a-z][A-Za-z0-9]*$/;

export function buildOpenApiDocument(endpoints: Endpoint[]): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = {};
  const usedIds = new Set<string>();
  for (const e of endpoints) {
    if (!OPERATION_ID.test(e.operationId)) {
      throw new Error(`operationId ${JSON.stringify(e.operationId)} of ${e.method} ${e.path} is not a lowerCamelCase identifier`);
    }
    if (usedIds.has(e.operationId)) throw new Error(`operationId ${e.operationId} is used twice`);
    usedIds.add(e.operationId);
    paths[e.path] = { ...paths[e.path], [e.method]: operation(e) };
  }
  const tags = [...new Set(endpoints.flatMap((e) => e.tags))].map((name) => ({ name }));

  const doc = createDocument({
    openapi: '3.1.0',
    info: {
      title: 'lead-call-api',
      version,
      description:
        'HTTP API of the dialing and lead-management platform. HTTP Basic authentication on every request; ' +
        'JSON by default, text/html for small services, CSV for exports. Errors are application/problem+json. ' +
        'Small reads carry an ETag and answer a matching If-None-Match with 304 Not Modified; streamed exports carry none. ' +
        'DateTime values are ISO 8601 (output in platform time with an explicit offset; input without an offset is platform local time). ' +
        'TimeSpan values are ISO 8601 durations (case-sensitive). Nothing paginates.',
    },
    servers: [{ url: '/api' }],
    security: [{ basicAuth: [] }],
    tags,
    paths,
    components: {
      schemas: { Problem: problemSchema },
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'HTTP Basic with the web service account’s username and password.' },
      },
      headers: { ...RATE_LIMIT_HEADERS, ...OTHER_HEADERS },
      parameters: { FairUsePolicy: FAIR_USE_PARAMETER, IfNoneMatch: IF_NONE_MATCH_PARAMETER },
    },
  });
  describeParameters(doc, endpoints);
  addCodeSamples(doc as unknown as Parameters<typeof addCodeSamples>[0]);
  return doc;
}
