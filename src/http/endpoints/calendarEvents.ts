import { defineEndpoint, Endpoint, right } from '../endpoint';
import { HttpProblem, invalidBody, notFound } from '../problem';
import {
  calendarEventDeletedOut,
  calendarEventListOut,
  calendarEventOut,
  calendarEventsByCalendarParams,
  calendarEventsByCalendarQuery,
  calendarEventsQuery,
  calendarEventUniqueIdParams,
  createCalendarEventBody,
  deleteCalendarEventBody,
  replaceCalendarEventBody,
} from '../schemas/calendarEvents';
import {
  CalendarEvent,
  createEvent,
  deleteEvent,
  listCalendarEvents,
  listEvents,
  replaceEvent,
  WriteResult,
} from '../../data/calendarEventRepository';
import { calendarEventToJson as toJson } from '../../domain/calendarEventSerializer';

/** Unknown calendar or lead → 400 naming the field; a calendar outside the account's projects → 403. */
function writtenEvent(result: WriteResult, calendarCode: string, uniqueId?: string): CalendarEvent {
  switch (result.kind) {
    case 'ok':
      return result.event;
    case 'not_found':
      throw notFound(`no calendar event ${uniqueId}`);
    case 'unknown_calendar':
      throw invalidBody(`calendarCode: no calendar ${calendarCode}`, [{ field: 'calendarCode', message: 'no such calendar' }]);
    case 'forbidden_calendar':
      throw new HttpProblem('forbidden', `calendar ${calendarCode} is outside the account's projects`);
    case 'unknown_lead':
      // The same answer for a lead that does not exist and one of another project: nothing leaks.
      throw invalidBody("leadUniqueId: no lead with this unique id in the account's projects", [
        { field: 'leadUniqueId', message: "no lead with this unique id in the account's projects" },
      ]);
  }
}

/** A body that names an event names the path's; one that names none leaves the path to say (docs/decisions.md, Calendar events). */
function assertSameUniqueId(pathId: string, bodyId: string | null | undefined): void {
  if (bodyId && pathId !== bodyId) {
    throw invalidBody('uniqueId: must equal the UniqueId of the path', [
      { field: 'uniqueId', message: 'must equal the UniqueId of the path' },
    ]);
  }
}

const INTERVAL_RULE =
  'An event is returned when it overlaps [FromDate, ToDate): start < ToDate and end > FromDate; a zero-length event is returned when FromDate <= start < ToDate. Ordered by start, then uniqueId.';

const calendarEventsByCalendar = defineEndpoint({
  service: 'calendars.events.bycalendar',
  operationId: 'listCalendarEventsOfCalendar',
  method: 'get',
  path: '/calendars/{CalendarCode}/events',
  summary: 'Events of one calendar',
  description: `${INTERVAL_RULE} An unknown calendar, or one outside the account's projects, is a 404.`,
  tags: ['Calendar events'],
  access: right('CalendarEvents', 'Get'),
  representations: ['json', 'html'],
  params: calendarEventsByCalendarParams,
  query: calendarEventsByCalendarQuery,
  response: calendarEventListOut,
  dateTimes: true,
  errorStatuses: [404],
  async handler({ params, query, scope, db, zone, dateTimeFormat }) {
    const events = await listCalendarEvents(db, params.CalendarCode, { from: query.FromDate, to: query.ToDate }, scope);
    if (events === undefined) throw notFound(`no calendar ${params.CalendarCode}`);
    return { body: events.map((e) => toJson(e, zone, dateTimeFormat)), title: `Calendar ${params.CalendarCode}: events` };
  },
});

const calendarEventsList = defineEndpoint({
  service: 'calendars.events.list',
  operationId: 'listCalendarEvents',
  method: 'get',
  path: '/calendars/events',
  summary: 'Events of every calendar in the account’s projects',
  description: `${INTERVAL_RULE} Project narrows the calendars by project name; it never reaches beyond the account's projects.`,
  tags: ['Calendar events'],
  access: right('CalendarEvents', 'Get'),
  representations: ['json', 'html'],
  query: calendarEventsQuery,
  response: calendarEventListOut,
  dateTimes: true,
  async handler({ query, scope, db, zone, dateTimeFormat }) {
    const events = await listEvents(db, { from: query.FromDate, to: query.ToDate }, scope, query.Project);
    return { body: events.map((e) => toJson(e, zone, dateTimeFormat)), title: 'Calendar events' };
  },
});

const calendarEventCreate = defineEndpoint({
  service: 'calendars.events.create',
  operationId: 'createCalendarEvent',
  method: 'post',
  path: '/calendars/events',
  summary: 'Create a calendar event',
  description:
    "Answers 200 with the event and its new uniqueId. An unknown calendarCode is a 400; a calendar outside the account's projects is a 403; start after end is a 400.",
  tags: ['Calendar events'],
  access: right('CalendarEvents', 'Post'),
  representations: ['json'],
  body: createCalendarEventBody,
  response: calendarEventOut,
  dateTimes: true,
  async handler({ body, scope, db, zone, dateTimeFormat, clock }) {
    const event = writtenEvent(await createEvent(db, body, scope, clock()), body.calendarCode);
    return { body: toJson(event, zone, dateTimeFormat) };
  },
});

const calendarEventReplace = defineEndpoint({
  service: 'calendars.events.update',
  operationId: 'updateCalendarEvent',
  method: 'put',
  path: '/calendars/events/{UniqueId}',
  summary: 'Replace a calendar event',
  description:
    "Full replacement: every property is required but uniqueId, which, when given, must equal the path (else 400), and leadUniqueId, which, left out, keeps the lead the event is about. The event may move to another calendar of the account's projects. An unknown event, or one outside the account's projects, is a 404. Concurrent replacements of one event are applied one after the other.",
  tags: ['Calendar events'],
  access: right('CalendarEvents', 'Put'),
  representations: ['json'],
  params: calendarEventUniqueIdParams,
  body: replaceCalendarEventBody,
  response: calendarEventOut,
  dateTimes: true,
  errorStatuses: [404],
  async handler({ params, body, scope, db, zone, dateTimeFormat, clock }) {
    assertSameUniqueId(params.UniqueId, body.uniqueId);
    const { calendarCode, leadUniqueId, title, notes, start, end, source, externalId } = body;
    const input = { calendarCode, leadUniqueId, title, notes, start, end, source, externalId };
    const event = writtenEvent(await replaceEvent(db, params.UniqueId, input, scope, clock()), body.calendarCode, params.UniqueId);
    return { body: toJson(event, zone, dateTimeFormat) };
  },
});

const calendarEventDelete = defineEndpoint({
  service: 'calendars.events.delete',
  operationId: 'deleteCalendarEvent',
  method: 'delete',
  path: '/calendars/events/{UniqueId}',
  summary: 'Delete a calendar event',
  description:
    'The body `{ "uniqueId" }`, when sent, must equal the path (else 400), a guard against deleting the wrong event; without a body (or a uniqueId) the path names the event. Answers 200 with the uniqueId of the event deleted. An unknown event, or one outside the account\'s projects, is a 404.',
  tags: ['Calendar events'],
  access: right('CalendarEvents', 'Delete'),
  representations: ['json'],
  params: calendarEventUniqueIdParams,
  body: deleteCalendarEventBody,
  bodyOptional: true,
  response: calendarEventDeletedOut,
  errorStatuses: [404],
  async handler({ params, body, scope, db, clock }) {
    assertSameUniqueId(params.UniqueId, body.uniqueId);
    const deleted = await deleteEvent(db, params.UniqueId, scope, clock());
    if (!deleted) throw notFound(`no calendar event ${params.UniqueId}`);
    return { body: { uniqueId: params.UniqueId } };
  },
});

export const calendarEventEndpoints: Endpoint[] = [
  calendarEventsList,
  calendarEventsByCalendar,
  calendarEventCreate,
  calendarEventReplace,
  calendarEventDelete,
];
