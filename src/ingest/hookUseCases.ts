import type { Knex } from 'knex';
import type { AccountContext } from '../domain/account';
import type { DateTimeFormatName, LeadClosureName, LeadStatusName } from '../domain/enums';
import {
  contentTemplateProblems,
  dataFieldsUsed,
  DEFAULT_HOOK_EVENTS,
  EVENT_RESOURCE,
  HookEventName,
  HookFormat,
  HookMethod,
  isLeadEvent,
  TemplateChoice,
  TEST_EVENT,
  urlTemplateProblems,
} from '../domain/hooks';
import { EventKind, samplePayload, SampleSource } from '../domain/hookEventKinds';
import { sampleLeadSnapshot } from '../domain/hookMessages';
import { signedHookRequest, SignedRequest } from '../domain/hookSignature';
import { classifyAddress, isAllowListed, knownAddress, refusedAddressMessage } from '../domain/hookAddress';
import {
  createHook,
  deleteHook,
  findCampaignForHook,
  findHook,
  HookInput,
  HookRecord,
  newMessageId,
  queueTestDelivery,
  replaceHook,
} from '../data/hookRepository';
import { leadDefinitionFieldsById } from '../data/hookDeliveryRepository';
import { version } from '../../package.json';

/**
 * The hook use cases behind the /hooks endpoints: checking a hook body against what the schema
 * cannot see (URL rules, campaign, rights, filters), creating and replacing, deleting with its
 * pending deliveries, the example request and the test delivery. The endpoints parse, call one
 * of these and serialize; problems come back as HookRejection, which they turn into answers.
 */

/** A hook body as the schema parsed it. */
export interface HookBody {
  name: string;
  description?: string | null | undefined;
  url: string;
  method?: HookMethod | null | undefined;
  format?: HookFormat | null | undefined;
  events?: HookEventName[] | null | undefined;
  campaignCode?: string | null | undefined;
  projects?: string[] | null | undefined;
  leadStatus?: LeadStatusName | null | undefined;
  leadReleaseType?: LeadClosureName | null | undefined;
  contentTemplate?: string | null | undefined;
  standardTemplateName?: TemplateChoice | null | undefined;
  enabled?: boolean | null | undefined;
}

/** The server's rules for hook URLs (HOOKS_ALLOW_HTTP, HOOKS_ALLOWED_HOSTS). */
interface HookUrlRules {
  allowHttp: boolean;
  allowedHosts: readonly string[];
}

/** What the use cases need from the request. */
export interface HookEnv {
  db: Knex;
  clock: () => Date;
  zone: string;
  format: DateTimeFormatName;
  rules: HookUrlRules;
}

/** Why a hook body or request cannot be served: `invalid` (400, with field errors), `forbidden` (403) or `missing` (404). */
export class HookRejection extends Error {
  constructor(
    readonly kind: 'invalid' | 'forbidden' | 'missing',
    message: string,
    readonly errors: { field: string; message: string }[] = [],
  ) {
    super(message);
  }
}

const missingHook = (uniqueId: string) => new HookRejection('missing', `no hook ${uniqueId}`);

const invalid = (errors: { field: string; message: string }[]) =>
  new HookRejection('invalid', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);

/**
 * Why hooks may not reach the URL's host when its address is known without DNS (a literal
 * address, or `localhost`) and refused (loopback, private, ...), unless it is allow-listed;
 * any other host name is checked at delivery, on the address it resolves to then.
 */
function refusedHost(url: string, rules: HookUrlRules): string | undefined {
  const host = new URL(url.replace(/\{[^}]*\}/g, 'x')).hostname.replace(/^\[|\]$/g, '');
  const address = knownAddress(host);
  if (address === undefined || isAllowListed(host, rules.allowedHosts)) return undefined;
  const verdict = classifyAddress(address);
  return verdict.allowed ? undefined : refusedAddressMessage(host, address, verdict.range);
}

/**
 * Everything about a hook body that needs more than its schema: the URL and content templates,
 * the template name against method and format, the campaign (unknown 400, outside the account's
 * projects 403), the account's rights on the events' resources (403), and filters that cannot
 * apply. Nothing is stored when this throws.
 */
async function checkedHookInput(body: HookBody, account: AccountContext, env: HookEnv): Promise<HookInput> {
  const { rules, db } = env;
  const errors: { field: string; message: string }[] = [];
  const events = body.events ? [...new Set(body.events)] : DEFAULT_HOOK_EVENTS;
  const template = body.standardTemplateName ?? { template: 'Standard' };
  for (const [field, given, implied] of [
    ['method', body.method, template.method],
    ['format', body.format, template.format],
  ] as const) {
    if (given != null && implied !== undefined && given !== implied) {
      errors.push({ field, message: `is ${given}, but the standardTemplateName sends ${implied}` });
    }
  }
  const method = body.method ?? template.method ?? 'POST';
  const format = body.format ?? template.format ?? 'Json';
  for (const message of urlTemplateProblems(body.url, { allowHttp: rules.allowHttp })) errors.push({ field: 'url', message });
  if (!errors.some((e) => e.field === 'url')) {
    const refused = refusedHost(body.url, rules);
    if (refused !== undefined) errors.push({ field: 'url', message: refused });
  }
  const contentTemplate = body.contentTemplate ?? null;
  if (contentTemplate !== null)
    for (const message of contentTemplateProblems(contentTemplate, format)) errors.push({ field: 'contentTemplate', message });
  const leadStatus = body.leadStatus ?? null;
  if (leadStatus !== null && !events.some(isLeadEvent)) {
    errors.push({ field: 'leadStatus', message: 'applies to lead events only, and the hook has none' });
  }
  const leadReleaseType = body.leadReleaseType ?? null;
  if (leadReleaseType !== null && !events.includes('lead.statusChanged')) {
    errors.push({ field: 'leadReleaseType', message: 'narrows lead.statusChanged, which the hook does not receive' });
  }
  if (errors.length > 0) throw invalid(errors);

  const missing = [...new Set(events.map((e) => EVENT_RESOURCE[e]))].filter((r) => !(account.rights[r] ?? []).includes('Get'));
  if (missing.length > 0) {
    throw new HookRejection('forbidden', `this account lacks the Get right on ${missing.join(', ')}, which the hook's events are about`);
  }

  const campaignCode = body.campaignCode ?? null;
  if (campaignCode !== null) {
    const campaign = await findCampaignForHook(db, campaignCode, account.projectPatterns);
    if (!campaign) throw invalid([{ field: 'campaignCode', message: `no campaign has the code ${JSON.stringify(campaignCode)}` }]);
    if (!campaign.visible)
      throw new HookRejection('forbidden', `campaign ${campaignCode} belongs to a project outside this account's project rights`);
    // With a campaign known, {Data.X} must name a field of its lead definition.
    const fields = (await leadDefinitionFieldsById(db, campaign.leadDefinitionId)).map((f) => f.name.toLowerCase());
    const unknown = [body.url, contentTemplate ?? ''].flatMap(dataFieldsUsed).filter((f) => !fields.includes(f.toLowerCase()));
    if (unknown.length > 0) {
      throw invalid([
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
    method,
    format,
    events,
    campaignCode,
    projects: body.projects && body.projects.length > 0 ? body.projects : null,
    leadStatus,
    leadReleaseType,
    contentTemplate,
    standardTemplate: template.template,
    enabled: body.enabled ?? true,
  };
}

export async function ownHook(env: HookEnv, account: AccountContext, uniqueId: string): Promise<HookRecord> {
  const hook = await findHook(env.db, account.id, uniqueId);
  if (!hook) throw missingHook(uniqueId);
  return hook;
}

export async function createHookFromBody(body: HookBody, account: AccountContext, env: HookEnv): Promise<HookRecord> {
  return createHook(env.db, account.id, await checkedHookInput(body, account, env));
}

export async function replaceHookFromBody(uniqueId: string, body: HookBody, account: AccountContext, env: HookEnv): Promise<HookRecord> {
  await ownHook(env, account, uniqueId);
  const hook = await replaceHook(env.db, account.id, uniqueId, await checkedHookInput(body, account, env));
  if (!hook) throw missingHook(uniqueId);
  return hook;
}

/** Deletes the hook and cancels its pending deliveries, in one transaction. */
export async function deleteOwnHook(env: HookEnv, account: AccountContext, uniqueId: string): Promise<void> {
  if (!(await deleteHook(env.db, account.id, uniqueId))) throw missingHook(uniqueId);
}

/** A sample lead of the hook's campaign (or a made-up one), for the example and test deliveries. */
async function sampleSource(env: HookEnv, account: AccountContext, hook: HookRecord): Promise<SampleSource & { own: boolean }> {
  const now = env.clock().getTime();
  const base = { now, ...(hook.campaignCode !== null ? { campaignCode: hook.campaignCode } : {}) };
  // A lead the hook's own filters would let through.
  const filters = { now, status: hook.leadStatus, closure: hook.leadReleaseType };
  if (hook.campaignCode !== null) {
    const campaign = await findCampaignForHook(env.db, hook.campaignCode, account.projectPatterns);
    if (campaign?.visible) {
      const fields = await leadDefinitionFieldsById(env.db, campaign.leadDefinitionId);
      return { ...base, lead: sampleLeadSnapshot({ ...filters, campaign, fields }), own: true };
    }
  }
  return { ...base, lead: sampleLeadSnapshot(filters), own: false };
}

const HOOK_USER_AGENT = `lead-call-api-hooks/${version}`;

/** The request the hook would send for its first event, rendered from a sample; nothing is sent. */
export async function hookExample(
  env: HookEnv,
  account: AccountContext,
  uniqueId: string,
): Promise<{ hook: HookRecord; request: SignedRequest }> {
  const hook = await ownHook(env, account, uniqueId);
  const type: EventKind = hook.events[0] ?? TEST_EVENT;
  const message = samplePayload(type, await sampleSource(env, account, hook), {
    occurredTime: env.clock().getTime(),
    zone: env.zone,
    dateTimeFormat: env.format,
    entryAccess: account.entryAccess,
  });
  return { hook, request: signedHookRequest(hook, message, newMessageId(), env.clock(), HOOK_USER_AGENT) };
}

/** Queues a `hook.test` delivery of a sample lead to this hook now; returns its delivery id (webhook-id). */
export async function queueHookTest(env: HookEnv, account: AccountContext, uniqueId: string): Promise<string> {
  const hook = await ownHook(env, account, uniqueId);
  const source = await sampleSource(env, account, hook);
  const snapshot = source.own ? source.lead.snapshot : { ...source.lead.snapshot, sampleFields: source.lead.fields };
  const deliveryId = await queueTestDelivery(env.db, hook.id, snapshot, env.clock());
  // Deleted while its sample was made.
  if (deliveryId === undefined) throw missingHook(uniqueId);
  return deliveryId;
}
