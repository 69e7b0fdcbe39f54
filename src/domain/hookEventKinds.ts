import type { DateTimeFormatName, EntryAccessName, LeadStatusName } from './enums';
import type { LeadFieldRule } from './leadData';
import type { HookEventName, HookMessage, TEST_EVENT } from './hooks';
import {
  calendarEventMessage,
  CalendarEventSnapshot,
  callMessage,
  CallSnapshot,
  leadMessage,
  LeadSnapshot,
  sampleCalendarEventSnapshot,
  sampleCallSnapshot,
} from './hookMessages';

/**
 * Every kind of hook event, and how its payload is built: one map, checked by the compiler, used
 * by delivery (the payload of an event's snapshot), by `GET /hooks/{UniqueId}/example` and
 * `POST /hooks/{UniqueId}/test` (a sample's payload) and by the OpenAPI examples. A kind missing
 * here is a compile error, and an unknown kind met at delivery is refused, never rendered as
 * something else.
 */
export type EventKind = HookEventName | typeof TEST_EVENT;

/** For whom and how a payload is written. */
export interface PayloadContext {
  type: EventKind;
  /** Epoch milliseconds of the change. */
  occurredTime: number;
  zone: string;
  dateTimeFormat: DateTimeFormatName;
  /** The receiving account's entry access (lead data fields above it are left out). */
  entryAccess: EntryAccessName;
  /** A lead's definition fields (lead kinds). */
  fields?: LeadFieldRule[];
  /** The lead's status before the change (lead.statusChanged). */
  previousStatus?: LeadStatusName;
}

/** What a sample is made of: the time, the hook's campaign, and a lead of it (or a made-up one). */
export interface SampleSource {
  now: number;
  campaignCode?: string;
  lead: { snapshot: LeadSnapshot; fields: LeadFieldRule[] };
}

interface Sample {
  snapshot: unknown;
  fields?: LeadFieldRule[];
  previousStatus?: LeadStatusName;
}

export interface EventKindBuilder {
  /** Lead kinds render with the lead definition's fields. */
  subject: 'lead' | 'call' | 'calendarEvent';
  /** The payload of an event's snapshot (as src/data/hookEvents.ts stores it). */
  payload(snapshot: unknown, context: PayloadContext): HookMessage;
  /** A real-looking snapshot of this kind. */
  sample(source: SampleSource): Sample;
}

const lead = (samplePreviousStatus?: LeadStatusName): EventKindBuilder => ({
  subject: 'lead',
  payload: (snapshot, c) =>
    leadMessage(snapshot as LeadSnapshot, {
      type: c.type,
      occurredTime: c.occurredTime,
      zone: c.zone,
      dateTimeFormat: c.dateTimeFormat,
      entryAccess: c.entryAccess,
      fields: c.fields ?? [],
      ...(c.previousStatus !== undefined ? { previousStatus: c.previousStatus } : {}),
    }),
  sample: (s) => ({
    snapshot: s.lead.snapshot,
    fields: s.lead.fields,
    ...(samplePreviousStatus !== undefined ? { previousStatus: samplePreviousStatus } : {}),
  }),
});

const call: EventKindBuilder = {
  subject: 'call',
  payload: (snapshot, c) => callMessage(snapshot as CallSnapshot, c),
  sample: (s) => ({ snapshot: sampleCallSnapshot(s.now, s.campaignCode) }),
};

const calendarEvent: EventKindBuilder = {
  subject: 'calendarEvent',
  payload: (snapshot, c) => calendarEventMessage(snapshot as CalendarEventSnapshot, c),
  sample: (s) => ({ snapshot: sampleCalendarEventSnapshot(s.now) }),
};

export const EVENT_KINDS: Record<EventKind, EventKindBuilder> = {
  'lead.created': lead(),
  'lead.updated': lead(),
  'lead.statusChanged': lead('New'),
  'call.ended': call,
  'calendarEvent.created': calendarEvent,
  'calendarEvent.updated': calendarEvent,
  'calendarEvent.deleted': calendarEvent,
  'hook.test': lead(),
};

/** The kind of a stored event type; undefined for a type this code does not know. */
export function eventKindOf(type: string): EventKind | undefined {
  return Object.hasOwn(EVENT_KINDS, type) ? (type as EventKind) : undefined;
}

/** The payload of a sample of `type` (examples and test deliveries). */
export function samplePayload(
  type: EventKind,
  source: SampleSource,
  context: Omit<PayloadContext, 'type' | 'fields' | 'previousStatus'>,
): HookMessage {
  const builder = EVENT_KINDS[type];
  const sample = builder.sample(source);
  return builder.payload(sample.snapshot, {
    ...context,
    type,
    ...(sample.fields ? { fields: sample.fields } : {}),
    ...(sample.previousStatus ? { previousStatus: sample.previousStatus } : {}),
  });
}
