import { Readable } from 'node:stream';
import type { Response } from 'express';
import type { Logger } from '../config/logger';
import type { SelectableEvent } from '../domain/liveEvents';
import type { EventFeed, EventReader } from './eventFeed';
import { EventStream } from './eventStream';
import type { ReleaseSlot } from '../data/streamSlots';
import type { EventPage, EventReaderFormat, FeedEvent, ListedEvent } from './liveEventReads';
import { sendExport, ExportSendOptions } from './exportResponse';
import { HttpProblem } from './problem';

/**
 * The two answers of GET /events (docs/decisions.md, "Live events"), once the request is
 * parsed: the Server-Sent Events stream and the JSON list. Both read their first page before the
 * status is chosen, so a database that cannot be reached is still a 503 problem.
 */
export interface EventRequest {
  res: Response;
  feed: EventFeed;
  accountId: number;
  /** Where the client is: the first event sent comes after this position. */
  after: number;
  /** Whether the client gets an event of the live batches, which the feed reads for all its streams. */
  selects: (event: SelectableEvent) => boolean;
  reader: EventReaderFormat;
  /** The database reads, with the request's filter in their SQL. */
  reads: EventReader;
  logger: Logger;
}

/** Seconds a client refused a stream waits before trying again. */
const STREAM_RETRY_AFTER_SECONDS = 5;
/** The reconnection delay the stream suggests to clients: a stream ended on shutdown is taken up elsewhere at once. */
const RECONNECT_MS = 1000;

/**
 * One of the account's EVENTS_MAX_STREAMS slots for a stream about to open, taken before the
 * request is counted: a stream refused because the account has all its streams open (429) or
 * because this server is stopping (503) spends no quota.
 */
export async function takeStreamSlot(feed: EventFeed, accountId: number): Promise<ReleaseSlot> {
  if (feed.closing) {
    throw new HttpProblem('service_unavailable', 'this server is stopping; reconnect', undefined, { 'Retry-After': '1' });
  }
  let release;
  try {
    release = await feed.slots.take(accountId);
  } catch (err) {
    const problem = new HttpProblem('service_unavailable', 'open event streams cannot be counted now; retry shortly', undefined, {
      'Retry-After': '2',
    });
    problem.cause = err;
    throw problem;
  }
  if (release === undefined) {
    throw new HttpProblem(
      'rate_limited',
      `this account has ${feed.slots.maxPerAccount} event streams open, the most allowed (EVENTS_MAX_STREAMS); retry in ${STREAM_RETRY_AFTER_SECONDS} s`,
      undefined,
      { 'Retry-After': String(STREAM_RETRY_AFTER_SECONDS) },
    );
  }
  return release;
}

/** The stream, on the slot takeStreamSlot took for it (given back when the stream ends). */
export async function sendEventStream(
  request: EventRequest,
  release: ReleaseSlot,
  options: { stallTimeoutMs: number | undefined },
): Promise<void> {
  const { feed } = request;
  let first: EventPage;
  try {
    first = await request.reads.page(request.after);
  } catch (err) {
    await release();
    throw err;
  }
  // The listening session was renewed during the read: the slot went with the old one, and the
  // feed has ended its streams already.
  if (!feed.slots.holds(release)) {
    throw new HttpProblem('service_unavailable', 'the server renewed its database session while the stream opened; reconnect', undefined, {
      'Retry-After': '1',
    });
  }
  const stream = new EventStream({
    res: request.res,
    hub: feed,
    accountId: request.accountId,
    position: request.after,
    selects: request.selects,
    reader: request.reader,
    read: request.reads.page,
    release,
    stallTimeoutMs: options.stallTimeoutMs,
    retryMs: RECONNECT_MS,
    logger: request.logger,
  });
  feed.add(stream);
  stream.start(first);
}

/**
 * Up to `limit` events after `after` as a JSON array, streamed a page at a time. Which events,
 * and so where the client's next list starts, is read first: `Last-Event-ID` says it before the
 * body (the last id listed, or the newest position when fewer than `Limit` events came).
 */
export async function sendEventList(request: EventRequest, limit: number, send: Omit<ExportSendOptions, 'logger'>): Promise<void> {
  const socket = request.res.req.socket;
  const { found, next } = await request.reads.list(request.after, limit, () => socket.destroyed);
  const pageSize = request.feed.batchSize;
  const first = await request.reads.events(found.slice(0, pageSize));
  async function* listed(): AsyncGenerator<string> {
    let opened = false;
    for (let at = 0; at < found.length; at += pageSize) {
      const events: FeedEvent[] = at === 0 ? first : await request.reads.events(found.slice(at, at + pageSize));
      const chunk: string[] = [];
      for (const event of events) {
        const item: ListedEvent | null = event.listed(request.reader);
        if (item !== null) chunk.push(JSON.stringify(item));
      }
      if (chunk.length > 0) {
        yield (opened ? ',' : '[') + chunk.join(',');
        opened = true;
      }
    }
    yield opened ? ']' : '[]';
  }
  request.res.status(200).type('application/json; charset=utf-8').set('Last-Event-ID', String(next));
  await sendExport(request.res, Readable.from(listed(), { objectMode: false }), { ...send, logger: request.logger });
}
