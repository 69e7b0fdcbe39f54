import { z } from 'zod';
import { dateTimeOut, listParam, positiveIntParam, UNIQUE_ID_RULE } from './common';
import { hookEventList } from './hooks';
import { HOOK_EVENTS } from '../../domain/hooks';

/** Request and response schemas of GET /events (docs/decisions.md, "Live events"). */

/** The most events one JSON answer lists. */
const MAX_EVENT_LIST = 10_000;
export const DEFAULT_EVENT_LIST = 1000;

/** An event position: what `id` carries, and what Last-Event-ID and After send back. */
const positionParam = z
  .string()
  .regex(/^\d{1,16}$/, { message: 'must be an event id: a non-negative integer' })
  .transform(Number)
  .refine((n) => Number.isSafeInteger(n), { message: `must be an event id: an integer from 0 to ${Number.MAX_SAFE_INTEGER}` })
  .meta({ description: 'The id of the last event the client has (0: from the oldest kept event).', example: '120' });

export const eventsQuery = z.object({
  Events: hookEventList.optional().meta({
    description: `Event kinds to send, each one of ${HOOK_EVENTS.join(', ')} (case-insensitive) or a family (\`lead.*\`, \`calendarEvent.*\`); default: every kind the account may read.`,
  }),
  Campaigns: listParam.optional().meta({
    description: `Only events of these campaigns (codes or unique ids); calendar events have none. A key that names no campaign of the account’s projects is a 400. ${UNIQUE_ID_RULE}`,
  }),
  Projects: listParam.optional().meta({
    description:
      "Only events of campaigns or calendars whose project matches one of these patterns (`*`, `?`, case-insensitive) or project unique ids (GET /projects); never beyond the account's project rights.",
  }),
  After: positionParam.optional().meta({
    description:
      'Send the kept events after this id first. A stream without it (and without Last-Event-ID) starts with the events committed from now on; the JSON list starts at the oldest kept event.',
  }),
  Limit: positiveIntParam(MAX_EVENT_LIST)
    .optional()
    .meta({ description: `JSON only: the most events listed (default ${DEFAULT_EVENT_LIST}, at most ${MAX_EVENT_LIST}).` }),
});

/** Parses a Last-Event-ID header as a position; undefined when absent or empty. */
export function parseLastEventId(value: string | undefined): { ok: true; position: number | undefined } | { ok: false } {
  if (value === undefined || value.trim() === '') return { ok: true, position: undefined };
  const parsed = positionParam.safeParse(value.trim());
  return parsed.success ? { ok: true, position: parsed.data } : { ok: false };
}

const liveEventOut = z
  .object({
    id: z.number().int().meta({ description: 'The event’s position: increasing in commit order; send it back as After or Last-Event-ID.' }),
    type: z.enum(HOOK_EVENTS).meta({ description: 'The event kind (GET /hooks/meta describes each).' }),
    timestamp: dateTimeOut.meta({ description: 'When the change happened.' }),
    data: z.record(z.string(), z.unknown()).meta({
      description:
        'The resource exactly as the API serializes it (a Lead as GET /leads/{UniqueId}, a Call as GET /calls, a CalendarEvent), for this account: its entry access and DateTime format; lead.statusChanged adds previousStatus.',
    }),
  })
  .meta({ id: 'LiveEvent', description: 'One event: the envelope a hook delivers, with its position as id.' });

export const eventListOut = z.array(liveEventOut).meta({ id: 'LiveEventList' });
