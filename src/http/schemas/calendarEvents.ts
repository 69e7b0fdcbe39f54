import { z } from 'zod';
import { canonicalUniqueId, NIL_UUID } from '../../domain/uniqueId';
import { dateTimeOut, dateTimeParam, listParam, UNIQUE_ID_RULE, uniqueIdParam, windowInOrder } from './common';

/**
 * Request and response schemas of the calendar event endpoints (docs/decisions.md, Calendar events). The interval
 * and start/end checks live here too, so a bad request is a 400 naming the parameter or field.
 */
const interval = {
  FromDate: dateTimeParam.meta({
    description: 'Start of the searched interval (inclusive). ISO 8601; without an offset it is platform local time.',
    example: '2026-11-23',
  }),
  ToDate: dateTimeParam.meta({
    description: 'End of the searched interval (exclusive); must be after FromDate.',
    example: '2026-11-28',
  }),
};

const toDateAfterFromDate = windowInOrder('FromDate', 'ToDate', { empty: false });

export const calendarEventsByCalendarParams = z.object({
  CalendarCode: z.string().min(1).meta({ description: 'Code of the calendar.', example: 'B2B-SALES-CAL' }),
});

export const calendarEventsByCalendarQuery = z.object(interval).superRefine(toDateAfterFromDate);

export const calendarEventsQuery = z
  .object({
    Project: listParam.optional().meta({
      description:
        'Project name globs (`*` is zero or more characters, `?` exactly one; anchored and case-insensitive) or project unique ids (GET /projects), comma-separated or repeated. Narrows the projects the account may see; absent = all of them.',
      example: ['B2B*'],
    }),
    ...interval,
  })
  .superRefine(toDateAfterFromDate);

export const calendarEventUniqueIdParams = z.object({
  UniqueId: uniqueIdParam('Unique id of the calendar event.', { max: 200, example: 'demo-event-001' }),
});

/** A text that may be empty; `null`, which clients send for an empty string (.NET's default), is read as empty. */
const text = (max: number, description: string) =>
  z
    .preprocess((v) => (v === null ? '' : v), z.string({ message: 'must be a string' }).max(max, `must be at most ${max} characters`))
    .meta({ description: `${description} \`null\` is read as empty.` });
const requiredText = (max: number, description: string) =>
  z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, { message: 'must not be empty' })
    .max(max, `must be at most ${max} characters`)
    .meta({ description });

/** Optional: the specification lists the bodies without it, though its model has it. */
const leadUniqueId = (description: string) =>
  text(
    200,
    `Unique id of the lead the event is about, in one of the account’s projects; ${description} The nil UUID counts as empty. ${UNIQUE_ID_RULE}`,
  )
    .optional()
    .transform((v) => {
      if (v === undefined) return v;
      const id = canonicalUniqueId(v.trim());
      return id === NIL_UUID ? '' : id;
    });

const eventFields = {
  calendarCode: requiredText(200, 'Code of an existing calendar in one of the account’s projects.'),
  leadUniqueId: leadUniqueId('left out or empty: an event about no lead (answered as empty).').transform((v) => v ?? ''),
  title: requiredText(1000, 'Title of the event.'),
  notes: text(20000, 'Notes; may be empty.'),
  start: dateTimeParam.meta({ description: 'Start (ISO 8601; without an offset it is platform local time).' }),
  end: dateTimeParam.meta({ description: 'End; not before start. An end equal to start is a zero-length event.' }),
  source: text(200, 'Source of the event (the system it comes from); may be empty.'),
  externalId: text(200, 'Id of the event in the external system; may be empty.'),
};

function startNotAfterEnd(b: { start: Date; end: Date }, ctx: z.RefinementCtx): void {
  if (b.start.getTime() > b.end.getTime()) {
    ctx.addIssue({ code: 'custom', path: ['end'], message: 'must not be before start' });
  }
}

export const createCalendarEventBody = z
  .object(eventFields)
  .superRefine(startNotAfterEnd)
  .meta({
    id: 'NewCalendarEvent',
    description: 'A calendar event to create; every property but leadUniqueId is required.',
    example: {
      calendarCode: 'B2B-SALES-CAL',
      leadUniqueId: 'demo-lead-002',
      title: 'Callback: follow-up on the offer',
      notes: 'Customer asked for a call after the board meeting',
      start: '2026-11-24T13:00:00',
      end: '2026-11-24T13:30:00',
      source: 'crm',
      externalId: 'CRM-7101',
    },
  });

/** The body's copy of the path's UniqueId: absent, null or empty means the path's; another id is a 400. */
const bodyUniqueId = z
  .string({ message: 'must be a string' })
  .trim()
  .max(200)
  .transform(canonicalUniqueId)
  .nullish()
  .meta({
    description: `The UniqueId of the path, repeated (a guard against changing the wrong event); may be left out. ${UNIQUE_ID_RULE}`,
  });

export const replaceCalendarEventBody = z
  .object({
    uniqueId: bodyUniqueId,
    ...eventFields,
    // Left out, the lead stays: a client writing the specification's PUT body sends none.
    leadUniqueId: leadUniqueId('left out: the event stays about the lead it is about; empty: about no lead (answered as empty).'),
  })
  .superRefine(startNotAfterEnd)
  .meta({
    id: 'CalendarEventReplacement',
    description: 'The whole event; every property but uniqueId and leadUniqueId is required.',
    example: {
      uniqueId: 'demo-event-001',
      calendarCode: 'B2B-SALES-CAL',
      leadUniqueId: 'demo-lead-001',
      title: 'Callback: Nordlys A/S (moved)',
      notes: 'Customer asked to be called back an hour later',
      start: '2026-11-23T10:00:00',
      end: '2026-11-23T10:30:00',
      source: 'lcm-demo',
      externalId: 'CRM-7001',
    },
  });

export const deleteCalendarEventBody = z
  .object({ uniqueId: bodyUniqueId })
  .meta({ id: 'CalendarEventDeletion', example: { uniqueId: 'demo-event-001' } });

export const calendarEventDeletedOut = z
  .object({ uniqueId: z.string().describe('The event deleted.') })
  .meta({ id: 'CalendarEventDeleted', example: { uniqueId: 'demo-event-001' } });

export const calendarEventOut = z
  .object({
    uniqueId: z.string(),
    calendarCode: z.string(),
    leadUniqueId: z.string(),
    title: z.string(),
    notes: z.string(),
    start: dateTimeOut,
    end: dateTimeOut,
    source: z.string(),
    externalId: z.string(),
  })
  .meta({ id: 'CalendarEvent' });

export const calendarEventListOut = z.array(calendarEventOut);
