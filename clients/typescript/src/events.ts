import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { apiBaseUrl, basicAuthorization, type LcmClientOptions } from './client';
import type { components } from './generated/openapi';

/**
 * The live events of `GET /api/events` as an async iterator: one Server-Sent Events request,
 * parsed as it arrives, that reconnects by itself and resumes with `Last-Event-ID`, so the loop
 * sees every event once, in order, across lost connections and server restarts:
 *
 *   for await (const event of liveEvents({ baseUrl, username, password, query: { Campaigns: ['B2B-SALES-Q4'] } })) {
 *     console.log(event.id, event.type, event.data.uniqueId);
 *   }
 *
 * It waits `Retry-After` on a 429 (the account's streams are all open) or a 503 (a server
 * stopping), the server's `retry` delay after a stream ended, and a growing pause after a failed
 * connection; a line silent for longer than `idleTimeoutMs` (the server sends a heartbeat every
 * 15 s) is taken for dead and opened again. A 400, 401, 403, 404 or 406 ends the iteration with an
 * `EventStreamError`: trying again would not help. Breaking out of the loop, or `signal`, closes
 * the connection.
 */
export type LiveEvent = components['schemas']['LiveEvent'];

export interface LiveEventOptions extends LcmClientOptions {
  /** `Events`, `Campaigns`, `Projects` of GET /events. */
  query?: { Events?: string[]; Campaigns?: string[]; Projects?: string[] };
  /** Resume after this event id (what the last run saw); default: the events from now on. */
  lastEventId?: number;
  signal?: AbortSignal;
  /** Reconnect when nothing (no event, no heartbeat) arrived for this long; default 60 s. */
  idleTimeoutMs?: number;
  /** Told about each reconnection and why; the iteration goes on. */
  onReconnect?: (reason: string, delayMs: number) => void;
  /** Waits between attempts; injected by tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** A refusal that another attempt would meet again (bad request, credentials, rights). */
export class EventStreamError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`GET /events answered ${status}: ${detail}`);
  }
}

const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
const DEFAULT_RETRY_MS = 1000;
const PERMANENT = new Set([400, 401, 403, 404, 406]);

function eventsUrl(options: LiveEventOptions): string {
  const params = new URLSearchParams();
  for (const [name, values] of Object.entries(options.query ?? {})) {
    if (values && values.length > 0) params.set(name, values.join(','));
  }
  const search = params.toString();
  return `${apiBaseUrl(options.baseUrl)}/events${search ? `?${search}` : ''}`;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function* liveEvents(options: LiveEventOptions): AsyncGenerator<LiveEvent, void, undefined> {
  const fetcher = options.fetch ?? ((req: Request) => fetch(req));
  const sleep = options.sleep ?? defaultSleep;
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const url = eventsUrl(options);
  let lastId = options.lastEventId;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;

  while (!options.signal?.aborted) {
    const connection = new AbortController();
    const abort = () => connection.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    let idle: NodeJS.Timeout | undefined;
    const watchIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(abort, idleTimeoutMs);
    };
    let wait: { ms: number; reason: string };
    try {
      const headers: Record<string, string> = {
        Accept: 'text/event-stream',
        Authorization: basicAuthorization(options.username, options.password),
      };
      if (lastId !== undefined) headers['Last-Event-ID'] = String(lastId);
      if (options.fairUse) headers['X-Rate-Limit-Fair-Use-Policy'] = 'Minute rated';
      watchIdle();
      const response = await fetcher(new Request(url, { headers, signal: connection.signal }));
      if (response.status !== 200 || !response.body) {
        const detail = await response.text().catch(() => '');
        if (PERMANENT.has(response.status)) throw new EventStreamError(response.status, problemDetail(detail));
        const retryAfter = Number(response.headers.get('Retry-After'));
        wait = {
          ms: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : backoff(failures++),
          reason: `the server answered ${response.status}`,
        };
      } else {
        failures = 0;
        const pending: LiveEvent[] = [];
        const parser = createParser({
          onEvent(message: EventSourceMessage) {
            const event = { ...(JSON.parse(message.data) as Omit<LiveEvent, 'id'>), id: Number(message.id) } as LiveEvent;
            pending.push(event);
          },
          onRetry(ms: number) {
            retryMs = ms;
          },
        });
        const text = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          watchIdle();
          parser.feed(text.decode(chunk, { stream: true }));
          while (pending.length > 0) {
            const event = pending.shift()!;
            // Positions only grow: an event at or before the last one seen is not sent again.
            if (lastId !== undefined && event.id <= lastId) continue;
            lastId = event.id;
            yield event;
          }
        }
        wait = { ms: retryMs, reason: 'the stream ended' };
      }
    } catch (err) {
      if (err instanceof EventStreamError) throw err;
      if (options.signal?.aborted) return;
      wait = {
        ms: backoff(failures++),
        reason: connection.signal.aborted ? 'the stream was silent too long' : `${(err as Error).message}`,
      };
    } finally {
      clearTimeout(idle);
      options.signal?.removeEventListener('abort', abort);
      connection.abort();
    }
    if (options.signal?.aborted) return;
    options.onReconnect?.(wait.reason, wait.ms);
    await sleep(wait.ms, options.signal);
  }
}

function backoff(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** failures);
}

function problemDetail(body: string): string {
  try {
    const problem = JSON.parse(body) as { detail?: string };
    return problem.detail ?? body;
  } catch {
    return body;
  }
}
