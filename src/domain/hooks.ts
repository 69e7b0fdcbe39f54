import type { ResourceType } from './enums';

/**
 * Hooks (the WebHooks resource type): event names, the placeholders of URL and content
 * templates, and how one delivery's request is rendered from a message. Pure: the message is
 * built by the delivery worker with the API's own serializers (src/domain/hookMessages.ts).
 */

export const HOOK_EVENTS = [
  'lead.created',
  'lead.updated',
  'lead.statusChanged',
  'call.ended',
  'calendarEvent.created',
  'calendarEvent.updated',
  'calendarEvent.deleted',
] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];

/** Sent by `POST /hooks/{UniqueId}/test` only; no hook subscribes to it. */
export const TEST_EVENT = 'hook.test';

export const DEFAULT_HOOK_EVENTS: HookEventName[] = ['lead.statusChanged'];

export const HOOK_EVENT_DESCRIPTIONS: Record<HookEventName, string> = {
  'lead.created': 'A lead was imported (POST /leads, bulk import) or loaded. data: the Lead as GET /leads/{UniqueId} answers it.',
  'lead.updated':
    'An import found the lead already there and merged the new values into it (OnDuplicate=Update). data: the Lead as it is after the merge.',
  'lead.statusChanged':
    'A lead changed status (call outcome, lifecycle sweep, PATCH, do-not-call, anonymize). data: the Lead, plus previousStatus.',
  'call.ended': 'A call record completed (not in progress). data: the Call as GET /calls lists it.',
  'calendarEvent.created': 'A calendar event was created. data: the CalendarEvent.',
  'calendarEvent.updated': 'A calendar event was replaced. data: the CalendarEvent.',
  'calendarEvent.deleted': 'A calendar event was deleted. data: the CalendarEvent as it was.',
};

/** The resource an event is about: the account needs its Get right to receive it. */
export const EVENT_RESOURCE: Record<HookEventName, ResourceType> = {
  'lead.created': 'Leads',
  'lead.updated': 'Leads',
  'lead.statusChanged': 'Leads',
  'call.ended': 'Calls',
  'calendarEvent.created': 'CalendarEvents',
  'calendarEvent.updated': 'CalendarEvents',
  'calendarEvent.deleted': 'CalendarEvents',
};

/** Events whose resource is a lead (the lead filters, leadStatus and leadReleaseType, apply to them). */
export const isLeadEvent = (name: string): boolean =>
  (HOOK_EVENTS as readonly string[]).includes(name) && EVENT_RESOURCE[name as HookEventName] === 'Leads';

/**
 * Case-insensitive event name → canonical spelling, or a family `calendarEvent.*` (`lead.*`) →
 * its events, as the documentation writes them; undefined when it names none.
 */
export function parseHookEvents(name: string): HookEventName[] | undefined {
  const lower = name.trim().toLowerCase();
  const family = lower.endsWith('.*') ? lower.slice(0, -1) : undefined;
  const found = HOOK_EVENTS.filter((e) => (family !== undefined ? e.toLowerCase().startsWith(family) : e.toLowerCase() === lower));
  return found.length > 0 ? found : undefined;
}

export const HOOK_METHODS = ['POST', 'PUT'] as const;
export type HookMethod = (typeof HOOK_METHODS)[number];
export const HOOK_FORMATS = ['Json', 'Form'] as const;
export type HookFormat = (typeof HOOK_FORMATS)[number];

/**
 * Bodies used when the hook has no content template: `Standard` is the envelope
 * `{ type, timestamp, data }`; `Data` is the resource alone.
 */
export const STANDARD_TEMPLATES = ['Standard', 'Data'] as const;
export type StandardTemplateName = (typeof STANDARD_TEMPLATES)[number];

export const STANDARD_TEMPLATE_DESCRIPTIONS: Record<StandardTemplateName, string> = {
  Standard: 'The envelope { "type", "timestamp", "data" }, data being the resource exactly as the API serializes it.',
  Data: 'The resource alone, as the API serializes it (the event type is in the URL or the webhook-id log).',
};

/**
 * The live service's template names (`StandardTemplate.PostJson`, ...): each is the Standard
 * envelope sent with a method and in a format. Clients of the live service send them.
 */
export const LIVE_SERVICE_TEMPLATES = {
  PostJson: { method: 'POST', format: 'Json' },
  PutJson: { method: 'PUT', format: 'Json' },
  PostForm: { method: 'POST', format: 'Form' },
  PutForm: { method: 'PUT', format: 'Form' },
} as const satisfies Record<string, { method: HookMethod; format: HookFormat }>;

/** What a `standardTemplateName` asks for: a body template, and for a live-service name also a method and format. */
export interface TemplateChoice {
  template: StandardTemplateName;
  method?: HookMethod;
  format?: HookFormat;
}

/**
 * A `standardTemplateName` as clients send it, case-insensitive: ours (`Standard`, `Data`) or
 * the live service's, with or without its `StandardTemplate.` prefix; undefined when unknown.
 */
export function parseTemplateName(value: string): TemplateChoice | undefined {
  const name = value
    .trim()
    .replace(/^standardtemplate\./i, '')
    .toLowerCase();
  const own = STANDARD_TEMPLATES.find((t) => t.toLowerCase() === name);
  if (own !== undefined) return { template: own };
  for (const [live, shape] of Object.entries(LIVE_SERVICE_TEMPLATES)) {
    if (live.toLowerCase() === name) return { template: 'Standard', method: shape.method, format: shape.format };
  }
  return undefined;
}

/** Every `standardTemplateName` accepted, for messages and the documentation. */
export const TEMPLATE_NAMES: readonly string[] = [
  ...STANDARD_TEMPLATES,
  ...Object.keys(LIVE_SERVICE_TEMPLATES).map((n) => `StandardTemplate.${n}`),
];

// ---- messages -------------------------------------------------------------------------------

/**
 * What one delivery says: the event, its time (in the hook account's DateTime format), the
 * resource as the API serializes it, and the values of the named placeholders (absent = empty).
 */
export interface HookMessage {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  values: Partial<Record<PlaceholderName, string>>;
  /** The lead's data fields (for `{Data.FieldName}`), as visible to the hook's account. */
  dataFields: Record<string, string>;
}

/** The standard envelope `{ type, timestamp, data }`: a hook's body, and each event of the live stream. */
export function hookEnvelope(message: Pick<HookMessage, 'type' | 'timestamp' | 'data'>): Pick<HookMessage, 'type' | 'timestamp' | 'data'> {
  return { type: message.type, timestamp: message.timestamp, data: message.data };
}

export const PLACEHOLDERS = {
  EventType: 'The event name, e.g. lead.statusChanged.',
  Timestamp: 'When the change happened (the account’s DateTime format).',
  UniqueId: 'uniqueId of the resource (lead, call or calendar event).',
  LeadUniqueId: 'uniqueId of the lead the resource is about (the lead itself for lead events).',
  CampaignCode: 'Code of the campaign (lead and call events).',
  LeadStatus: 'The lead’s status (lead events) or the call’s leadStatus (call.ended).',
  PreviousStatus: 'The lead’s status before the change (lead.statusChanged).',
  Closure: 'The lead’s closure (lead events) or the call’s leadClosure.',
  PhoneNumber:
    'The lead’s phone number (lead events: empty when its field is above the account’s entry access, as in data) or the call’s leadPhoneNumber.',
  ExternalKey:
    'The lead’s external key (lead events: empty when its field is above the account’s entry access, as in data) or the call’s leadExternalKey.',
  Pool: 'The lead’s pool (lead events).',
  AgentEmail: 'E-mail of the agent: the call’s user, or the user who last changed the lead.',
  ClosedDate: 'When a closed lead reached its closed status (lead events; empty while open).',
  'Data.FieldName':
    'A data field of the lead by name (case-insensitive), e.g. {Data.Email}; fields above the account’s entry access are empty.',
} as const;
type PlaceholderName = Exclude<keyof typeof PLACEHOLDERS, 'Data.FieldName'>;

const PLACEHOLDER_NAMES = new Map(
  (Object.keys(PLACEHOLDERS) as (keyof typeof PLACEHOLDERS)[])
    .filter((n): n is PlaceholderName => n !== 'Data.FieldName')
    .map((n) => [n.toLowerCase(), n]),
);

/** `{Name}` or `{Data.Field name}`: a name starting with a letter; JSON's `{"` never matches. */
const PLACEHOLDER = /\{([A-Za-z][A-Za-z0-9]*)(?:\.([^{}"\\\r\n]+))?\}/g;

interface PlaceholderUse {
  text: string;
  name: string;
  field?: string;
}

function findPlaceholders(template: string): PlaceholderUse[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => ({ text: m[0], name: m[1]!, ...(m[2] !== undefined ? { field: m[2] } : {}) }));
}

/**
 * Text written as a placeholder, also with what names never hold (`_`, `-`, spaces inside the
 * braces, an empty field): such text would reach receivers as literal braces, so it is reported.
 */
const PLACEHOLDER_LIKE = /\{\s*[A-Za-z_][\w-]*\s*(?:\.[^{}"\\\r\n]*)?\}/g;

function isKnownPlaceholder(text: string): boolean {
  const [use] = findPlaceholders(text);
  if (use?.text !== text) return false;
  return use.field === undefined ? PLACEHOLDER_NAMES.has(use.name.toLowerCase()) : use.name.toLowerCase() === 'data';
}

/** The placeholders of a template that name nothing known (`{Data.X}` is known for any X). */
export function unknownPlaceholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER_LIKE)].map((m) => m[0]).filter((text) => !isKnownPlaceholder(text));
}

/** The `{Data.X}` field names a template uses. */
export function dataFieldsUsed(template: string): string[] {
  return findPlaceholders(template)
    .filter((p) => p.field !== undefined && p.name.toLowerCase() === 'data')
    .map((p) => p.field!);
}

function valueOf(message: HookMessage, use: PlaceholderUse): string {
  if (use.field !== undefined) {
    const wanted = use.field.toLowerCase();
    for (const [name, value] of Object.entries(message.dataFields)) if (name.toLowerCase() === wanted) return value;
    return '';
  }
  const name = PLACEHOLDER_NAMES.get(use.name.toLowerCase());
  return name === undefined ? '' : (message.values[name] ?? '');
}

/** Replaces every placeholder with its value passed through `encode`. */
function fillTemplate(template: string, message: HookMessage, encode: (value: string) => string): string {
  return template.replace(PLACEHOLDER, (text, name: string, field?: string) =>
    encode(valueOf(message, { text, name, ...(field !== undefined ? { field } : {}) })),
  );
}

/** application/x-www-form-urlencoded encoding of one value (spaces as `+`). */
const formEncode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');

/**
 * A JSON content template: the template is JSON with placeholders inside its strings. It is
 * parsed, each string (keys too) is filled, and the result is written again, so every value is
 * JSON-escaped and the body is always valid JSON whatever the values hold.
 */
function fillJsonTemplate(template: string, message: HookMessage): string {
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string') return fillTemplate(value, message, (v) => v);
    if (Array.isArray(value)) return value.map(fill);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [fillTemplate(k, message, (x) => x), fill(v)]));
    }
    return value;
  };
  return JSON.stringify(fill(JSON.parse(template)));
}

// ---- requests -------------------------------------------------------------------------------

/** The parts of a hook that decide what its requests look like. */
export interface HookShape {
  url: string;
  method: HookMethod;
  format: HookFormat;
  contentTemplate: string | null;
  standardTemplate: StandardTemplateName;
}

export interface RenderedRequest {
  method: HookMethod;
  url: string;
  contentType: string;
  body: string;
}

function renderHookUrl(url: string, message: HookMessage): string {
  return fillTemplate(url, message, encodeURIComponent);
}

function renderHookBody(hook: HookShape, message: HookMessage): { contentType: string; body: string } {
  if (hook.format === 'Json') {
    const contentType = 'application/json';
    if (hook.contentTemplate !== null) return { contentType, body: fillJsonTemplate(hook.contentTemplate, message) };
    const body = hook.standardTemplate === 'Data' ? message.data : hookEnvelope(message);
    return { contentType, body: JSON.stringify(body) };
  }
  const contentType = 'application/x-www-form-urlencoded';
  if (hook.contentTemplate !== null) return { contentType, body: fillTemplate(hook.contentTemplate, message, formEncode) };
  const fields: [string, string][] =
    hook.standardTemplate === 'Data'
      ? [['data', JSON.stringify(message.data)]]
      : [
          ['type', message.type],
          ['timestamp', message.timestamp],
          ['data', JSON.stringify(message.data)],
        ];
  return { contentType, body: fields.map(([k, v]) => `${k}=${formEncode(v)}`).join('&') };
}

export function renderHookRequest(hook: HookShape, message: HookMessage): RenderedRequest {
  return { method: hook.method, url: renderHookUrl(hook.url, message), ...renderHookBody(hook, message) };
}

// ---- validation -----------------------------------------------------------------------------

export interface UrlRules {
  allowHttp: boolean;
}

/**
 * Problems with a URL template, by message (empty = fine): the scheme is https (or http when
 * allowed), the host is literal (no placeholder), and every placeholder is known. Addresses are
 * checked at delivery, after DNS resolution (src/domain/hookAddress.ts).
 */
export function urlTemplateProblems(template: string, rules: UrlRules): string[] {
  const problems: string[] = [];
  const unknown = unknownPlaceholders(template);
  if (unknown.length > 0) problems.push(`unknown placeholder ${unknown.join(', ')}`);
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/.exec(template);
  if (!match) return [...problems, 'must be an absolute http(s) URL'];
  const scheme = match[1]!.toLowerCase();
  if (scheme !== 'https' && !(scheme === 'http' && rules.allowHttp)) {
    problems.push(
      rules.allowHttp
        ? 'the scheme must be https or http'
        : 'the scheme must be https (a server allows plain http with HOOKS_ALLOW_HTTP=true, and loopback or private hosts with HOOKS_ALLOWED_HOSTS)',
    );
  }
  const authority = match[2]!;
  if (authority.includes('{')) problems.push('the host cannot hold a placeholder');
  if (authority.includes('@')) problems.push('credentials in the URL are not allowed; the signature authenticates requests');
  if (problems.length > 0) return problems;
  try {
    const parsed = new URL(fillTemplate(template, EMPTY_SAMPLE, () => 'x'));
    if (parsed.hostname === '') problems.push('the URL has no host');
  } catch {
    problems.push('is not a valid URL');
  }
  return problems;
}

/** Problems with a content template for the given format (empty = fine). */
export function contentTemplateProblems(template: string, format: HookFormat): string[] {
  const problems: string[] = [];
  const unknown = unknownPlaceholders(template);
  if (unknown.length > 0) problems.push(`unknown placeholder ${unknown.join(', ')}`);
  if (format === 'Json') {
    try {
      JSON.parse(template);
    } catch {
      problems.push('with format Json the template must be JSON, with placeholders inside its strings');
    }
  }
  return problems;
}

const EMPTY_SAMPLE: HookMessage = { type: '', timestamp: '', data: {}, values: {}, dataFields: {} };
