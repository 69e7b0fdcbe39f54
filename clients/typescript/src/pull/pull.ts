import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { promises as fs } from 'node:fs';
import { JSONParser } from '@streamparser/json-node';
import { createLcmClient, FAIR_USE_POLICY } from '../client';
import document from '../generated/openapi.json';
import { type OutputFormat, PartialOutput, type Row, rowFormat } from './output';
import { type PeriodLeft, periodsLeft, retryAfterSeconds, secondsUntilQuota } from './quota';
import { type JobKey, type PullState, readState, sameJob, writeState } from './state';
import { type Window, halve, isoInstant, parseDuration, parseInstant, planWindows, timeSpan } from './windows';

export type PullKind = 'calls' | 'leads';

export interface PullOptions {
  kind: PullKind;
  /** `https://host` or `https://host/api`. */
  baseUrl: string;
  username: string;
  password: string;
  /** calls: org code of a user or an org unit (OrgCode). */
  org?: string;
  /** leads: project patterns (Projects), default `*`. */
  projects?: string[];
  /** Start (inclusive): StartTime of the first calls window, ModifiedFrom of the first leads window. */
  from: string;
  /** End (exclusive); default now. */
  to?: string;
  /** Window length, ISO 8601 duration; default PT2H for calls, P1D for leads. */
  window?: string;
  /** calls: Limit per request; a window that returns this many rows is split in halves. Default 5000. */
  limit?: number;
  format?: OutputFormat;
  /** The finished file; written as `out.part` and renamed when complete. */
  out: string;
  /** Default `out.state.json`. */
  stateFile?: string;
  /** Longest wait for request quota (429 Retry-After, or a period used up) before giving up. Default 900 s. */
  maxWaitSeconds?: number;
  /** Zone of --from/--to without an offset: the platform's. Default Europe/Copenhagen. */
  timeZone?: string;
  /** Attempts per window when the server fails (5xx, connection lost) before giving up. Default 5. */
  maxAttempts?: number;
}

export interface PullProgress {
  windowsDone: number;
  windowsTotal: number;
  rows: number;
  splits: number;
  requests: number;
  /** Set while waiting for quota or after a server error. */
  waitingSeconds?: number;
  /** What the last response said is left of the request quota. */
  quota?: PeriodLeft[];
  resumed: boolean;
}

export interface PullDeps {
  fetch?: (input: Request) => Promise<Response>;
  /** How to wait; tests pass one that moves a clock instead. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  onProgress?: (progress: PullProgress) => void;
}

export interface PullSummary {
  out: string;
  rows: number;
  windows: number;
  splits: number;
  requests: number;
  waitedSeconds: number;
  resumed: boolean;
}

/** Exit codes of lcm-pull, also on PullError. */
export const EXIT = { failed: 1, usage: 2, auth: 3, notFound: 4, quota: 5, server: 6 } as const;

/** Why a pull cannot finish, in one line, with the exit code for it. */
export class PullError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'PullError';
  }
}

const DEFAULTS = { limit: 5000, maxWaitSeconds: 900, timeZone: 'Europe/Copenhagen', maxAttempts: 5 };

type Schema = { $ref?: string; items?: Schema; properties?: Record<string, unknown> };

/** The CSV columns of an export: the properties of its item schema in the OpenAPI document, in order. */
export function exportColumns(path: '/calls' | '/simpleleads'): string[] {
  const doc = document as unknown as {
    paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: Schema }> }> } }>;
    components: { schemas: Record<string, Schema> };
  };
  const items = doc.paths[path].get.responses['200'].content['application/json'].schema.items;
  const schema = items?.$ref ? doc.components.schemas[items.$ref.slice(items.$ref.lastIndexOf('/') + 1)] : items;
  return Object.keys(schema?.properties ?? {});
}

function usage(message: string): PullError {
  return new PullError(message, EXIT.usage);
}

function parsed<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw usage(`${what}: ${(err as Error).message}`);
  }
}

/** A problem+json answer (or whatever came) as one line. */
function problemLine(status: number, error: unknown): string {
  const p = (error ?? {}) as { title?: string; detail?: string };
  const text = [p.title, p.detail].filter(Boolean).join(': ');
  return `${status}${text ? ` ${text}` : typeof error === 'string' && error ? ` ${error.slice(0, 200)}` : ''}`;
}

/**
 * Pulls a time range of calls (windows over StartTime/TimeSpan) or leads (windows over
 * ModifiedFrom/ModifiedTo) into one NDJSON or CSV file, streaming each window to disk:
 *  - opts in to fair use and keeps to the quota: waits out a period the last response showed
 *    used up (RateLimit, else X-Rate-Limit-Remaining/Reset), and a 429's Retry-After;
 *  - asks for compression (fetch decodes whatever comes);
 *  - splits a calls window that returned `Limit` rows in halves until every window is complete;
 *  - writes each uniqueId once;
 *  - checkpoints after every window, so a rerun after a crash resumes and produces the same file.
 */
export async function pull(options: PullOptions, deps: PullDeps = {}): Promise<PullSummary> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = deps.now ?? Date.now;
  const format: OutputFormat = options.format ?? 'ndjson';
  if (format !== 'ndjson' && format !== 'csv') throw usage(`--format must be ndjson or csv, not ${String(format)}`);
  const timeZone = options.timeZone ?? DEFAULTS.timeZone;
  const maxWait = options.maxWaitSeconds ?? DEFAULTS.maxWaitSeconds;
  const maxAttempts = options.maxAttempts ?? DEFAULTS.maxAttempts;
  const isCalls = options.kind === 'calls';
  if (isCalls && !options.org) throw usage('calls need --org');
  const limit = isCalls ? (options.limit ?? DEFAULTS.limit) : undefined;
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) throw usage('--limit must be a positive integer');
  const windowMs = parsed('--window', () => parseDuration(options.window ?? (isCalls ? 'PT2H' : 'P1D')));
  const from = parsed('--from', () => parseInstant(options.from, timeZone));
  const to = options.to === undefined ? now() : parsed('--to', () => parseInstant(options.to!, timeZone));

  const query: Record<string, string | string[]> = isCalls ? { OrgCode: options.org! } : { Projects: options.projects ?? ['*'] };
  const job: JobKey = {
    kind: options.kind,
    baseUrl: options.baseUrl,
    username: options.username,
    query,
    from: options.from,
    to: options.to ?? null,
    timeZone,
    windowMs,
    ...(limit !== undefined ? { limit } : {}),
    format,
    out: options.out,
  };
  const stateFile = options.stateFile ?? `${options.out}.state.json`;
  const output = new PartialOutput(`${options.out}.part`, `${options.out}.part.ids`);
  const rows = rowFormat(format, exportColumns(isCalls ? '/calls' : '/simpleleads'));
  const api = createLcmClient({ baseUrl: options.baseUrl, username: options.username, password: options.password, fetch: deps.fetch });

  let state: PullState;
  const previous = await readState(stateFile);
  const resumed = previous !== undefined;
  if (previous) {
    if (!sameJob(previous.job, job)) {
      throw usage(`${stateFile} belongs to another pull (other arguments); delete it and ${output.path} to start over`);
    }
    try {
      await output.rollBack(previous.outputBytes, previous.idsBytes);
    } catch (err) {
      throw new PullError(`cannot resume from ${stateFile}: ${(err as Error).message}`, EXIT.failed);
    }
    state = previous;
  } else {
    if (!(from < to)) throw usage('--from must be before --to');
    await output.create(await rows.head());
    state = {
      version: 1,
      job,
      pending: planWindows(from, to, windowMs),
      ...(await output.sizes()),
      rows: 0,
      windowsDone: 0,
      splits: 0,
      requests: 0,
    };
    await writeState(stateFile, state);
  }

  let waitedSeconds = 0;
  let quota: PeriodLeft[] | undefined;
  const report = (waitingSeconds?: number) =>
    deps.onProgress?.({
      windowsDone: state.windowsDone,
      windowsTotal: state.windowsDone + state.pending.length,
      rows: state.rows,
      splits: state.splits,
      requests: state.requests,
      waitingSeconds,
      quota,
      resumed,
    });
  const pause = async (seconds: number) => {
    report(seconds);
    waitedSeconds += seconds;
    await sleep(seconds * 1000);
  };
  const waitForQuota = async (seconds: number, why: string) => {
    if (seconds > maxWait) {
      throw new PullError(
        `request quota used up (${why}): the next request is allowed in ${seconds} s, more than --max-wait ${maxWait} s; rerun later to resume`,
        EXIT.quota,
      );
    }
    await pause(seconds);
  };

  const send = (w: Window) =>
    isCalls
      ? api.GET('/calls', {
          params: {
            query: { OrgCode: options.org!, StartTime: isoInstant(w.start), TimeSpan: timeSpan(w.end - w.start), Limit: limit },
            header: { 'X-Rate-Limit-Fair-Use-Policy': FAIR_USE_POLICY, Prefer: 'datetime=offset' },
          },
          parseAs: 'stream',
        })
      : api.GET('/simpleleads', {
          params: {
            query: { Projects: options.projects ?? ['*'], ModifiedFrom: isoInstant(w.start), ModifiedTo: isoInstant(w.end) },
            header: { 'X-Rate-Limit-Fair-Use-Policy': FAIR_USE_POLICY, Prefer: 'datetime=offset' },
          },
          parseAs: 'stream',
        });

  /** Streams one window's rows to the file; returns how many rows the API sent and how many were new. */
  const writeWindow = async (body: ReadableStream<Uint8Array>): Promise<{ received: number; written: number }> => {
    let received = 0;
    let written = 0;
    const ids = output.idLog();
    const select = new Transform({
      objectMode: true,
      transform({ value }: { value: Row }, _enc, done) {
        received++;
        const id = value?.uniqueId;
        if (typeof id !== 'string') return done(new Error('the API sent a row without uniqueId'));
        if (output.seen.has(id)) return done();
        output.seen.add(id);
        ids.add(id);
        written++;
        done(null, value);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(body as unknown as NodeReadableStream<Uint8Array>),
        new JSONParser({ paths: ['$.*'], keepStack: false }),
        select,
        rows.stage(),
        output.appendStream(),
      );
    } finally {
      await ids.close();
    }
    return { received, written };
  };

  /** Fetches and writes one window, waiting for quota and retrying server failures. */
  const fetchWindow = async (w: Window, waitBefore: number): Promise<{ received: number; written: number; waitNext: number }> => {
    let failures = 0;
    const fail = async (reason: string, retryAfter?: number) => {
      failures++;
      if (failures >= maxAttempts)
        throw new PullError(`${reason} (${failures} attempts for the window from ${isoInstant(w.start)})`, EXIT.server);
      await pause(retryAfter ?? Math.min(2 ** (failures - 1), 30));
    };
    for (;;) {
      if (waitBefore > 0)
        await waitForQuota(
          waitBefore,
          quota
            ?.filter((p) => p.remaining < 1)
            .map((p) => p.name)
            .join(', ') || 'period',
        );
      waitBefore = 0;
      let answer: Awaited<ReturnType<typeof send>>;
      try {
        answer = await send(w);
      } catch (err) {
        await fail(`cannot reach the API: ${(err as Error).message}`);
        continue;
      }
      state.requests++;
      const { response } = answer;
      quota = periodsLeft(response.headers) ?? quota;
      if (response.status === 429) {
        waitBefore = Math.max(1, retryAfterSeconds(response.headers, now()) ?? secondsUntilQuota(quota) ?? 60);
        continue;
      }
      if (response.status >= 500) {
        await fail(`the API failed: ${problemLine(response.status, answer.error)}`, retryAfterSeconds(response.headers, now()));
        continue;
      }
      if (!response.ok || !answer.data) {
        const line = problemLine(response.status, answer.error);
        if (response.status === 401) throw new PullError(`${line} (check LCM_USERNAME and LCM_PASSWORD)`, EXIT.auth);
        if (response.status === 403) throw new PullError(line, EXIT.auth);
        if (response.status === 404) throw new PullError(line, EXIT.notFound);
        throw new PullError(line, EXIT.failed);
      }
      try {
        const counted = await writeWindow(answer.data);
        return { ...counted, waitNext: secondsUntilQuota(quota) };
      } catch (err) {
        // The body broke off (or was not the JSON array it should be): forget what it wrote.
        await output.rollBack(state.outputBytes, state.idsBytes);
        await fail(`the response for a window broke off: ${(err as Error).message}`);
      }
    }
  };

  report();
  let waitBefore = 0;
  while (state.pending.length > 0) {
    const w = state.pending[0];
    const { received, written, waitNext } = await fetchWindow(w, waitBefore);
    waitBefore = waitNext;
    if (limit !== undefined && received >= limit) {
      const halves = halve(w);
      if (!halves) throw new PullError(`${limit} calls start within one millisecond at ${isoInstant(w.start)}; raise --limit`, EXIT.failed);
      state.pending.splice(0, 1, ...halves);
      state.splits++;
    } else {
      state.pending.shift();
      state.windowsDone++;
    }
    state.rows += written;
    await output.sync();
    Object.assign(state, await output.sizes());
    await writeState(stateFile, state);
    report();
  }
  await output.finish(options.out);
  await fs.rm(stateFile, { force: true });
  return {
    out: options.out,
    rows: state.rows,
    windows: state.windowsDone,
    splits: state.splits,
    requests: state.requests,
    waitedSeconds,
    resumed,
  };
}
