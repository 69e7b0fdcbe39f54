import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Logger } from '../config/logger';
import type { ProjectScope } from '../data/projectScope';
import type { AccountContext } from '../domain/account';
import type { DateTimeFormatName, ResourceType, Verb } from '../domain/enums';
import type { Representation } from './negotiate';
import type { ExportOptions } from './exportStream';

/**
 * One declarative description per endpoint: the route, the right it needs, the service name
 * it is counted under, its schemas and its representations. The app mounts endpoints from
 * these descriptions and the OpenAPI document is generated from the same ones, so the docs
 * cannot drift from behaviour.
 */
export type Access = { kind: 'public' } | { kind: 'authenticated' } | { kind: 'right'; resource: ResourceType; verb: Verb };

export const publicAccess: Access = { kind: 'public' };
export const anyAccount: Access = { kind: 'authenticated' };
export const right = (resource: ResourceType, verb: Verb): Access => ({ kind: 'right', resource, verb });

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** Options for a cursor streamed into one response: the configured batch size and the client's abort. */
export interface ResponseCursorOptions {
  batchSize: number;
  signal: AbortSignal;
}

/**
 * What a handler is handed, computed once per request by mountEndpoints: the parsed request,
 * the account and what follows from it (project scope, DateTime format), and the few
 * resources an endpoint uses. Endpoints that need more (request counters, Redis health) are
 * given it when they are built (src/http/routes.ts), not through every request.
 */
export interface EndpointContext<Q, P, B> {
  req: Request;
  res: Response;
  query: Q;
  params: P;
  body: B;
  /** Present on every endpoint whose access is not public. */
  account: AccountContext;
  representation: Representation;
  /** The account's project rights as a query scope (sees nothing on public endpoints). */
  scope: ProjectScope;
  /**
   * The `Include` names this account may follow, lower case (permittedIncludeNames in
   * src/domain/organizationGraph.ts): the only way handlers read `Include`, so the rights
   * that narrow it apply to every endpoint. Empty without the parameter.
   */
  readonly include: ReadonlySet<string>;
  /** The platform time zone: wall times, local dates, `yyyyMMddHHmmss` file names. */
  zone: string;
  /**
   * How this answer writes DateTimes: the request's `Prefer: datetime=`, else the account's
   * format (docs/decisions.md, Wire). `Offset` on endpoints that write none.
   */
  dateTimeFormat: DateTimeFormatName;
  /** Options for a cursor streamed into this response; made on first read (it listens on the response). */
  readonly cursor: ResponseCursorOptions;
  /** How a bulk export of this request runs: its connection source, the transcoder, compression. */
  readonly exports: ExportOptions;
  /**
   * Writes a text rendered in one piece as the answer (a page, the metrics), with its length,
   * compressed when the client asks (docs/decisions.md, Wire conventions); the handler then returns undefined.
   */
  sendText: (contentType: string, text: string) => Promise<undefined>;
  /** Adds rows this request's streamed body wrote to its service's exported rows (lcm_export_rows_total). */
  countRows: (rows: number) => void;
  /** What the endpoint's `admit` holds for this request (undefined without one). */
  admitted: Admitted | undefined;
  /** The primary: writes, reads right after a write, small lookups. Exports use `exports.source`. */
  db: Knex;
  /** Injected so tests can move through production hours, periods and midnights. */
  clock: () => Date;
  logger: Logger;
}

/** Something held for a request by its endpoint's `admit`: giving it back is harmless when done twice. */
export type Admitted = () => Promise<void>;

/** What a handler returns: a value (rendered as JSON or HTML), nothing (it streamed), or an empty status. */
export type EndpointResult =
  | {
      status?: number;
      body: unknown;
      title?: string;
      /** The version of the resource the body shows: its JSON gets a strong ETag of it and the body (src/domain/entityTag.ts). */
      entityVersion?: string;
    }
  | { status: 204 }
  | undefined;

/** A body schema: an object, or (for endpoints taking one item or many) a union of an object and an array of it. */
type AnyBody = z.ZodType;

/** Media type → schema (zod or JSON Schema) and named examples of a streamed request body. */
interface StreamedBody {
  description: string;
  content: Record<string, { schema: unknown; examples?: Record<string, { summary: string; value: unknown }> }>;
}

export interface Endpoint<QS extends AnyObject = AnyObject, PS extends AnyObject = AnyObject, BS extends AnyBody = AnyObject> {
  /** Stable service name for request counting, e.g. `calls.csv`. */
  service: string;
  /**
   * The OpenAPI operationId: lowerCamelCase verb + noun (`listCalls`, `exportCallsCsv`), what
   * code generators name the client method; unique and stable once published.
   */
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path under /api, e.g. `/calls/{UniqueId}/recordings`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  /** Representations offered, default first; large-data services offer only json or csv. */
  representations: readonly [Representation, ...Representation[]];
  /** The handler writes its own media type (metrics text, the docs page): no Accept check. */
  ownMediaType?: boolean;
  /** With ownMediaType and no response schema: the media type the document names (default text/plain). */
  writesMediaType?: string;
  /** Large-data services with a higher default daily limit (docs/decisions.md, Request counting). */
  bulk?: boolean;
  /**
   * The handler streams its body itself though the endpoint is not `bulk` (a list that can grow
   * large): like the bulk exports it carries no ETag and ignores If-None-Match.
   */
  streamed?: boolean;
  /** Counted against the account's request limits (false for health, metrics, docs). */
  counted?: boolean;
  /**
   * The answer differs on every request (the request counts that include itself, a sample made
   * afresh): it carries no ETag, since no If-None-Match could ever match it.
   */
  changesEveryTime?: boolean;
  /**
   * Runs after authentication and the rights check but before the request is counted, as the
   * export cap does: it may refuse (a 429 or 503 that spends no quota) or hold something for the
   * request (an event stream's slot). What it holds is given back when the response is done; the
   * handler finds it as `admitted`.
   */
  admit?: (req: Request, account: AccountContext) => Promise<Admitted | undefined>;
  query?: QS;
  params?: PS;
  body?: BS;
  /**
   * The request media types the OpenAPI document names for the body (default application/json).
   * A body is read as JSON whatever its Content-Type says, as on every JSON-body endpoint; one
   * that is not JSON and came as another type is a 415 naming these (src/http/jsonBody.ts).
   */
  bodyMediaTypes?: string[];
  /**
   * A body the handler reads itself, as a stream (the mount chain does not parse it): its
   * media types with schemas and examples, for the OpenAPI document.
   */
  streamedBody?: StreamedBody;
  /** The body may be left out; a request without one is read as `{}` (a DELETE whose body only repeats the path). */
  bodyOptional?: boolean;
  /** Alternative body property names (beyond case), e.g. `Pool` for `LeadPool`. */
  bodyAliases?: Record<string, string>;
  /** Response body schema for the document; `csv` documents a text/csv stream. */
  response?: z.ZodType;
  /** Success status when not 200. */
  successStatus?: 200 | 201 | 202 | 204;
  /** Extra non-success statuses this endpoint can answer (beyond the common ones). */
  errorStatuses?: number[];
  /** Extra request headers to document. */
  headers?: { name: string; description: string }[];
  /** Extra headers of the success answer to document (all strings). */
  responseHeaders?: { name: string; description: string }[];
  /**
   * The answer writes DateTimes: they follow the account's DateTime format, a request may
   * override it with `Prefer: datetime=local|offset` (documented on the operation).
   */
  dateTimes?: boolean;
  handler(ctx: EndpointContext<z.output<QS>, z.output<PS>, z.output<BS>>): Promise<EndpointResult>;
}

/** The request header of every endpoint that writes DateTimes, as the OpenAPI document shows it. */
const PREFER_DATETIME_HEADER = {
  name: 'Prefer',
  description:
    'RFC 7240. `datetime=local` writes DateTimes as platform wall time with seven fraction digits and no offset ' +
    '(`2026-05-06T10:16:41.0000000`); `datetime=offset` writes them with milliseconds and the offset ' +
    "(`2026-05-06T10:16:41.000+02:00`). Without it the account's DateTime format applies. An honoured preference is " +
    'echoed in the `Preference-Applied` response header; answers carry `Vary: Prefer`.',
};

/** Keeps handler parameter types inferred from the schemas; an endpoint that writes DateTimes documents `Prefer`. */
export function defineEndpoint<QS extends AnyObject, PS extends AnyObject, BS extends AnyBody>(endpoint: Endpoint<QS, PS, BS>): Endpoint {
  const described = endpoint.dateTimes ? { ...endpoint, headers: [...(endpoint.headers ?? []), PREFER_DATETIME_HEADER] } : endpoint;
  return described as unknown as Endpoint;
}

/**
 * Whether the endpoint's answers are conditional (docs/decisions.md, Wire conventions): a GET
 * whose body the mount chain renders in one piece carries an `ETag`, and `If-None-Match`
 * naming it is a 304. Streamed answers (bulk exports, `streamed`) and the pages that write
 * their own media type are not: an export would have to be produced in full to know its tag.
 */
export function answersConditionally(endpoint: Endpoint): boolean {
  return endpoint.method === 'get' && !endpoint.bulk && !endpoint.streamed && !endpoint.ownMediaType && !endpoint.changesEveryTime;
}

/** `/calls/{UniqueId}` → `/calls/:UniqueId` */
export function toExpressPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

/** Every service a request to these endpoints can be counted and logged under, sorted. */
export function serviceNamesOf(endpoints: readonly Endpoint[]): string[] {
  return [...new Set(endpoints.map((e) => e.service))].sort();
}
