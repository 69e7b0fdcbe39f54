import type { Knex } from 'knex';
import type { Request } from 'express';
import { defineEndpoint, Endpoint, anyAccount } from '../endpoint';
import { forbidden, invalidParameter } from '../problem';
import type { Settings } from '../../config/settings';
import { EVENT_RESOURCE } from '../../domain/hooks';
import { eventSelector, readableEventTypes } from '../../domain/liveEvents';
import { matchesAny } from '../../domain/projectPatterns';
import { canonicalUniqueId } from '../../domain/uniqueId';
import { campaignsNamed, streamPositions } from '../../data/liveEvents';
import type { EventFeed } from '../eventFeed';
import { DEFAULT_EVENT_LIST, eventListOut, eventsQuery, parseLastEventId } from '../schemas/events';
import { sendEventList, sendEventStream, takeStreamSlot } from '../liveEventResponse';
import { negotiate } from '../negotiate';
import { sendOptionsOf } from '../exportStream';

const REPRESENTATIONS = ['json', 'events'] as const;

/** Whether the request will be answered with a stream (a 406 is decided later, as for any endpoint). */
function asksForStream(req: Request): boolean {
  try {
    return negotiate(req, REPRESENTATIONS) === 'events';
  } catch {
    return false;
  }
}

/**
 * GET /events: what happens to leads, calls and calendar events, as Server-Sent Events or as a
 * JSON list to poll (docs/decisions.md, "Live events"). The events and their rights are the
 * hooks': the same table, the same envelope, a Get right on each event's resource.
 */
export function eventEndpoints(feed: EventFeed, settings: Pick<Settings, 'EVENTS_MAX_STREAMS' | 'EVENTS_HEARTBEAT_MS'>): Endpoint[] {
  const listEventsEndpoint = defineEndpoint({
    service: 'events',
    operationId: 'listEvents',
    method: 'get',
    path: '/events',
    summary: 'Live events: a Server-Sent Events stream, or a JSON list to poll',
    description:
      'The events hooks deliver (`lead.created`, `lead.updated`, `lead.statusChanged`, `call.ended`, `calendarEvent.*`), each the hook envelope `{ type, timestamp, data }` ' +
      'with `data` the resource as this API serializes it for this account, in the order their changes committed. ' +
      'An account receives the kinds whose resource it has the Get right on (naming another in `Events` is a 403), of campaigns and calendars in its project rights. ' +
      '\n\nWith `Accept: text/event-stream` the answer is a stream that does not end: each event as `id: <id>`, `event: <type>`, `data: <envelope>`, ' +
      `and a \`: heartbeat\` comment every ${settings.EVENTS_HEARTBEAT_MS / 1000} s (EVENTS_HEARTBEAT_MS). ` +
      'It starts with the kept events after `Last-Event-ID` (or `After`), then sends new ones as they commit; a client that reconnects with the last id it got misses nothing and gets nothing twice, whichever server answers. ' +
      'Without either it starts with what commits from now on. ' +
      `An account may have ${settings.EVENTS_MAX_STREAMS} streams open at once (EVENTS_MAX_STREAMS) across all servers; one more is a 429, which is not counted. ` +
      'A stream is one counted request, however long it runs. A server that stops ends its streams; the client reconnects and resumes. Streams are not compressed. ' +
      '\n\nWith JSON (the default) the answer lists up to `Limit` events after `After` (from the oldest kept one without it), and its `Last-Event-ID` header says where the next list starts: poll again with it as `After` (or as `Last-Event-ID`). ' +
      'It is the last `id` listed when `Limit` events came, otherwise the newest id: polling with it skips the ids already read that matched nothing. ' +
      'Polling with the last `id` listed gets the same events. ' +
      'Events are kept for EVENTS_RETENTION (7 days by default).',
    tags: ['Events'],
    access: anyAccount,
    representations: REPRESENTATIONS,
    streamed: true,
    dateTimes: true,
    query: eventsQuery,
    response: eventListOut,
    // A stream's slot is taken before the request is counted: a refused stream spends no quota.
    admit: (req, account) => (asksForStream(req) ? takeStreamSlot(feed, account.id) : Promise.resolve(undefined)),
    errorStatuses: [403],
    headers: [
      {
        name: 'Last-Event-ID',
        description:
          'The id of the last event this client received (EventSource sends it when it reconnects). Takes precedence over `After`.',
      },
    ],
    responseHeaders: [
      {
        name: 'Last-Event-ID',
        description:
          'JSON answers: where the next list starts, to send back as `After` (or as `Last-Event-ID`): the last `id` listed when `Limit` events came, otherwise the newest id.',
      },
    ],
    async handler({ query, req, res, account, representation, dateTimeFormat, db, logger, exports, admitted }) {
      const readable = readableEventTypes(account.rights);
      const types = query.Events ? [...new Set(query.Events)] : readable;
      const unreadable = types.filter((t) => !readable.includes(t));
      if (unreadable.length > 0) {
        const resources = [...new Set(unreadable.map((t) => EVENT_RESOURCE[t]))].join(', ');
        throw forbidden(`this account lacks the Get right on ${resources}, which ${unreadable.join(', ')} are about`);
      }
      if (types.length === 0)
        throw forbidden('this account has the Get right on none of Leads, Calls and CalendarEvents, which events are about');

      const lastEventId = parseLastEventId(req.get('Last-Event-ID'));
      if (!lastEventId.ok) throw invalidParameter('Last-Event-ID', 'must be an event id: a non-negative integer');
      const positions = await streamPositions(db);
      const asked = lastEventId.position ?? query.After;
      if (asked !== undefined && asked > positions.issued) {
        throw invalidParameter(
          lastEventId.position !== undefined ? 'Last-Event-ID' : 'After',
          `no event has an id above ${positions.issued} yet`,
        );
      }
      const campaignCodes = query.Campaigns ? await filteredCampaignCodes(db, query.Campaigns, account.projectPatterns) : undefined;
      const request = {
        res,
        feed,
        accountId: account.id,
        selects: eventSelector({
          types: new Set(types),
          projectRights: account.projectPatterns,
          ...(query.Projects ? { projects: query.Projects } : {}),
          ...(campaignCodes ? { campaignCodes: new Set(campaignCodes) } : {}),
        }),
        reader: { dateTimeFormat, entryAccess: account.entryAccess },
        reads: feed.reader({
          types,
          projectRights: account.projectPatterns,
          ...(query.Projects ? { projects: query.Projects } : {}),
          ...(campaignCodes ? { campaignCodes } : {}),
        }),
        logger,
      };
      if (representation === 'events') {
        if (!admitted) throw new Error('an event stream opened without its slot');
        await sendEventStream({ ...request, after: asked ?? positions.committed }, admitted, { stallTimeoutMs: exports.stallTimeoutMs });
      } else {
        await sendEventList({ ...request, after: asked ?? 0 }, query.Limit ?? DEFAULT_EVENT_LIST, sendOptionsOf(exports));
      }
      return undefined;
    },
  });
  return [listEventsEndpoint];
}

/**
 * The codes of the campaigns a `Campaigns` filter names: a key that names no campaign the
 * account can see is a 400 (a stream filtered on it would stay silent for ever), the same answer
 * for a campaign of a project outside its rights, so the filter tells nothing about those.
 */
async function filteredCampaignCodes(db: Knex, keys: readonly string[], projectPatterns: readonly string[]): Promise<string[]> {
  const campaigns = (await campaignsNamed(db, keys)).filter((c) => matchesAny(projectPatterns, c.project));
  const unknown = keys.filter((key) => !campaigns.some((c) => c.code === key || c.uniqueId === canonicalUniqueId(key)));
  if (unknown.length > 0) {
    throw invalidParameter(
      'Campaigns',
      `no campaign in this account's projects has the code or unique id ${unknown.map((k) => JSON.stringify(k)).join(', ')}`,
    );
  }
  return campaigns.map((c) => c.code);
}
