/**
 * Errors as application/problem+json (RFC 9457) with a machine-readable `code`
 * (docs/decisions.md, Wire conventions). Routes throw HttpProblem; the error middleware renders
 * it. Each code's `type`, `/api/problems/{code}`, answers a page about it (src/http/problemTypes.ts).
 */
export type ProblemCode =
  | 'invalid_parameter'
  | 'missing_parameter'
  | 'invalid_body'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'not_acceptable'
  | 'conflict'
  | 'precondition_failed'
  | 'rate_limited'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'service_unavailable'
  | 'internal_error';

export interface ProblemFieldError {
  parameter?: string;
  field?: string;
  message: string;
}

const TITLES: Record<ProblemCode, [number, string]> = {
  invalid_parameter: [400, 'Invalid parameter'],
  missing_parameter: [400, 'Missing parameter'],
  invalid_body: [400, 'Invalid request body'],
  unauthorized: [401, 'Authentication required'],
  forbidden: [403, 'Forbidden'],
  not_found: [404, 'Not found'],
  not_acceptable: [406, 'Not acceptable'],
  conflict: [409, 'Conflict'],
  precondition_failed: [412, 'Precondition failed'],
  rate_limited: [429, 'Too many requests'],
  payload_too_large: [413, 'Payload too large'],
  unsupported_media_type: [415, 'Unsupported media type'],
  service_unavailable: [503, 'Service unavailable'],
  internal_error: [500, 'Internal server error'],
};

export class HttpProblem extends Error {
  readonly status: number;
  readonly title: string;

  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    readonly errors?: ProblemFieldError[],
    readonly headers: Record<string, string> = {},
    /** A status other than the code's own, e.g. 409 for a body that conflicts with an earlier one. */
    statusAndTitle?: [number, string],
  ) {
    super(detail);
    [this.status, this.title] = statusAndTitle ?? TITLES[code];
  }

  toJSON(instance?: string): Record<string, unknown> {
    return {
      type: problemTypeUri(this.code),
      title: this.title,
      status: this.status,
      detail: this.detail,
      code: this.code,
      ...(instance ? { instance } : {}),
      ...(this.errors && this.errors.length > 0 ? { errors: this.errors } : {}),
    };
  }
}

export const problemCodes = Object.keys(TITLES) as ProblemCode[];
export const problemStatus = (code: ProblemCode): number => TITLES[code][0];
export const problemTitle = (code: ProblemCode): string => TITLES[code][1];
export const problemTypeUri = (code: ProblemCode): string => `/api/problems/${code}`;
export const isProblemCode = (value: string): value is ProblemCode => Object.prototype.hasOwnProperty.call(TITLES, value);

export const invalidParameter = (parameter: string, message: string) =>
  new HttpProblem('invalid_parameter', `${parameter}: ${message}`, [{ parameter, message }]);
export const missingParameter = (parameter: string) =>
  new HttpProblem('missing_parameter', `${parameter} is required`, [{ parameter, message: 'is required' }]);
export const notFound = (detail: string) => new HttpProblem('not_found', detail);
export const forbidden = (detail: string) => new HttpProblem('forbidden', detail);
export const invalidBody = (detail: string, errors?: ProblemFieldError[]) => new HttpProblem('invalid_body', detail, errors);

/** A 429 for a request the counter refused, with Retry-After. */
export function rateLimited(
  service: string,
  refused: { exceeded?: string; retryAfterSeconds?: number; resetSeconds: number },
): HttpProblem {
  const retryAfter = String(refused.retryAfterSeconds ?? refused.resetSeconds);
  return new HttpProblem(
    'rate_limited',
    `the ${refused.exceeded ?? 'daily'} request limit of service ${service} is used up; retry in ${retryAfter} s`,
    undefined,
    { 'Retry-After': retryAfter },
  );
}

/** The Retry-After (seconds) of a 503 because the database could not be reached or had no connection free. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;
