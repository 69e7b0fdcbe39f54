import type { Knex } from 'knex';
import type { DateTimeFormatName, EntryAccessName } from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import { hookEnvelope, isLeadEvent } from '../domain/hooks';
import { EVENT_KINDS, eventKindOf } from '../domain/hookEventKinds';
import type { LeadSnapshot } from '../domain/hookMessages';
import { sseEvent } from '../domain/liveEvents';
import type { EventFilter, EventWindow, FoundEvent, LiveEventRow } from '../data/liveEvents';
import { findEventsAfter, readEventsAfter, readFoundEvents } from '../data/liveEvents';
import { leadDefinitionFieldsById } from '../data/hookDeliveryRepository';

/**
 * Events read for the live stream and its JSON catch-up, each rendered at most once per kind of
 * reader: readers differ only in their entry access and DateTime format, so a thousand streams
 * of a few accounts share a handful of renderings of each event.
 */

/** How an account reads events: the two things its rendering depends on. */
export interface EventReaderFormat {
  dateTimeFormat: DateTimeFormatName;
  entryAccess: EntryAccessName;
}

/** The envelope of one event as the JSON catch-up lists it: the hook envelope with the event's position as `id`. */
export interface ListedEvent {
  id: number;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export class FeedEvent {
  private readonly rendered = new Map<string, ListedEvent | null>();
  private readonly frames = new Map<string, Buffer | null>();

  constructor(
    readonly row: LiveEventRow,
    private readonly leadFields: LeadFieldRule[] | undefined,
    private readonly zone: string,
    private readonly onRenderError: (err: unknown, row: LiveEventRow) => void,
  ) {}

  get position(): number {
    return this.row.position;
  }

  /** The event for this reader; null when its snapshot cannot be rendered (logged once per reader kind). */
  listed(reader: EventReaderFormat): ListedEvent | null {
    const key = `${reader.entryAccess}|${reader.dateTimeFormat}`;
    let listed = this.rendered.get(key);
    if (listed === undefined) {
      try {
        // The payload of the event's kind, built as hook delivery builds it (src/domain/hookEventKinds.ts).
        const kind = eventKindOf(this.row.type);
        if (kind === undefined) throw new Error(`unknown event type ${JSON.stringify(this.row.type)}`);
        const message = EVENT_KINDS[kind].payload(this.row.snapshot, {
          type: kind,
          occurredTime: this.row.occurredTime.getTime(),
          zone: this.zone,
          ...reader,
          ...(this.leadFields ? { fields: this.leadFields } : {}),
          ...(this.row.previousStatus !== null ? { previousStatus: this.row.previousStatus } : {}),
        });
        listed = { id: this.row.position, ...hookEnvelope(message) };
      } catch (err) {
        this.onRenderError(err, this.row);
        listed = null;
      }
      this.rendered.set(key, listed);
    }
    return listed;
  }

  /** The event as Server-Sent Events bytes for this reader; null when it cannot be rendered. */
  frame(reader: EventReaderFormat): Buffer | null {
    const key = `${reader.entryAccess}|${reader.dateTimeFormat}`;
    let frame = this.frames.get(key);
    if (frame === undefined) {
      const listed = this.listed(reader);
      frame = listed === null ? null : Buffer.from(sseEvent(listed.id, listed.type, JSON.stringify(hookEnvelope(listed))));
      this.frames.set(key, frame);
    }
    return frame;
  }
}

export interface EventPage {
  events: FeedEvent[];
  /**
   * Where the next read starts: the last event's position, or, when the page is not full, the
   * last position the read looked at, or the newest committed one if that came first (nothing
   * before it is left to read).
   */
  next: number;
  /** Fewer events than asked for, up to the newest committed position: the reader has read everything committed when it read. */
  complete: boolean;
}

export interface EventReadOptions {
  db: Knex;
  zone: string;
  filter: EventFilter;
  /** Positions one read looks at, at most (EVENTS_READ_SPAN). */
  span: number;
  onRenderError: (err: unknown, row: LiveEventRow) => void;
}

/** Where the reader goes on after a read of `limit` events that returned `count`, the last at `last`. */
function continuation(after: number, limit: number, count: number, last: number | undefined, window: EventWindow) {
  if (count >= limit && last !== undefined) return { next: last, complete: false };
  return { next: Math.max(after, Math.min(window.upto, window.head)), complete: window.upto >= window.head };
}

/**
 * The events of these rows, with the fields of each lead definition their lead events use, as
 * they are now (entry access is decided at reading, as hooks decide it at delivery).
 */
async function feedEvents(options: EventReadOptions, rows: readonly LiveEventRow[]): Promise<FeedEvent[]> {
  const definitions = new Set<number>();
  for (const row of rows) {
    if (isLeadEvent(row.type)) definitions.add((row.snapshot as LeadSnapshot).campaign.leadDefinitionId);
  }
  const fields = new Map<number, LeadFieldRule[]>();
  for (const id of definitions) fields.set(id, await leadDefinitionFieldsById(options.db, id));
  return rows.map(
    (row) =>
      new FeedEvent(
        row,
        isLeadEvent(row.type) ? fields.get((row.snapshot as LeadSnapshot).campaign.leadDefinitionId) : undefined,
        options.zone,
        options.onRenderError,
      ),
  );
}

/** Up to `limit` events after `after`. */
export async function readEventPage(options: EventReadOptions, after: number, limit: number): Promise<EventPage> {
  const read = await readEventsAfter(options.db, after, limit, options.filter, options.span);
  const events = await feedEvents(options, read.rows);
  return { events, ...continuation(after, limit, read.rows.length, read.rows.at(-1)?.position, read) };
}

/** The events of a JSON list, found before any is sent, and where the client's next list starts. */
export interface EventList {
  found: FoundEvent[];
  next: number;
}

/**
 * Up to `limit` events after `after`, as `readEventPage` would read them, without the events
 * themselves. It reads span after span until it has `limit` events or has read to the newest
 * position, so a client that polls with the last id listed never stays behind a stretch that
 * matches nothing; each read stays bounded, and the answer stops reading once `gone` says the
 * client has left.
 */
export async function findEventList(options: EventReadOptions, after: number, limit: number, gone: () => boolean): Promise<EventList> {
  const found: FoundEvent[] = [];
  let from = after;
  for (;;) {
    const want = limit - found.length;
    const read = await findEventsAfter(options.db, from, want, options.filter, options.span);
    found.push(...read.found);
    const { next, complete } = continuation(from, want, read.found.length, read.found.at(-1)?.position, read);
    if (found.length >= limit || complete || next <= from || gone()) return { found, next };
    from = next;
  }
}

/** Events found by `findEventList`. */
export async function readListedEvents(options: EventReadOptions, found: readonly FoundEvent[]): Promise<FeedEvent[]> {
  return feedEvents(options, await readFoundEvents(options.db, found));
}
