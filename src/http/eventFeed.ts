import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { PgListener } from '../data/notifications';
import { LIVE_EVENTS_CHANNEL, LiveEventRow } from '../data/liveEvents';
import { followAccountChanges } from '../data/accountChanges';
import { StreamSlots } from '../data/streamSlots';
import { EventSequencer } from '../data/eventSequencer';
import { HOOK_EVENTS } from '../domain/hooks';
import type { EventFilter, FoundEvent } from '../data/liveEvents';
import { EventList, EventPage, EventReadOptions, FeedEvent, findEventList, readEventPage, readListedEvents } from './liveEventReads';
import type { EventStream, StreamHub } from './eventStream';

/**
 * The live events of one process (docs/decisions.md, "Live events"): one reader for all of its
 * streams. It follows the `lcm_events` notifications on the process's one listening connection
 * (src/data/notifications.ts), reads what was committed since its last read once (a query on the
 * main pool, no connection kept), and hands the batch to every stream that has caught up; each
 * stream picks what its client may see. Reads coalesce: notifications that arrive during a read
 * lead to one more read, not one each. Streams that are behind (resuming, or whose client is
 * slow) read from the database themselves until they reach the feed. While streams are open it
 * runs sequencing rounds every `sequenceMs` (src/data/eventSequencer.ts): writers only list their
 * events, and a round numbers what has committed and notifies. It also keeps the heartbeat, ends
 * the streams of an account that changed, and ends every stream when the process stops.
 */
export interface EventFeedOptions {
  db: Knex;
  listener: PgListener;
  zone: string;
  logger: Logger;
  heartbeatMs: number;
  maxStreamsPerAccount: number;
  /** Pause between sequencing rounds while streams are open. */
  sequenceMs: number;
  /** Positions one read looks at, at most (EVENTS_READ_SPAN). */
  readSpan: number;
  /** Events per read. */
  batchSize?: number;
}

/** The reads of one request, with its filter. */
export interface EventReader {
  /** The next page after a position: a stream's catch-up. */
  page: (after: number) => Promise<EventPage>;
  /** The events of a JSON list of up to `limit` after `after`, and where the next list starts; `gone`: the client has left. */
  list: (after: number, limit: number, gone: () => boolean) => Promise<EventList>;
  /** Events a list found, at most a page of them at a time. */
  events: (found: readonly FoundEvent[]) => Promise<FeedEvent[]>;
}

/** How long the feed waits before reading again after a failed read (the database is away). */
const RETRY_MS = 1000;
const BATCH_SIZE = 1000;

export class EventFeed implements StreamHub {
  /** Every stream's slot among its account's EVENTS_MAX_STREAMS, counted across processes. */
  readonly slots: StreamSlots;
  readonly batchSize: number;
  private readonly streams = new Set<EventStream>();
  private readonly live = new Set<EventStream>();
  /** The feed has read up to here and given it to the live streams. */
  private cursor = 0;
  private reading = false;
  private readAgain = false;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly unsubscribe: (() => Promise<void>)[] = [];
  private readonly readOptions: EventReadOptions;
  private readonly sequencer: EventSequencer;

  constructor(private readonly options: EventFeedOptions) {
    this.slots = new StreamSlots(options.listener, options.maxStreamsPerAccount);
    this.sequencer = new EventSequencer({ db: options.db, intervalMs: options.sequenceMs, logger: options.logger });
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.readOptions = {
      db: options.db,
      zone: options.zone,
      filter: { types: HOOK_EVENTS },
      span: options.readSpan,
      onRenderError: this.renderError,
    };
  }

  /** Follows new events and account changes; resolves even while the database is away (the listener catches up). */
  async start(): Promise<void> {
    this.unsubscribe.push(
      await this.options.listener.listen(LIVE_EVENTS_CHANNEL, {
        onNotify: () => this.wake(),
        // Notifications and the session's slot locks were lost with the connection.
        onGap: () => this.sessionLost(),
      }),
      await followAccountChanges(this.options.listener, (accountId) => {
        if (accountId !== undefined) this.endWhere((s) => s.accountId === accountId);
      }),
    );
    this.heartbeat = setInterval(() => {
      for (const stream of this.streams) stream.heartbeat();
    }, this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** The process is stopping: new streams are refused. */
  get closing(): boolean {
    return this.stopping;
  }

  /** Streams open in this process. */
  get open(): number {
    return this.streams.size;
  }

  /** The reads of a request with its own filter (kinds, campaigns, projects). */
  reader(filter: EventFilter): EventReader {
    const options: EventReadOptions = { ...this.readOptions, filter };
    return {
      page: (after) => readEventPage(options, after, this.batchSize),
      list: (after, limit, gone) => findEventList(options, after, limit, gone),
      events: (found) => readListedEvents(options, found),
    };
  }

  add(stream: EventStream): void {
    this.streams.add(stream);
    this.sequencer.start();
  }

  join(stream: EventStream): boolean {
    if (this.stopping) return false;
    if (this.live.size === 0) {
      // Idle until now: read on from where this stream is (a read in flight from elsewhere is dropped).
      this.cursor = stream.position;
      this.live.add(stream);
      this.wake();
      return true;
    }
    if (stream.position < this.cursor) return false;
    this.live.add(stream);
    return true;
  }

  leave(stream: EventStream): void {
    this.live.delete(stream);
  }

  closed(stream: EventStream): void {
    this.live.delete(stream);
    this.streams.delete(stream);
    if (this.streams.size === 0) this.sequencer.stop();
  }

  /** Ends every stream and refuses new ones; clients reconnect to another process and resume. */
  async close(): Promise<void> {
    this.stopping = true;
    this.sequencer.stop();
    clearInterval(this.heartbeat);
    clearTimeout(this.retry);
    this.endWhere(() => true);
    for (const stop of this.unsubscribe.splice(0)) await stop().catch(() => undefined);
  }

  private endWhere(test: (stream: EventStream) => boolean): void {
    for (const stream of [...this.streams]) if (test(stream)) stream.end();
  }

  private sessionLost(): void {
    this.slots.sessionLost();
    this.endWhere(() => true);
  }

  private wake(): void {
    if (this.stopping || this.live.size === 0) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    void this.read();
  }

  private async read(): Promise<void> {
    this.reading = true;
    try {
      do {
        this.readAgain = false;
        while (this.live.size > 0 && !this.stopping) {
          const from = this.cursor;
          const page = await readEventPage(this.readOptions, from, this.batchSize);
          if (this.cursor !== from) continue;
          this.cursor = page.next;
          for (const stream of [...this.live]) stream.deliver(page.events, page.next);
          if (page.complete) break;
        }
      } while (this.readAgain && this.live.size > 0 && !this.stopping);
    } catch (err) {
      this.options.logger.warn({ err }, 'live events could not be read; trying again');
      this.retry ??= setTimeout(() => {
        this.retry = undefined;
        this.wake();
      }, RETRY_MS);
      this.retry.unref();
    } finally {
      this.reading = false;
    }
  }

  private readonly renderError = (err: unknown, row: LiveEventRow): void => {
    this.options.logger.error({ err, position: row.position, type: row.type }, 'live event could not be rendered; left out');
  };
}
