import { z } from 'zod';
import { bodyBoolean, dateTimeOut, dateTimeParam, enumNameParam, positiveIntParam, timeSpanParam, uniqueIdParam } from './common';
import { Enumeration, LeadClosure, LeadStatus } from '../../domain/enums';
import {
  HOOK_EVENT_DESCRIPTIONS,
  HOOK_EVENTS,
  HOOK_FORMATS,
  HOOK_METHODS,
  parseHookEvents,
  parseTemplateName,
  PLACEHOLDERS,
  STANDARD_TEMPLATE_DESCRIPTIONS,
  STANDARD_TEMPLATES,
  TEMPLATE_NAMES,
  LIVE_SERVICE_TEMPLATES,
  renderHookRequest,
  TEST_EVENT,
} from '../../domain/hooks';
import { EventKind, samplePayload } from '../../domain/hookEventKinds';
import { sampleLeadSnapshot } from '../../domain/hookMessages';
import { formatDateTime } from '../../domain/datetime';
import type { DateTimeFormatName } from '../../domain/enums';
import type { HookEventName } from '../../domain/hooks';
import type { DeliveryRecord, HookRecord } from '../../data/hookRepository';

/**
 * Request and response schemas of the /hooks endpoints (the WebHooks resource). Both create
 * bodies seen in the wild validate against one schema: `{ name, campaignCode, leadStatus,
 * method, urlTemplate, format, standardTemplateName }` and `{ Name, Method, UrlTemplate, Format,
 * ContentTemplate, LeadStatus }` (property names are case-insensitive; `urlTemplate` is `url`).
 */
/** The fixed moment the documented examples are rendered at. */
const EXAMPLE_TIME = Date.parse('2026-05-06T08:16:41.000Z');

/** The Standard body of a sample of `type` (built by the event kind's own builder), for the documentation and /hooks/meta. */
function standardBodyOf(type: EventKind): string {
  const message = samplePayload(
    type,
    { now: EXAMPLE_TIME, lead: sampleLeadSnapshot({ now: EXAMPLE_TIME }) },
    { occurredTime: EXAMPLE_TIME, zone: 'Europe/Copenhagen', dateTimeFormat: 'Offset', entryAccess: 'Full' },
  );
  return renderHookRequest(
    { url: 'https://example.com/', method: 'POST', format: 'Json', contentTemplate: null, standardTemplate: 'Standard' },
    message,
  ).body;
}

const HookMethodEnum = new Enumeration('HookMethod', { POST: 0, PUT: 1 } as const);
const HookFormatEnum = new Enumeration('HookFormat', { Json: 0, Form: 1 } as const);

/** `Standard`, `Data`, or a live-service name such as `StandardTemplate.PostJson` (case-insensitive). */
const templateName = z
  .string()
  .transform((value, ctx) => {
    const choice = parseTemplateName(value);
    if (choice === undefined) {
      ctx.addIssue({ code: 'custom', message: `unknown template ${JSON.stringify(value)}; one of ${TEMPLATE_NAMES.join(', ')}` });
      return z.NEVER;
    }
    return choice;
  })
  .meta({
    description:
      `Body when there is no content template: ${STANDARD_TEMPLATES.join(' or ')} (default Standard, the envelope). ` +
      `The live service's names are accepted too (${TEMPLATE_NAMES.filter((n) => n.includes('.')).join(', ')}, with or without the \`StandardTemplate.\` prefix): ` +
      'each is the Standard envelope with that method and format (a method or format given beside it must agree).',
    example: 'StandardTemplate.PostJson',
  });

/** One event name, or a family such as `calendarEvent.*`: its events. */
const hookEventItem = z
  .string()
  .transform((value, ctx) => {
    const names = parseHookEvents(value);
    if (names === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown event ${JSON.stringify(value)}; one of ${HOOK_EVENTS.join(', ')}, or a family such as calendarEvent.*`,
      });
      return z.NEVER;
    }
    return names;
  })
  .meta({ description: `One of ${HOOK_EVENTS.join(', ')} (case-insensitive), or a family: \`lead.*\`, \`calendarEvent.*\`.` });

/** The event names a list of names and families stands for, each once. */
const distinctEvents = (lists: HookEventName[][]): HookEventName[] => [...new Set(lists.flat())];

export const hookEventList = z.array(hookEventItem).transform(distinctEvents);

export const hookBody = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, { message: 'must not be empty' })
      .max(200)
      .meta({ description: 'Name of the hook.', example: 'Closed leads to CRM' }),
    description: z.string().max(2000).nullish().meta({ description: 'Free text.' }),
    url: z.string().trim().min(1, { message: 'must not be empty' }).max(2000).meta({
      description:
        'Where requests go (`urlTemplate` is accepted as its name too). https only (http when the server allows it); placeholders such as `{UniqueId}` are percent-encoded; the host cannot hold one.',
      example: 'https://crm.example.com/hooks/leads/{UniqueId}',
    }),
    method: enumNameParam(HookMethodEnum).nullish().meta({ description: 'POST (default) or PUT.' }),
    format: enumNameParam(HookFormatEnum).nullish().meta({ description: 'Json (default) or Form (application/x-www-form-urlencoded).' }),
    events: z
      .array(hookEventItem)
      .min(1, { message: 'must name at least one event' })
      .max(HOOK_EVENTS.length * 2)
      .transform(distinctEvents)
      .nullish()
      .meta({ description: 'Events the hook receives; default `["lead.statusChanged"]`.', example: ['lead.statusChanged'] }),
    campaignCode: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .nullish()
      .meta({ description: 'Only events of this campaign (it must be in the account’s projects).' }),
    projects: z.array(z.string().trim().min(1).max(500)).max(50).nullish().meta({
      description:
        'Only events of campaigns or calendars whose project matches one of these patterns (`*`, `?`) or project unique ids (GET /projects); never beyond the account’s projects.',
    }),
    leadStatus: enumNameParam(LeadStatus)
      .nullish()
      .meta({ description: 'Lead events only when the lead has (reached) this status, e.g. UserProcessed.' }),
    leadReleaseType: enumNameParam(LeadClosure).nullish().meta({
      description: 'lead.statusChanged only for leads closed this way (a LeadClosure name, e.g. Success); other events are not narrowed.',
    }),
    contentTemplate: z.string().max(20000).nullish().meta({
      description:
        'The body, with placeholders (GET /hooks/meta). With format Json it must be JSON with the placeholders inside strings; values are JSON-escaped. With Form they are form-encoded.',
      example: '{"lead":"{UniqueId}","status":"{LeadStatus}","email":"{Data.Email}"}',
    }),
    standardTemplateName: templateName.nullish(),
    enabled: bodyBoolean
      .nullish()
      .meta({ description: 'Default true. Setting it true again re-enables a hook that was disabled after failing.' }),
  })
  .meta({
    id: 'HookInput',
    description: 'A hook to create, or the whole hook to replace it with.',
    example: {
      name: 'Closed leads to CRM',
      campaignCode: 'B2B-SALES-Q4',
      leadStatus: 'UserProcessed',
      method: 'POST',
      urlTemplate: 'https://crm.example.com/hooks/leads/{UniqueId}',
      format: 'Json',
      standardTemplateName: 'StandardTemplate.PostJson',
      leadReleaseType: 'Success',
    },
  });

export const hookBodyAliases = { urlTemplate: 'url', standardTemplate: 'standardTemplateName' };

export const hookParams = z.object({
  UniqueId: uniqueIdParam('Unique id of the hook.', { max: 200 }),
});

export const deliveryParams = z.object({
  UniqueId: uniqueIdParam('Unique id of the hook.', { max: 200 }),
  DeliveryId: z.string().min(1).max(200).meta({ description: 'The delivery’s id (its webhook-id header, `msg_…`).' }),
});

export const deliveriesQuery = z.object({
  FromTime: dateTimeParam.optional().meta({ description: 'Deliveries created at or after this time; default: TimeSpan before now.' }),
  TimeSpan: timeSpanParam.optional().meta({ description: 'Length of the window from FromTime; default P1D.' }),
  Limit: positiveIntParam(1000).optional().meta({ description: 'At most this many deliveries, oldest first (default 100, at most 1000).' }),
});

const timeOut = dateTimeOut;

export const hookOut = z
  .object({
    uniqueId: z.string(),
    id: z.string().meta({ description: 'The same as uniqueId (the name clients of the live service read).' }),
    name: z.string(),
    description: z.string().optional(),
    url: z.string(),
    method: z.enum(HOOK_METHODS),
    format: z.enum(HOOK_FORMATS),
    events: z.array(z.enum(HOOK_EVENTS)),
    campaignCode: z.string().optional(),
    projects: z.array(z.string()).optional(),
    leadStatus: z.string().optional(),
    leadReleaseType: z.string().optional(),
    contentTemplate: z.string().optional(),
    standardTemplateName: z.enum(STANDARD_TEMPLATES),
    enabled: z.boolean(),
    disabledReason: z.string().optional().meta({ description: 'Why the hook was disabled when it was disabled after failing.' }),
    disabledTime: timeOut.optional(),
    failingSince: timeOut
      .optional()
      .meta({ description: 'Every attempt since this time failed; the hook is disabled when this lasts 5 days.' }),
    pausedUntil: timeOut.optional().meta({
      description: `Its last attempts all failed: the hook is paused until this time (its next retry), then tried again (circuit breaker).`,
    }),
    consecutiveFailures: z.number().int().meta({ description: 'Failed attempts in a row since the last delivered one.' }),
    refusedReason: z.string().optional().meta({
      description:
        'The address or URL of the last refused attempt and why (such a delivery fails at once); the settings that allow it are named.',
    }),
    refusedTime: timeOut.optional(),
    createdTime: timeOut,
    createdDate: timeOut.meta({ description: 'The same as createdTime (the name clients of the live service read).' }),
    modifiedTime: timeOut,
    secret: z.string().optional().meta({
      description: 'The signing secret (`whsec_…`); only in the answer to POST /hooks.',
      example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    }),
  })
  .meta({
    id: 'Hook',
    example: {
      uniqueId: '3b0f0a4e-8f3c-4bfa-9f7b-2a0f6d1c9e11',
      id: '3b0f0a4e-8f3c-4bfa-9f7b-2a0f6d1c9e11',
      name: 'Closed leads to CRM',
      url: 'https://crm.example.com/hooks/leads/{UniqueId}',
      method: 'POST',
      format: 'Json',
      events: ['lead.statusChanged'],
      campaignCode: 'B2B-2026',
      leadStatus: 'UserProcessed',
      standardTemplateName: 'Standard',
      enabled: true,
      consecutiveFailures: 0,
      createdTime: '2026-05-06T10:16:41.000+02:00',
      createdDate: '2026-05-06T10:16:41.000+02:00',
      modifiedTime: '2026-05-06T10:16:41.000+02:00',
    },
  });

export const hookListOut = z.array(hookOut);

const named = z.object({ name: z.string(), description: z.string() });

export const hookMetaOut = z
  .object({
    events: z.array(
      named.extend({
        example: z.string().meta({ description: 'The body a hook with the Standard template receives for this event (a sample).' }),
      }),
    ),
    testEvent: z.string(),
    placeholders: z.array(named),
    standardTemplates: z.array(named),
    methods: z.array(z.string()),
    formats: z.array(z.string()),
    signature: z.object({ scheme: z.string(), headers: z.array(z.string()), description: z.string() }),
  })
  .meta({
    id: 'HookMeta',
    example: {
      events: [{ name: 'lead.statusChanged', description: 'A lead changed status …', example: '{"type":"lead.statusChanged",…}' }],
      testEvent: TEST_EVENT,
      placeholders: [{ name: 'UniqueId', description: 'uniqueId of the resource …' }],
      standardTemplates: [{ name: 'Standard', description: 'The envelope …' }],
      methods: ['POST', 'PUT'],
      formats: ['Json', 'Form'],
      signature: { scheme: 'Standard Webhooks v1', headers: ['webhook-id', 'webhook-timestamp', 'webhook-signature'], description: '…' },
    },
  });

export const hookExampleOut = z
  .object({
    method: z.string(),
    url: z.string(),
    headers: z.record(z.string(), z.string()),
    body: z.string(),
  })
  .meta({
    id: 'HookRequestExample',
    example: {
      method: 'POST',
      url: 'https://crm.example.com/hooks/leads/5d1f7c3e-2a9b-4e61-b8d0-7f4a1c2e9b58',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_0f6b1e2a9c3d4e5f8a7b6c5d4e3f2a1b',
        'webhook-timestamp': '1778055401',
        'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
      },
      body: standardBodyOf('lead.statusChanged'),
    },
  });

export const queuedDeliveryOut = z
  .object({ deliveryId: z.string(), status: z.literal('pending') })
  .meta({ id: 'QueuedDelivery', example: { deliveryId: 'msg_0f6b1e2a9c3d4e5f8a7b6c5d4e3f2a1b', status: 'pending' } });

const attemptOut = z.object({
  attempt: z.number().int(),
  attemptTime: timeOut,
  outcome: z.enum(['delivered', 'http_error', 'timeout', 'network_error', 'refused', 'skipped']),
  statusCode: z.number().int().optional(),
  durationMs: z.number().int().optional(),
  error: z.string().optional(),
  responseBody: z.string().optional().meta({ description: 'The first 4 KB of the answer.' }),
  nextAttemptTime: timeOut.optional(),
});

export const deliveryListOut = z
  .array(
    z.object({
      deliveryId: z.string().meta({ description: 'The webhook-id of every attempt of this delivery.' }),
      eventType: z.string(),
      eventTime: timeOut,
      resourceId: z.string(),
      status: z.enum(['pending', 'delivered', 'failed', 'skipped']),
      attempts: z.number().int(),
      createdTime: timeOut,
      lastAttemptTime: timeOut.optional(),
      nextAttemptTime: timeOut.optional(),
      lastStatusCode: z.number().int().optional(),
      lastError: z.string().optional(),
      completedTime: timeOut.optional(),
      attemptLog: z.array(attemptOut),
    }),
  )
  .meta({
    id: 'HookDeliveries',
    example: [
      {
        deliveryId: 'msg_0f6b1e2a9c3d4e5f8a7b6c5d4e3f2a1b',
        eventType: 'lead.statusChanged',
        eventTime: '2026-05-06T10:16:41.000+02:00',
        resourceId: '5d1f7c3e-2a9b-4e61-b8d0-7f4a1c2e9b58',
        status: 'delivered',
        attempts: 2,
        createdTime: '2026-05-06T10:16:41.000+02:00',
        lastAttemptTime: '2026-05-06T10:17:12.000+02:00',
        lastStatusCode: 200,
        completedTime: '2026-05-06T10:17:12.000+02:00',
        attemptLog: [
          {
            attempt: 1,
            attemptTime: '2026-05-06T10:16:41.000+02:00',
            outcome: 'http_error',
            statusCode: 503,
            durationMs: 41,
            error: 'answered 503',
            responseBody: 'busy',
            nextAttemptTime: '2026-05-06T10:17:12.000+02:00',
          },
          {
            attempt: 2,
            attemptTime: '2026-05-06T10:17:12.000+02:00',
            outcome: 'delivered',
            statusCode: 200,
            durationMs: 12,
            responseBody: 'ok',
          },
        ],
      },
    ],
  });

// ---- serializers -------------------------------------------------------------------------------

/** How an answer writes DateTimes. */
interface TimeFormat {
  zone: string;
  format: DateTimeFormatName;
}

export function hookToJson(hook: HookRecord, env: TimeFormat, withSecret = false): z.input<typeof hookOut> {
  const time = (d: Date | null) => (d === null ? undefined : formatDateTime(d, env.zone, env.format));
  const created = formatDateTime(hook.createdTime, env.zone, env.format);
  return {
    uniqueId: hook.uniqueId,
    id: hook.uniqueId,
    name: hook.name,
    description: hook.description ?? undefined,
    url: hook.url,
    method: hook.method,
    format: hook.format,
    events: hook.events,
    campaignCode: hook.campaignCode ?? undefined,
    projects: hook.projects ?? undefined,
    leadStatus: hook.leadStatus ?? undefined,
    leadReleaseType: hook.leadReleaseType ?? undefined,
    contentTemplate: hook.contentTemplate ?? undefined,
    standardTemplateName: hook.standardTemplate,
    enabled: hook.enabled,
    disabledReason: hook.disabledReason ?? undefined,
    disabledTime: time(hook.disabledTime),
    failingSince: time(hook.failingSince),
    pausedUntil: hook.pausedUntil !== null && hook.pausedUntil.getTime() > Date.now() ? time(hook.pausedUntil) : undefined,
    consecutiveFailures: hook.consecutiveFailures,
    refusedReason: hook.refusedReason ?? undefined,
    refusedTime: time(hook.refusedTime),
    createdTime: created,
    createdDate: created,
    modifiedTime: formatDateTime(hook.modifiedTime, env.zone, env.format),
    ...(withSecret ? { secret: hook.secret } : {}),
  };
}

export function deliveriesToJson(deliveries: DeliveryRecord[], env: TimeFormat): z.input<typeof deliveryListOut> {
  const time = (d: Date | null) => (d === null ? undefined : formatDateTime(d, env.zone, env.format));
  const opt = <T>(v: T | null) => v ?? undefined;
  return deliveries.map((d) => ({
    deliveryId: d.uniqueId,
    eventType: d.eventType,
    eventTime: formatDateTime(d.eventTime, env.zone, env.format),
    resourceId: d.resourceId,
    status: d.status,
    attempts: d.attempts,
    createdTime: formatDateTime(d.createdTime, env.zone, env.format),
    lastAttemptTime: time(d.lastAttemptTime),
    nextAttemptTime: time(d.nextAttemptTime),
    lastStatusCode: opt(d.lastStatusCode),
    lastError: opt(d.lastError),
    completedTime: time(d.completedTime),
    attemptLog: d.attemptLog.map((a) => ({
      attempt: a.attempt,
      attemptTime: formatDateTime(a.attemptTime, env.zone, env.format),
      outcome: a.outcome as z.input<typeof attemptOut>['outcome'],
      statusCode: opt(a.statusCode),
      durationMs: opt(a.durationMs),
      error: opt(a.error),
      responseBody: opt(a.responseBody),
      nextAttemptTime: time(a.nextAttemptTime),
    })),
  }));
}

/** What GET /hooks/meta answers: every event kind with a sample body, the placeholders, templates, methods, formats and signature. */
export function hookMeta(): z.input<typeof hookMetaOut> {
  return {
    events: HOOK_EVENTS.map((name) => ({ name, description: HOOK_EVENT_DESCRIPTIONS[name], example: standardBodyOf(name) })),
    testEvent: TEST_EVENT,
    placeholders: Object.entries(PLACEHOLDERS).map(([name, description]) => ({ name: `{${name}}`, description })),
    standardTemplates: [
      ...Object.entries(STANDARD_TEMPLATE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
      ...Object.entries(LIVE_SERVICE_TEMPLATES).map(([name, shape]) => ({
        name: `StandardTemplate.${name}`,
        description: `The live service's name: the Standard envelope, sent with ${shape.method} as ${shape.format}.`,
      })),
    ],
    methods: [...HOOK_METHODS],
    formats: [...HOOK_FORMATS],
    signature: {
      scheme: 'Standard Webhooks v1',
      headers: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
      description:
        'HMAC-SHA256 over `webhook-id.webhook-timestamp.body` with the hook secret (verify with the standardwebhooks package; a Form body with `verify(body, headers, { jsonParse: false })`, since `verify` parses the body as JSON by default). webhook-id is the delivery id, the same on every retry: use it to de-duplicate.',
    },
  };
}
