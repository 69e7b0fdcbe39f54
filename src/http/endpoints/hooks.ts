import { defineEndpoint, Endpoint, right } from '../endpoint';
import { forbidden, HttpProblem, invalidParameter, notFound, ProblemFieldError } from '../problem';
import type { Knex } from 'knex';
import type { Settings } from '../../config/settings';
import type { DateTimeFormatName } from '../../domain/enums';
import {
  deliveriesQuery,
  deliveryListOut,
  deliveryParams,
  hookBody,
  hookBodyAliases,
  hookExampleOut,
  hookListOut,
  hookMetaOut,
  hookOut,
  hookParams,
  queuedDeliveryOut,
} from '../schemas/hooks';
import type { AccountContext } from '../../domain/account';
import { formatDateTime } from '../../domain/datetime';
import {
  contentTemplateProblems,
  dataFieldsUsed,
  DEFAULT_HOOK_EVENTS,
  EVENT_RESOURCE,
  HOOK_EVENT_DESCRIPTIONS,
  HOOK_EVENTS,
  HOOK_FORMATS,
  HOOK_METHODS,
  HookMessage,
  isLeadEvent,
  PLACEHOLDERS,
  STANDARD_TEMPLATE_DESCRIPTIONS,
  TEST_EVENT,
  urlTemplateProblems,
} from '../../domain/hooks';
import {
  calendarEventMessage,
  callMessage,
  leadMessage,
  sampleCalendarEventSnapshot,
  sampleCallSnapshot,
  sampleLeadSnapshot,
} from '../../domain/hookMessages';
import { signedHookRequest } from '../../domain/hookSignature';
import { classifyAddress, isAllowListed, literalAddress } from '../../domain/hookAddress';
import { addTimeSpan } from '../../domain/timespan';
import {
  createHook,
  deleteHook,
  findCampaignForHook,
  findHook,
  HookInput,
  HookRecord,
  listDeliveries,
  listHooks,
  newMessageId,
  queueTestDelivery,
  redeliver,
  replaceHook,
} from '../../data/hookRepository';
import { leadDefinitionFieldsById } from '../../data/hookDeliveryRepository';
import { version } from '../../../package.json';

/**
 * The WebHooks resource: an account's hooks, what they can say (meta), what one would send
 * (example), a test delivery, the deliveries log and redelivery. Deliveries themselves are the
 * workers' (src/jobs/hookWorker.ts); events are written by the changes (src/data/hookEvents.ts).
 */

const TAGS = ['Hooks'];
type Body = import('zod').output<typeof hookBody>;

/** What the hook handlers use: the request's database, clock and DateTime format, and the server's URL rules. */
interface HookEnv {
  db: Knex;
  clock: () => Date;
  zone: string;
  format: DateTimeFormatName;
  rules: HookRules;
}

export type HookRules = Pick<Settings, 'HOOKS_ALLOW_HTTP' | 'HOOKS_ALLOWED_HOSTS'>;

function hookToJson(hook: HookRecord, env: HookEnv, withSecret = false) {
  const time = (d: Date | null) => (d === null ? undefined : formatDateTime(d, env.zone, env.format));
  return {
    uniqueId: hook.uniqueId,
    name: hook.name,
    description: hook.description ?? undefined,
    url: hook.url,
    method: hook.method,
    format: hook.format,
    events: hook.events,
    campaignCode: hook.campaignCode ?? undefined,
    projects: hook.projects ?? undefined,
    leadStatus: hook.leadStatus ?? undefined,
    contentTemplate: hook.contentTemplate ?? undefined,
    standardTemplateName: hook.standardTemplate,
    enabled: hook.enabled,
    disabledReason: hook.disabledReason ?? undefined,
    disabledTime: time(hook.disabledTime),
    failingSince: time(hook.failingSince),
    createdTime: formatDateTime(hook.createdTime, env.zone, env.format),
    modifiedTime: formatDateTime(hook.modifiedTime, env.zone, env.format),
    ...(withSecret ? { secret: hook.secret } : {}),
  };
}

function badBody(errors: ProblemFieldError[]): HttpProblem {
  return new HttpProblem('invalid_body', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
}

/**
 * Everything about a hook body that needs more than its schema: the URL and content templates,
 * the campaign (unknown 400, outside the account's projects 403), the account's rights on the
 * events' resources (403), and filters that cannot apply. Nothing is stored when this throws.
 */
async function checkedInput(body: Body, account: AccountContext, env: HookEnv): Promise<HookInput> {
  const { rules: settings, db } = env;
  const errors: ProblemFieldError[] = [];
  const events = body.events ? [...new Set(body.events)] : DEFAULT_HOOK_EVENTS;
  const format = body.format ?? 'Json';
  for (const message of urlTemplateProblems(body.url, { allowHttp: settings.HOOKS_ALLOW_HTTP })) errors.push({ field: 'url', message });
  if (errors.length === 0) {
    const host = new URL(body.url.replace(/\{[^}]*\}/g, 'x')).hostname;
    const literal = literalAddress(host);
    if (literal !== undefined && !isAllowListed(literal, settings.HOOKS_ALLOWED_HOSTS) && !classifyAddress(literal).allowed) {
      errors.push({ field: 'url', message: `${literal} is a ${classifyAddress(literal).range} address, which hooks may not reach` });
    }
  }
  const contentTemplate = body.contentTemplate ?? null;
  if (contentTemplate !== null)
    for (const message of contentTemplateProblems(contentTemplate, format)) errors.push({ field: 'contentTemplate', message });
  const leadStatus = body.leadStatus ?? null;
  if (leadStatus !== null && !events.some(isLeadEvent)) {
    errors.push({ field: 'leadStatus', message: 'applies to lead events only, and the hook has none' });
  }
  if (errors.length > 0) throw badBody(errors);

  const missing = [...new Set(events.map((e) => EVENT_RESOURCE[e]))].filter((r) => !(account.rights[r] ?? []).includes('Get'));
  if (missing.length > 0) throw forbidden(`this account lacks the Get right on ${missing.join(', ')}, which the hook's events are about`);

  const campaignCode = body.campaignCode ?? null;
  if (campaignCode !== null) {
    const campaign = await findCampaignForHook(db, campaignCode, account.projectPatterns);
    if (!campaign) throw badBody([{ field: 'campaignCode', message: `no campaign has the code ${JSON.stringify(campaignCode)}` }]);
    if (!campaign.visible) throw forbidden(`campaign ${campaignCode} belongs to a project outside this account's project rights`);
    // With a campaign known, {Data.X} must name a field of its lead definition.
    const fields = (await leadDefinitionFieldsById(db, campaign.leadDefinitionId)).map((f) => f.name.toLowerCase());
    const unknown = [body.url, contentTemplate ?? ''].flatMap(dataFieldsUsed).filter((f) => !fields.includes(f.toLowerCase()));
    if (unknown.length > 0) {
      throw badBody([
        {
          field: contentTemplate !== null ? 'contentTemplate' : 'url',
          message: `unknown placeholder ${unknown.map((f) => `{Data.${f}}`).join(', ')}: no such field in the campaign's lead definition`,
        },
      ]);
    }
  }
  return {
    name: body.name,
    description: body.description ?? null,
    url: body.url,
    method: body.method ?? 'POST',
    format,
    events,
    campaignCode,
    projects: body.projects && body.projects.length > 0 ? body.projects : null,
    leadStatus,
    contentTemplate,
    standardTemplate: body.standardTemplateName ?? 'Standard',
    enabled: body.enabled ?? true,
  };
}

async function ownHook(env: HookEnv, account: AccountContext, uniqueId: string): Promise<HookRecord> {
  const hook = await findHook(env.db, account.id, uniqueId);
  if (!hook) throw notFound(`no hook ${uniqueId}`);
  return hook;
}

/** A sample lead of the hook's campaign (or a made-up one), for the example and test deliveries. */
async function sampleLead(env: HookEnv, account: AccountContext, hook: HookRecord) {
  const now = env.clock().getTime();
  if (hook.campaignCode !== null) {
    const campaign = await findCampaignForHook(env.db, hook.campaignCode, account.projectPatterns);
    if (campaign?.visible) {
      const fields = await leadDefinitionFieldsById(env.db, campaign.leadDefinitionId);
      return { ...sampleLeadSnapshot({ now, campaign, fields }), own: true };
    }
  }
  return { ...sampleLeadSnapshot({ now }), own: false };
}

/** The /hooks endpoints; `rules` are the server's hook URL settings (https only, allow-listed hosts). */
export function hookEndpoints(rules: HookRules): Endpoint[] {
  const listHooksEndpoint = defineEndpoint({
    service: 'hooks.list',
    operationId: 'listHooks',
    method: 'get',
    path: '/hooks',
    summary: 'The account’s hooks',
    description: 'Hooks created by this account (other accounts’ hooks are never visible), oldest first. The secret is not shown.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    response: hookListOut,
    async handler({ account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hooks = await listHooks(env.db, account.id);
      return { body: hooks.map((h) => hookToJson(h, env)), title: 'Hooks' };
    },
  });

  const createHookEndpoint = defineEndpoint({
    service: 'hooks.create',
    operationId: 'createHook',
    method: 'post',
    path: '/hooks',
    summary: 'Create a hook',
    description:
      'Answers 201 with the hook and its signing `secret` (`whsec_…`), shown only here. Both body styles in use are accepted (`urlTemplate` is `url`; names are case-insensitive). ' +
      'A bad URL (scheme, host, unknown placeholder), an unknown event, an unknown placeholder or a content template that is not JSON for format Json is a 400; ' +
      'an unknown campaign a 400; a campaign outside the account’s projects, or events about resources the account may not read, a 403. Nothing is stored then.',
    tags: TAGS,
    access: right('WebHooks', 'Post'),
    representations: ['json'],
    body: hookBody,
    bodyAliases: hookBodyAliases,
    response: hookOut,
    successStatus: 201,
    errorStatuses: [403],
    async handler({ body, account, res, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const input = await checkedInput(body, account, env);
      const hook = await createHook(env.db, account.id, input);
      res.location(`/api/hooks/${encodeURIComponent(hook.uniqueId)}`);
      return { status: 201, body: hookToJson(hook, env, true) };
    },
  });

  const hookMetaEndpoint = defineEndpoint({
    service: 'hooks.meta',
    operationId: 'getHookMeta',
    method: 'get',
    path: '/hooks/meta',
    summary: 'Events, placeholders and templates hooks can use',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    response: hookMetaOut,
    handler() {
      return Promise.resolve({
        title: 'Hooks: events, placeholders, templates',
        body: {
          events: HOOK_EVENTS.map((name) => ({ name, description: HOOK_EVENT_DESCRIPTIONS[name] })),
          testEvent: TEST_EVENT,
          placeholders: Object.entries(PLACEHOLDERS).map(([name, description]) => ({ name: `{${name}}`, description })),
          standardTemplates: Object.entries(STANDARD_TEMPLATE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
          methods: [...HOOK_METHODS],
          formats: [...HOOK_FORMATS],
          signature: {
            scheme: 'Standard Webhooks v1',
            headers: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
            description:
              'HMAC-SHA256 over `webhook-id.webhook-timestamp.body` with the hook secret (verify with the standardwebhooks package). webhook-id is the delivery id, the same on every retry: use it to de-duplicate.',
          },
        },
      });
    },
  });

  const getHookEndpoint = defineEndpoint({
    service: 'hooks.get',
    operationId: 'getHook',
    method: 'get',
    path: '/hooks/{UniqueId}',
    summary: 'One hook',
    description: 'A hook of this account; 404 for any other. The secret is not shown.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    params: hookParams,
    response: hookOut,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await ownHook(env, account, params.UniqueId);
      return { body: hookToJson(hook, env), title: `Hook ${hook.name}` };
    },
  });

  const replaceHookEndpoint = defineEndpoint({
    service: 'hooks.update',
    operationId: 'updateHook',
    method: 'put',
    path: '/hooks/{UniqueId}',
    summary: 'Replace a hook',
    description:
      'The whole hook, validated as on create (omitted optional properties take their defaults); the secret stays. `enabled: true` re-enables a hook that was disabled after failing and clears its reason.',
    tags: TAGS,
    access: right('WebHooks', 'Put'),
    representations: ['json'],
    params: hookParams,
    body: hookBody,
    bodyAliases: hookBodyAliases,
    response: hookOut,
    errorStatuses: [403, 404],
    async handler({ params, body, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      await ownHook(env, account, params.UniqueId);
      const input = await checkedInput(body, account, env);
      const hook = await replaceHook(env.db, account.id, params.UniqueId, input);
      if (!hook) throw notFound(`no hook ${params.UniqueId}`);
      return { body: hookToJson(hook, env) };
    },
  });

  const deleteHookEndpoint = defineEndpoint({
    service: 'hooks.delete',
    operationId: 'deleteHook',
    method: 'delete',
    path: '/hooks/{UniqueId}',
    summary: 'Delete a hook',
    description: 'Deletes the hook and its deliveries log; pending deliveries are not sent. Answers 204.',
    tags: TAGS,
    access: right('WebHooks', 'Delete'),
    representations: ['json'],
    params: hookParams,
    successStatus: 204,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      if (!(await deleteHook(env.db, account.id, params.UniqueId))) throw notFound(`no hook ${params.UniqueId}`);
      return { status: 204 };
    },
  });

  const hookExampleEndpoint = defineEndpoint({
    service: 'hooks.example',
    operationId: 'getHookExample',
    method: 'get',
    path: '/hooks/{UniqueId}/example',
    summary: 'The request this hook would send',
    description:
      'Rendered for the hook’s first event from a real-looking sample (a lead of the hook’s campaign when it has one), with the headers and signature a delivery carries. Nothing is sent.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    params: hookParams,
    response: hookExampleOut,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await ownHook(env, account, params.UniqueId);
      const now = env.clock().getTime();
      const type = hook.events[0] ?? TEST_EVENT;
      const options = { type, occurredTime: now, zone, dateTimeFormat };
      let message: HookMessage;
      if (type === 'call.ended') message = callMessage(sampleCallSnapshot(now, hook.campaignCode ?? undefined), options);
      else if (type.startsWith('calendarEvent.')) message = calendarEventMessage(sampleCalendarEventSnapshot(now), options);
      else {
        const sample = await sampleLead(env, account, hook);
        message = leadMessage(sample.snapshot, {
          ...options,
          entryAccess: account.entryAccess,
          fields: sample.fields,
          ...(type === 'lead.statusChanged' ? { previousStatus: 'New' as const } : {}),
        });
      }
      const request = signedHookRequest(hook, message, newMessageId(), env.clock(), `lead-call-api-hooks/${version}`);
      return { body: request, title: `Hook ${hook.name}: example request` };
    },
  });

  const testHookEndpoint = defineEndpoint({
    service: 'hooks.test',
    operationId: 'testHook',
    method: 'post',
    path: '/hooks/{UniqueId}/test',
    summary: 'Send a test delivery',
    description: 'Queues a `hook.test` delivery of a sample lead to this hook now (202); follow it in the deliveries log.',
    tags: TAGS,
    access: right('WebHooks', 'Post'),
    representations: ['json'],
    params: hookParams,
    response: queuedDeliveryOut,
    successStatus: 202,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await ownHook(env, account, params.UniqueId);
      const sample = await sampleLead(env, account, hook);
      const snapshot = sample.own ? sample.snapshot : { ...sample.snapshot, sampleFields: sample.fields };
      const deliveryId = await queueTestDelivery(env.db, hook.id, snapshot, env.clock());
      return { status: 202, body: { deliveryId, status: 'pending' } };
    },
  });

  const hookDeliveriesEndpoint = defineEndpoint({
    service: 'hooks.deliveries',
    operationId: 'listHookDeliveries',
    method: 'get',
    path: '/hooks/{UniqueId}/deliveries',
    summary: 'The hook’s deliveries log',
    description:
      'Deliveries created in [FromTime, FromTime + TimeSpan) (default: the last day), oldest first, each with its attempts: outcome, response code, duration, the first 4 KB of the answer, and the next attempt.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    params: hookParams,
    query: deliveriesQuery,
    response: deliveryListOut,
    errorStatuses: [404],
    async handler({ params, query, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await ownHook(env, account, params.UniqueId);
      const now = env.clock();
      const from = query.FromTime ?? new Date(now.getTime() - 86_400_000);
      if (query.TimeSpan?.negative) throw invalidParameter('TimeSpan', 'must not be negative');
      const to = query.TimeSpan ? addTimeSpan(from, query.TimeSpan, zone) : new Date(from.getTime() + 86_400_000);
      if (Number.isNaN(to.getTime())) throw invalidParameter('TimeSpan', 'reaches beyond the year 9999');
      const deliveries = await listDeliveries(env.db, hook.id, from, to, query.Limit ?? 100);
      const time = (d: Date | null) => (d === null ? undefined : formatDateTime(d, zone, dateTimeFormat));
      const opt = <T>(v: T | null) => v ?? undefined;
      return {
        title: `Hook ${hook.name}: deliveries`,
        body: deliveries.map((d) => ({
          deliveryId: d.uniqueId,
          eventType: d.eventType,
          eventTime: formatDateTime(d.eventTime, zone, dateTimeFormat),
          resourceId: d.resourceId,
          status: d.status,
          attempts: d.attempts,
          createdTime: formatDateTime(d.createdTime, zone, dateTimeFormat),
          lastAttemptTime: time(d.lastAttemptTime),
          nextAttemptTime: time(d.nextAttemptTime),
          lastStatusCode: opt(d.lastStatusCode),
          lastError: opt(d.lastError),
          completedTime: time(d.completedTime),
          attemptLog: d.attemptLog.map((a) => ({
            attempt: a.attempt,
            attemptTime: formatDateTime(a.attemptTime, zone, dateTimeFormat),
            outcome: a.outcome,
            statusCode: opt(a.statusCode),
            durationMs: opt(a.durationMs),
            error: opt(a.error),
            responseBody: opt(a.responseBody),
            nextAttemptTime: time(a.nextAttemptTime),
          })),
        })),
      };
    },
  });

  const redeliverEndpoint = defineEndpoint({
    service: 'hooks.redeliver',
    operationId: 'redeliverHookDelivery',
    method: 'post',
    path: '/hooks/{UniqueId}/deliveries/{DeliveryId}/redeliver',
    summary: 'Send a delivery again',
    description:
      'A finished delivery (delivered, failed, skipped) is sent again with the same webhook-id and a new retry window; a pending one is tried now instead of at its next attempt time. Answers 202.',
    tags: TAGS,
    access: right('WebHooks', 'Post'),
    representations: ['json'],
    params: deliveryParams,
    response: queuedDeliveryOut,
    successStatus: 202,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await ownHook(env, account, params.UniqueId);
      const done = await redeliver(env.db, hook.id, params.DeliveryId);
      if (!done) throw notFound(`hook ${params.UniqueId} has no delivery ${params.DeliveryId}`);
      return { status: 202, body: { deliveryId: done.uniqueId, status: 'pending' } };
    },
  });

  /** `/hooks/meta` before `/hooks/{UniqueId}`, so the literal path wins. */
  return [
    listHooksEndpoint,
    createHookEndpoint,
    hookMetaEndpoint,
    getHookEndpoint,
    replaceHookEndpoint,
    deleteHookEndpoint,
    hookExampleEndpoint,
    testHookEndpoint,
    hookDeliveriesEndpoint,
    redeliverEndpoint,
  ];
}
