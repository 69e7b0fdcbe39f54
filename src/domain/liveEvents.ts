import { createHash } from 'node:crypto';
import type { ResourceType, Verb } from './enums';
import { EVENT_RESOURCE, HOOK_EVENTS, HookEventName } from './hooks';
import { lowerCase, matchesAny, matchesPattern, projectSelection } from './projectPatterns';

/**
 * Which events one reader of the live stream receives (docs/decisions.md, "Live events"): the
 * rules hooks follow — a Get right on the resource the event is about, and the event's project
 * inside the account's project rights — narrowed by the request's `Events`, `Campaigns` and
 * `Projects`. And the Server-Sent Events framing of what is sent.
 */

export interface EventSelection {
  /** The kinds sent: those asked for (or all) that the account may read. */
  types: ReadonlySet<HookEventName>;
  /** The account's project rights. */
  projectRights: readonly string[];
  /** `Projects`: patterns or project unique ids; undefined = every project the rights reach. */
  projects?: readonly string[];
  /** `Campaigns`, as campaign codes; undefined = any. Calendar events have no campaign and are left out when given. */
  campaignCodes?: ReadonlySet<string>;
}

/** The event kinds an account may read: a Get right on the resource each is about. */
export function readableEventTypes(rights: Partial<Record<ResourceType, readonly Verb[]>>): HookEventName[] {
  return HOOK_EVENTS.filter((type) => (rights[EVENT_RESOURCE[type]] ?? []).includes('Get'));
}

/** What `md5('project:' || lower(name))::uuid` gives in SQL (src/data/projectRepository.ts). */
export function projectUniqueId(name: string): string {
  const hex = createHash('md5')
    .update(`project:${lowerCase(name)}`)
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The fields of a stored event a selection looks at. */
export interface SelectableEvent {
  type: string;
  project: string | null;
  campaignCode: string | null;
}

/**
 * A test for events, built once per reader: projects are few, so each one's verdict is
 * remembered (a stream sees the same projects again and again). For the live batches, which
 * the feed reads once for all streams; the database reads apply the same rules in their SQL
 * (src/data/liveEvents.ts).
 */
export function eventSelector(selection: EventSelection): (event: SelectableEvent) => boolean {
  const chosen = selection.projects ? projectSelection(selection.projects) : undefined;
  const verdicts = new Map<string, boolean>();
  const projectAllowed = (project: string): boolean => {
    let verdict = verdicts.get(project);
    if (verdict === undefined) {
      verdict =
        matchesAny(selection.projectRights, project) &&
        (chosen === undefined ||
          selection.projects!.some((p) => matchesPattern(p, project)) ||
          chosen.uniqueIds.includes(projectUniqueId(project)));
      verdicts.set(project, verdict);
    }
    return verdict;
  };
  return (event) => {
    if (!selection.types.has(event.type as HookEventName)) return false;
    if (event.project === null || !projectAllowed(event.project)) return false;
    if (selection.campaignCodes && (event.campaignCode === null || !selection.campaignCodes.has(event.campaignCode))) return false;
    return true;
  };
}

/**
 * One event as Server-Sent Events: its position as `id` (what a reconnecting client sends back
 * as Last-Event-ID), its kind as `event`, the hook envelope as `data`. JSON text holds no line
 * break, so `data` is one line.
 */
export function sseEvent(position: number, type: string, json: string): string {
  return `id: ${position}\nevent: ${type}\ndata: ${json}\n\n`;
}

/** A comment line: keeps proxies from taking an idle stream for a dead one; clients ignore it. */
export const SSE_HEARTBEAT = ': heartbeat\n\n';

/** The first lines of a stream: how long a client waits before it reconnects (ms) after the stream ends. */
export const sseRetry = (ms: number): string => `retry: ${ms}\n\n`;
