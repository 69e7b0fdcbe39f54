import { defineEndpoint, Endpoint, right } from '../endpoint';
import { forbidden, HttpProblem, invalidParameter, notFound } from '../problem';
import type { Settings } from '../../config/settings';
import {
  deliveriesQuery,
  deliveryListOut,
  deliveryParams,
  hookBody,
  hookBodyAliases,
  hookExampleOut,
  hookListOut,
  hookMeta,
  hookMetaOut,
  hookOut,
  hookParams,
  hookToJson,
  deliveriesToJson,
  queuedDeliveryOut,
} from '../schemas/hooks';
import { addTimeSpan, TimeSpan } from '../../domain/timespan';
import { listDeliveries, listHooks, redeliver } from '../../data/hookRepository';
import {
  createHookFromBody,
  deleteOwnHook,
  HookEnv,
  hookExample,
  HookRejection,
  ownHook,
  queueHookTest,
  replaceHookFromBody,
} from '../../ingest/hookUseCases';

/**
 * The WebHooks resource: an account's hooks, what they can say (meta), what one would send
 * (example), a test delivery, the deliveries log and redelivery. The use cases are in
 * src/ingest/hookUseCases.ts; deliveries themselves are the workers' (src/jobs/hookWorker.ts);
 * events are written by the changes (src/data/hookEvents.ts).
 */

const TAGS = ['Hooks'];

export type HookRules = Pick<Settings, 'HOOKS_ALLOW_HTTP' | 'HOOKS_ALLOWED_HOSTS'>;

/** A use case's rejection as the problem the client gets. */
async function answered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof HookRejection)) throw err;
    if (err.kind === 'missing') throw notFound(err.message);
    if (err.kind === 'forbidden') throw forbidden(err.message);
    throw new HttpProblem('invalid_body', err.message, err.errors);
  }
}

const DAY_MS = 86_400_000;

/** [from, from + span) (a day without a span); a 400 when it reaches beyond the year 9999. */
function windowFrom(from: Date, span: TimeSpan | undefined, zone: string): { from: Date; to: Date } {
  const to = span ? addTimeSpan(from, span, zone) : new Date(from.getTime() + DAY_MS);
  if (Number.isNaN(to.getTime())) throw invalidParameter('TimeSpan', 'reaches beyond the year 9999');
  return { from, to };
}

/** The last span (a day without one) up to `now`; no delivery is older than 1970, so a longer span starts there. */
function windowUntil(now: Date, span: TimeSpan | undefined, zone: string): { from: Date; to: Date } {
  const start = span ? addTimeSpan(now, { ...span, negative: true }, zone).getTime() : now.getTime() - DAY_MS;
  return { from: new Date(Number.isNaN(start) ? 0 : Math.max(start, 0)), to: now };
}

/** The /hooks endpoints; `rules` are the server's hook URL settings (https only, allow-listed hosts). */
export function hookEndpoints(settings: HookRules): Endpoint[] {
  const rules = { allowHttp: settings.HOOKS_ALLOW_HTTP, allowedHosts: settings.HOOKS_ALLOWED_HOSTS };
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
    dateTimes: true,
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
    dateTimes: true,
    body: hookBody,
    bodyAliases: hookBodyAliases,
    response: hookOut,
    successStatus: 201,
    errorStatuses: [403],
    async handler({ body, account, res, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await answered(() => createHookFromBody(body, account, env));
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
      return Promise.resolve({ title: 'Hooks: events, placeholders, templates', body: hookMeta() });
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
    dateTimes: true,
    params: hookParams,
    response: hookOut,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await answered(() => ownHook(env, account, params.UniqueId));
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
    dateTimes: true,
    params: hookParams,
    body: hookBody,
    bodyAliases: hookBodyAliases,
    response: hookOut,
    errorStatuses: [403, 404],
    async handler({ params, body, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await answered(() => replaceHookFromBody(params.UniqueId, body, account, env));
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
      await answered(() => deleteOwnHook(env, account, params.UniqueId));
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
      'Rendered for the hook’s first event from a real-looking sample (a lead of the hook’s campaign when it has one), with the headers and signature a delivery carries, and DateTimes in the account’s format as deliveries write them. Nothing is sent.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    // A fresh webhook-id, timestamp and signature each time.
    changesEveryTime: true,
    params: hookParams,
    response: hookExampleOut,
    errorStatuses: [404],
    async handler({ params, account, db, clock, zone }) {
      // What a delivery would send: deliveries write the account's DateTime format, whatever this request prefers.
      const env: HookEnv = { db, clock, zone, format: account.dateTimeFormat, rules };
      const { hook, request } = await answered(() => hookExample(env, account, params.UniqueId));
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
      const deliveryId = await answered(() => queueHookTest(env, account, params.UniqueId));
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
      'Deliveries created in [FromTime, FromTime + TimeSpan) (without FromTime: the last TimeSpan up to now, by default the last day), oldest first, each with its attempts: outcome, response code, duration, the first 4 KB of the answer, and the next attempt.',
    tags: TAGS,
    access: right('WebHooks', 'Get'),
    representations: ['json', 'html'],
    dateTimes: true,
    params: hookParams,
    query: deliveriesQuery,
    response: deliveryListOut,
    errorStatuses: [404],
    async handler({ params, query, account, db, clock, zone, dateTimeFormat }) {
      const env: HookEnv = { db, clock, zone, format: dateTimeFormat, rules };
      const hook = await answered(() => ownHook(env, account, params.UniqueId));
      const now = env.clock();
      if (query.TimeSpan?.negative) throw invalidParameter('TimeSpan', 'must not be negative');
      const { from, to } = query.FromTime ? windowFrom(query.FromTime, query.TimeSpan, zone) : windowUntil(now, query.TimeSpan, zone);
      const deliveries = await listDeliveries(env.db, hook.id, from, to, query.Limit ?? 100);
      return { title: `Hook ${hook.name}: deliveries`, body: deliveriesToJson(deliveries, env) };
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
      const hook = await answered(() => ownHook(env, account, params.UniqueId));
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
