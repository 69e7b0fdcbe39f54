import http from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * A Server-Sent Events client for tests of GET /api/events: one request over a real socket,
 * parsed with eventsource-parser as it arrives. It keeps every event and comment, says how the
 * response ended (cleanly, or cut), and waits for conditions with a deadline.
 */
export interface ReceivedEvent {
  id: number;
  event: string;
  data: { type: string; timestamp: string; data: Record<string, unknown> };
}

export interface OpenedStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body of an answer that is not a stream (a problem document). */
  body(): string;
  events: ReceivedEvent[];
  comments: string[];
  /** The `retry` field the server suggested, when it sent one. */
  retry: number | undefined;
  /** Settles when the response is over: 'ended' when the server ended it properly, 'cut' otherwise. */
  ended: Promise<'ended' | 'cut'>;
  /** Resolves once `check` holds for what has arrived; rejects after `timeoutMs`. */
  until(check: (s: OpenedStream) => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Stops reading (the socket stays open): the server meets backpressure. */
  pause(): void;
  /** Reads on after `pause`. */
  resume(): void;
  close(): void;
}

export function openEventStream(baseUrl: string, path: string, headers: Record<string, string>): Promise<OpenedStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${baseUrl}${path}`, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      const raw: Buffer[] = [];
      const waiters = new Set<() => void>();
      const notify = () => {
        for (const w of [...waiters]) w();
      };
      let complete = false;
      const stream: OpenedStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: () => Buffer.concat(raw).toString('utf8'),
        events: [],
        comments: [],
        retry: undefined,
        ended: new Promise((done) => {
          res.once('end', () => (complete = true));
          res.once('close', () => {
            done(complete && !res.aborted ? 'ended' : 'cut');
            notify();
          });
          res.once('error', () => undefined);
        }),
        until(check, what, timeoutMs = 20_000) {
          return new Promise<void>((ok, fail) => {
            const test = () => {
              if (!check(stream)) return;
              clearTimeout(timer);
              waiters.delete(test);
              ok();
            };
            const timer = setTimeout(() => {
              waiters.delete(test);
              fail(
                new Error(`timed out waiting for ${what}; got ${stream.events.length} events: ${stream.events.map((e) => e.id).join(',')}`),
              );
            }, timeoutMs);
            waiters.add(test);
            test();
          });
        },
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
      };
      const parser = createParser({
        onEvent(message: EventSourceMessage) {
          stream.events.push({
            id: Number(message.id),
            event: message.event ?? 'message',
            data: JSON.parse(message.data) as ReceivedEvent['data'],
          });
          notify();
        },
        onComment(comment: string) {
          stream.comments.push(comment);
          notify();
        },
        onRetry(ms: number) {
          stream.retry = ms;
        },
      });
      const text = new StringDecoder('utf8');
      res.on('data', (chunk: Buffer) => {
        raw.push(chunk);
        if (stream.status === 200) parser.feed(text.write(chunk));
      });
      resolve(stream);
    });
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.message !== 'socket hang up') reject(err);
    });
  });
}
