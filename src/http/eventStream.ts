import type { Response } from 'express';
import type { ReleaseSlot } from '../data/streamSlots';
import type { SelectableEvent } from '../domain/liveEvents';
import { SSE_HEARTBEAT, sseRetry } from '../domain/liveEvents';
import type { EventPage, EventReaderFormat, FeedEvent } from './liveEventReads';
import type { StreamLogger } from './streamResponse';
import { whenResponseDone } from './responseDone';

/**
 * One client's Server-Sent Events stream (docs/decisions.md, "Live events"). It first reads what
 * the client has not seen (after its Last-Event-ID, or nothing when it starts now) from the
 * database itself, page by page as the client takes them; once it has read up to where its
 * process's feed is, it joins the feed and gets the events the feed reads once for every stream
 * (src/http/eventFeed.ts). A client that stops taking data leaves the feed: nothing more is
 * queued for it in memory, and when its socket drains it reads what it missed from the
 * database again. One that takes nothing for `stallTimeoutMs` is cut; an idle stream, with
 * nothing to send, never is. Positions are compared on every write, so an event reaches the
 * client once, whichever way it came.
 */

/** What a stream needs from its process's feed. */
export interface StreamHub {
  /** Joins the live batches if the feed has read no further than `stream.position`; false: read more first. */
  join(stream: EventStream): boolean;
  leave(stream: EventStream): void;
  /** The response has closed (ended, cut, or the client left). */
  closed(stream: EventStream): void;
}

export interface EventStreamOptions {
  res: Response;
  hub: StreamHub;
  accountId: number;
  /** The position the client has seen up to. */
  position: number;
  /** Whether this client receives an event (kind, rights, filters): the feed's batches hold every event; `read`'s pages only these. */
  selects: (event: SelectableEvent) => boolean;
  reader: EventReaderFormat;
  /** The next page of this stream's events after a position, from the database. */
  read: (after: number) => Promise<EventPage>;
  release: ReleaseSlot;
  /** Cut the stream when the client takes nothing for this long while there is more to send (undefined: never). */
  stallTimeoutMs: number | undefined;
  /** The reconnection delay suggested to clients (the `retry` field). */
  retryMs: number;
  logger: StreamLogger;
}

type Mode = 'catching-up' | 'live' | 'paused' | 'ended';

/** Bytes a stream lets wait unsent before it stops writing and waits for its client. */
const BUFFER_LIMIT = 256 * 1024;

export class EventStream {
  readonly accountId: number;
  /** The last position this client has been sent or has no need of. */
  position: number;
  private mode: Mode = 'catching-up';
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly res: Response;

  constructor(private readonly options: EventStreamOptions) {
    this.res = options.res;
    this.accountId = options.accountId;
    this.position = options.position;
  }

  /** Sends the head and `first` (the first page, read before the status was chosen), then goes on by itself. */
  start(first: EventPage): void {
    const { res } = this;
    // Also when the client left already (during authentication or the first read): then at once.
    whenResponseDone(res, () => this.onClose());
    if (this.mode === 'ended') return;
    res.status(200);
    res.set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // Proxies that buffer responses (nginx) pass this one through as it comes.
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    res.write(sseRetry(this.options.retryMs));
    this.continueWith(first);
  }

  /** A batch the feed read for every stream; `next` is where the feed reads on from. */
  deliver(events: readonly FeedEvent[], next: number): void {
    if (this.mode !== 'live') return;
    const wroteAll = this.write(events);
    if (wroteAll) this.position = Math.max(this.position, next);
    if (!wroteAll || this.res.writableNeedDrain) this.pause();
  }

  /** The heartbeat comment, unless the client has data waiting already. */
  heartbeat(): void {
    if ((this.mode === 'live' || this.mode === 'catching-up') && !this.res.writableNeedDrain) this.res.write(SSE_HEARTBEAT);
  }

  /** Ends the stream cleanly (shutdown, a changed account): the client reconnects and resumes. */
  end(): void {
    if (this.mode === 'ended') return;
    this.stop();
    this.res.end();
  }

  private continueWith(page: EventPage): void {
    if (this.mode === 'ended') return;
    const wroteAll = this.write(page.events);
    if (wroteAll) this.position = Math.max(this.position, page.next);
    if (!wroteAll || this.res.writableNeedDrain) return this.pause();
    if (page.complete && this.options.hub.join(this)) {
      this.mode = 'live';
      return;
    }
    this.mode = 'catching-up';
    this.options.read(this.position).then(
      (next) => this.continueWith(next),
      (err: unknown) => {
        if (this.mode === 'ended') return;
        this.options.logger.info?.({ err }, 'event stream could not read its events; stream ended, the client resumes on reconnecting');
        this.end();
      },
    );
  }

  /**
   * Writes the events this client gets that it has not had. Stops early (false) once
   * BUFFER_LIMIT bytes wait unsent: the rest is read again when the client has taken those, so a
   * slow client costs the server at most that much memory, whatever the batch.
   *
   * No `res.cork()`: the first chunk written in a tick corks the socket until the next one, so
   * the chunks of a batch leave in one socket write; ServerResponse's own uncork releases the
   * socket before it writes what it held, four socket writes per event.
   */
  private write(events: readonly FeedEvent[]): boolean {
    const { res } = this;
    for (const event of events) {
      if (event.position <= this.position) continue;
      if (res.writableLength >= BUFFER_LIMIT) return false;
      this.position = event.position;
      if (!this.options.selects(event.row)) continue;
      const frame = event.frame(this.options.reader);
      if (frame !== null) res.write(frame);
    }
    return true;
  }

  private pause(): void {
    if (this.mode === 'ended') return;
    this.options.hub.leave(this);
    this.mode = 'paused';
    this.res.once('drain', this.onDrain);
    const { stallTimeoutMs } = this.options;
    if (stallTimeoutMs !== undefined) this.stallTimer = setTimeout(this.onStall, stallTimeoutMs);
  }

  private readonly onDrain = (): void => {
    clearTimeout(this.stallTimer);
    if (this.mode !== 'paused') return;
    this.mode = 'catching-up';
    this.continueWith({ events: [], next: this.position, complete: false });
  };

  private readonly onStall = (): void => {
    this.options.logger.info?.({ stallTimeoutMs: this.options.stallTimeoutMs }, 'client stalled during an event stream; stream cut');
    this.stop();
    this.res.destroy();
  };

  private stop(): void {
    this.mode = 'ended';
    clearTimeout(this.stallTimer);
    this.res.off('drain', this.onDrain);
    this.options.hub.leave(this);
    void this.options.release();
  }

  private onClose(): void {
    this.stop();
    this.options.hub.closed(this);
  }
}
