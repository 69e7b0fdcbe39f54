import express, { Request, Response, Router } from 'express';
import etag from 'etag';
import type { Admitted, Endpoint, EndpointContext, EndpointResult, ResponseCursorOptions } from './endpoint';
import type { ExportOptions } from './exportStream';
import { compressBody, compressOneShotFrom, negotiateCoding } from './compression';
import { ifNoneMatchMatches } from './conditionalRequest';
import { poolConnections } from '../data/exportSession';
import { answersConditionally, toExpressPath } from './endpoint';
import type { AppServices } from './services';
import { negotiate, Representation } from './negotiate';
import { parseBody, parseParams, parseQuery } from './requestParsing';
import { jsonBodyReader } from './jsonBody';
import { runMiddleware } from './runMiddleware';
import { DATABASE_RETRY_AFTER_SECONDS, HttpProblem, rateLimited } from './problem';
import { renderHtmlPage } from './html';
import { countRequest, showRateHeaders } from '../ratelimit/countRequests';
import { AccountContext, hasRight } from '../domain/account';
import { entityTag } from '../domain/entityTag';
import { permittedIncludeNames } from '../domain/organizationGraph';
import { projectScope, ProjectScope } from '../data/projectScope';
import { cursorOptions } from './streamResponse';
import { answerDateTimeFormat } from './preferDateTime';
import type { Metrics } from './metrics';
import type { RequestTimer } from './metrics/requestMetrics';
import type { ExportAdmission } from './exportAdmission';
import { isAcquireTimeout } from '../data/db';
import { isConnectionFailure } from '../data/readSource';
import { logAccountRequest } from './accountRequestLog';
import { clientAddress } from './clientAddress';
import { whenResponseDone } from './responseDone';

export interface MountOptions {
  authenticate: express.RequestHandler;
  metrics: Pick<Metrics, 'requests' | 'overload'>;
  /** Admission control of the bulk endpoints (their exports). */
  admission: ExportAdmission;
}

/** No database connection was free within the acquire timeout: a 503 the client may retry, not a 500. */
function connectionUnavailable(): HttpProblem {
  return new HttpProblem('service_unavailable', 'no database connection was free in time; retry shortly', undefined, {
    'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS),
  });
}

/**
 * The database could not be reached or went away (refused, restarting, shutting down): like a
 * connection not had in time, a 503 the client may retry, not a 500 as if the request were at
 * fault. Postgres restarted under a running server answers every request this way until it is back.
 */
function databaseUnreachable(cause: unknown): HttpProblem {
  const problem = new HttpProblem('service_unavailable', 'the database cannot be reached; retry shortly', undefined, {
    'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS),
  });
  // Logged with the 503 (the error handler logs every 5xx that has a cause): the operator sees why.
  problem.cause = cause;
  return problem;
}

/**
 * Writes a handler's result. A JSON body of a resource with a version (`entityVersion`: a lead,
 * whose version If-Match on PATCH compares) carries a strong `ETag` of that version and the
 * body; any other 200 of a conditional endpoint (answersConditionally) a weak one from the
 * rendered body (the `etag` library, as Express makes it). A matching `If-None-Match` (weak
 * comparison, `*`, a list: RFC 9110, whatever the request's Cache-Control says;
 * src/http/conditionalRequest.ts) is a 304 with no body; the rate-limit and Vary headers set so
 * far stay on it. This is the only place ETags are made (Express's own is switched off in
 * app.ts), so errors and streams never get one.
 */
async function send(
  req: Request,
  res: Response,
  representation: Representation,
  endpoint: Endpoint,
  result: EndpointResult,
  compressFrom: number | undefined,
): Promise<void> {
  if (result === undefined) return; // the handler streamed its own response
  if (result.status === 204 || !('body' in result)) {
    res.status(204).end();
    return;
  }
  const status = result.status ?? 200;
  res.status(status);
  // What res.vary does, without parsing a Vary header that is not there yet.
  if (res.getHeader('Vary') === undefined) res.setHeader('Vary', 'Accept');
  else res.vary('Accept');
  if (compressFrom !== undefined) res.vary('Accept-Encoding');
  const html = representation === 'html';
  const payload = html ? renderHtmlPage(result.title ?? endpoint.summary, result.body) : JSON.stringify(result.body);
  // A strong tag names one representation: a lead's HTML page gets a weak one of its own.
  if (!html && 'entityVersion' in result && result.entityVersion !== undefined) res.set('ETag', entityTag(result.entityVersion, payload));
  if (status === 200 && answersConditionally(endpoint)) {
    if (!res.get('ETag')) res.set('ETag', etag(payload, { weak: true }));
    if (ifNoneMatchMatches(req.get('If-None-Match'), res.get('ETag'))) {
      res.status(304).end();
      return;
    }
  }
  await sendText(req, res, html ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8', payload, compressFrom);
}

/**
 * Ends the response with `payload` and the headers Express's res.send gives a string (this
 * Content-Type, already with its charset, and Content-Length; no body for HEAD), without the
 * parse and re-format of the Content-Type it makes on every call. A request the answer is
 * fresh for (a GET with `If-None-Match: *`, say) and a 205 take res.send itself, which turns
 * them into its bodiless answers. With `compressFrom` (COMPRESSION on), a body of at least
 * that many bytes goes in the coding the client asked for, its length the compressed one; the
 * Accept-Encoding header is read only for such a body.
 */
async function sendText(
  req: Request,
  res: Response,
  contentType: string,
  payload: string,
  compressFrom: number | undefined,
): Promise<void> {
  res.setHeader('Content-Type', contentType);
  if (res.statusCode === 205 || req.fresh) {
    res.send(payload);
    return;
  }
  const length = Buffer.byteLength(payload);
  // Compressed when the client asks and the body is not tiny (docs/decisions.md, Wire conventions).
  const coding = compressFrom !== undefined && length >= compressFrom ? negotiateCoding(req) : undefined;
  if (coding === undefined) {
    res.setHeader('Content-Length', length);
    if (req.method === 'HEAD') res.end();
    else res.end(payload);
    return;
  }
  const body = await compressBody(Buffer.from(payload), coding);
  res.setHeader('Content-Encoding', coding);
  res.setHeader('Content-Length', body.length);
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

/** A public endpoint has no account: its scope sees nothing. */
const NO_PROJECTS: ProjectScope = projectScope([]);
const NO_RIGHTS: Pick<AccountContext, 'rights'> = { rights: {} };

type Input = Record<string, unknown>;
type Context = EndpointContext<Input, Input, Input>;
type Parsed = Pick<Context, 'req' | 'res' | 'query' | 'params' | 'body' | 'representation' | 'dateTimeFormat' | 'countRows' | 'admitted'>;

/**
 * A handler's context, computed once here so handlers do not repeat it: the project scope,
 * the platform zone, the DateTime format (chosen by the caller), the `Include` names the
 * account may follow (made on first read), and the cursor options bound to the response (made
 * on first read, as they listen for the client leaving).
 *
 * A class, so that the lazy members are getters of one prototype. Getters written in an
 * object literal are new functions per request, and V8 then gives each such object a hidden
 * class of its own in the old generation, which keeps the request's whole object graph alive
 * past the young generation's collections (docs/benchmarks.md, "Small requests").
 */
class RequestContext implements Context {
  readonly req: Request;
  readonly res: Response;
  readonly query: Input;
  readonly params: Input;
  readonly body: Input;
  readonly representation: Representation;
  readonly dateTimeFormat: Context['dateTimeFormat'];
  readonly countRows: Context['countRows'];
  readonly admitted: Context['admitted'];
  readonly account: AccountContext;
  readonly scope: ProjectScope;
  readonly zone: string;
  readonly db: Context['db'];
  readonly clock: Context['clock'];
  readonly logger: Context['logger'];
  readonly #services: AppServices;
  #cursor: ResponseCursorOptions | undefined;
  #exports: ExportOptions | undefined;
  /** A public endpoint has no account, and so no rights. */
  readonly #rights: Pick<AccountContext, 'rights'>;
  #include: ReadonlySet<string> | undefined;

  constructor(parsed: Parsed, account: AccountContext | undefined, services: AppServices) {
    this.req = parsed.req;
    this.res = parsed.res;
    this.query = parsed.query;
    this.params = parsed.params;
    this.body = parsed.body;
    this.representation = parsed.representation;
    this.dateTimeFormat = parsed.dateTimeFormat;
    this.countRows = parsed.countRows;
    this.admitted = parsed.admitted;
    this.account = account!;
    this.scope = account === undefined ? NO_PROJECTS : projectScope(account.projectPatterns);
    this.#rights = account ?? NO_RIGHTS;
    this.#services = services;
    this.zone = services.settings.PLATFORM_TIMEZONE;
    this.db = services.db;
    this.clock = services.clock;
    this.logger = services.logger;
  }

  get cursor(): ResponseCursorOptions {
    return (this.#cursor ??= cursorOptions(this.res, this.#services.settings.CURSOR_BATCH_SIZE));
  }

  get include(): ReadonlySet<string> {
    return (this.#include ??= permittedIncludeNames(this.query.Include, this.#rights));
  }

  get exports(): ExportOptions {
    const { settings } = this.#services;
    return (this.#exports ??= {
      source: this.#services.exportConnections ?? poolConnections(this.#services.exportDb),
      transcoder: settings.EXPORT_TRANSCODER,
      compression: settings.COMPRESSION ? { coding: negotiateCoding(this.req), minBytes: settings.COMPRESSION_MIN_BYTES } : undefined,
      stallTimeoutMs: settings.EXPORT_STALL_TIMEOUT_MS || undefined,
    });
  }

  /** A field, not a method: handlers take it out of the context (`{ sendText }`). */
  readonly sendText = async (contentType: string, text: string): Promise<undefined> => {
    const compressFrom = compressOneShotFrom(this.#services.settings);
    if (compressFrom !== undefined) this.res.vary('Accept-Encoding');
    await sendText(this.req, this.res, contentType, text, compressFrom);
    return undefined;
  };
}

/**
 * Mounts each endpoint with the same chain: authenticate → check the right → admit (bulk
 * endpoints: a slot for the export, else 429/503) → count the request → negotiate → validate →
 * handler. The order makes a 401 cost nothing, a 403 or a refused export spend no quota, and a
 * 406 or 400 still count as a request the service answered; so does a 304 (counted before the
 * handler like the 200 it stands for, with the same rate-limit headers). A database connection not had in
 * time (DB_ACQUIRE_TIMEOUT_MS, EXPORT_ACQUIRE_TIMEOUT_MS), or a database that cannot be reached, is a 503
 * with Retry-After.
 */
export function mountEndpoints(endpoints: Endpoint[], services: AppServices, options: MountOptions): Router {
  const router = Router();
  const readJsonBody = jsonBodyReader(services.settings.BODY_LIMIT);
  for (const endpoint of endpoints) {
    router[endpoint.method](toExpressPath(endpoint.path), async (req: Request, res: Response) => {
      res.locals.service = endpoint.service;
      const timer = options.metrics.requests.start(endpoint.service);
      whenResponseDone(res, () => timer.end(res.statusCode, !res.writableFinished));
      try {
        await handle(endpoint, req, res, timer);
      } catch (err) {
        if (isConnectionFailure(err)) throw databaseUnreachable(err);
        if (!isAcquireTimeout(err)) throw err;
        options.metrics.overload.countRefused('connection');
        throw connectionUnavailable();
      }
    });
  }
  return router;

  /** The chain of one endpoint, from authentication to the handler's answer. */
  async function handle(endpoint: Endpoint, req: Request, res: Response, timer: RequestTimer): Promise<void> {
    let admitted: Admitted | undefined;
    if (endpoint.access.kind !== 'public') {
      // Read before the credentials are checked: a client that leaves meanwhile takes its socket's address with it.
      const address = services.requestLog ? clientAddress(req) : undefined;
      await runMiddleware(options.authenticate, req, res);
      const account = req.account!;
      if (services.requestLog)
        logAccountRequest(req, res, { accountId: account.id, service: endpoint.service, address }, services.requestLog);
      if (endpoint.access.kind === 'right' && !hasRight(account, endpoint.access.resource, endpoint.access.verb)) {
        if (endpoint.counted !== false) await showRateHeaders(endpoint, account, req, res, services);
        throw new HttpProblem('forbidden', `this account lacks the ${endpoint.access.verb} right on ${endpoint.access.resource}`);
      }
      if (endpoint.bulk) {
        // Refused before counting: an export turned away for concurrency spends no quota, but
        // its 429/503 carries the rate-limit headers like any authenticated answer.
        let release: () => void;
        try {
          release = options.admission.admit(account.id);
        } catch (err) {
          if (endpoint.counted !== false) await showRateHeaders(endpoint, account, req, res, services);
          throw err;
        }
        whenResponseDone(res, release);
      }
      if (endpoint.admit) {
        try {
          admitted = await endpoint.admit(req, account);
        } catch (err) {
          if (endpoint.counted !== false) await showRateHeaders(endpoint, account, req, res, services);
          throw err;
        }
        const held = admitted;
        if (held) whenResponseDone(res, () => void held());
      }
      if (endpoint.counted !== false) {
        const counted = await countRequest(endpoint, account, req, res, services);
        (res.locals as { weight?: number }).weight = counted.weight;
        if (!counted.allowed) throw rateLimited(endpoint.service, counted);
      }
    }
    // Handlers that stream write their own answer; send() sets Vary on the others. Set before
    // negotiating, and with one representation too: Accept then decides between it and a 406.
    if ((endpoint.bulk || endpoint.streamed) && !endpoint.ownMediaType) res.vary('Accept');
    const representation = endpoint.ownMediaType ? endpoint.representations[0] : negotiate(req, endpoint.representations);
    const params = endpoint.params ? parseParams(endpoint.params, req.params as Record<string, unknown>) : {};
    const query = endpoint.query ? parseQuery(endpoint.query, req.query as Record<string, unknown>) : {};
    // The body is read only now, so a request without credentials is a 401 whatever its body,
    // and a bad body is a counted 400 with the rate-limit headers. Every JSON body is read
    // whatever its Content-Type says; one that is not JSON under another type is the reader's 415.
    if (endpoint.body) await readJsonBody(req, res, endpoint.bodyMediaTypes ?? ['application/json']);
    const rawBody: unknown = endpoint.bodyOptional && req.body === undefined ? {} : req.body;
    const body = endpoint.body ? parseBody(endpoint.body, rawBody, endpoint.bodyAliases, services.settings.BODY_MAX_DEPTH) : {};
    // Chosen last: a request refused before its handler runs carries no Preference-Applied.
    const dateTimeFormat = endpoint.dateTimes && req.account ? answerDateTimeFormat(req, res, req.account.dateTimeFormat) : 'Offset';
    const context = new RequestContext(
      { req, res, query, params, body, representation, dateTimeFormat, countRows: timer.countRows, admitted },
      req.account,
      services,
    );
    const result = await endpoint.handler(context);
    await send(req, res, representation, endpoint, result, compressOneShotFrom(services.settings));
  }
}
