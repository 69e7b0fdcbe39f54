/**
 * The lead lifecycle (docs/decisions.md, Lead lifecycle): the status moves, the call-status
 * rules and the campaign time limits and attempts, as pure functions over plain values. Callers load the lead,
 * call one of these, and store what comes back.
 */
import { CallEndCauseName, CallLeadStatusName, LeadClosureName, LeadStatusName, OPEN_LEAD_STATUSES, PreCallLeadStatusName } from './enums';
import { addTimeSpan, TimeSpan } from './timespan';

export class LifecycleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LifecycleError';
  }
}

/** Campaign settings; null = no limit. */
export interface CampaignLifecycleSettings {
  /** Calls without contact after which an open lead is Depleted. */
  maxAttempts: number | null;
  /** Unresolved → Abandoned after this long. */
  abandonAfter: TimeSpan | null;
  /** New, RedialAutomatic, RedialManualCommon → Expired after this long. */
  expireAfter: TimeSpan | null;
  /** RedialManualPrivate → Expired after this long. */
  privateExpireAfter: TimeSpan | null;
}

export const NO_LIMITS: CampaignLifecycleSettings = {
  maxAttempts: null,
  abandonAfter: null,
  expireAfter: null,
  privateExpireAfter: null,
};

/** What the agent did with the lead at wrap-up. */
export type AgentAction = 'close' | 'redialCommon' | 'redialPrivate' | 'redialVip' | 'notSaved';

export const AGENT_ACTIONS: readonly AgentAction[] = ['close', 'redialCommon', 'redialPrivate', 'redialVip', 'notSaved'];

const AGENT_TARGET: Record<AgentAction, LeadStatusName> = {
  close: 'UserProcessed',
  redialCommon: 'RedialManualCommon',
  redialPrivate: 'RedialManualPrivate',
  redialVip: 'VIPRedial',
  notSaved: 'Unresolved',
};

export type AdministrativeStatusName = 'Removed' | 'Anonymized' | 'DoNotCall' | 'GlobalDoNotCall';
const ADMINISTRATIVE_STATUSES: readonly AdministrativeStatusName[] = ['Removed', 'Anonymized', 'DoNotCall', 'GlobalDoNotCall'];

/** End causes that mean the lead was called without contact. */
const NO_CONTACT_END_CAUSES: readonly CallEndCauseName[] = ['NoResponse', 'Busy', 'VoiceMail'];

const OPEN = new Set<LeadStatusName>(OPEN_LEAD_STATUSES);
const ADMINISTRATIVE = new Set<LeadStatusName>(ADMINISTRATIVE_STATUSES);
const NO_CONTACT = new Set<CallEndCauseName>(NO_CONTACT_END_CAUSES);
/** The statuses that share `expireAfter`; moving among them keeps the expiry clock running. */
const COMMON_EXPIRY = new Set<LeadStatusName>(['New', 'RedialAutomatic', 'RedialManualCommon']);

/**
 * Whether `from → to` is one of the moves of section 3. Staying in the same status is always
 * allowed. Interpretation of the table's "(any)":
 * - agent moves (redials, close, not saved) apply to every lead except administrative ones;
 * - system moves driven by calls (Depleted, Failed) and by the sweeper (Abandoned, Expired)
 *   apply to open leads only, so they never overwrite a closed outcome; VIP redials are
 *   neither depleted nor expired;
 * - administrative moves apply to every lead, except that Anonymized is final (data is gone);
 * - nothing moves back to New.
 */
export function isTransitionAllowed(from: LeadStatusName, to: LeadStatusName): boolean {
  if (from === to) return true;
  switch (to) {
    case 'New':
      return false;
    case 'RedialAutomatic':
      // Common and private redials never move here (section 3).
      return from === 'New';
    case 'RedialManualCommon':
    case 'RedialManualPrivate':
    case 'VIPRedial':
    case 'UserProcessed':
    case 'Unresolved':
      return !ADMINISTRATIVE.has(from);
    case 'Depleted':
      return OPEN.has(from) && from !== 'VIPRedial';
    case 'Failed':
      return OPEN.has(from);
    case 'Abandoned':
      return from === 'Unresolved';
    case 'Expired':
      return COMMON_EXPIRY.has(from) || from === 'RedialManualPrivate';
    case 'Removed':
    case 'DoNotCall':
    case 'GlobalDoNotCall':
      return from !== 'Anonymized';
    case 'Anonymized':
      return true;
  }
}

export function assertTransitionAllowed(from: LeadStatusName, to: LeadStatusName): void {
  if (!isTransitionAllowed(from, to)) throw new LifecycleError(`a lead cannot move from ${from} to ${to}`);
}

/**
 * Whether the time-limit clock (the lead's status-changed time) starts again on `from → to`.
 * It does on every change of status except among New, RedialAutomatic and RedialManualCommon,
 * which share one expiry setting: a lead expires `expireAfter` after it entered that group,
 * however often it is redialled meanwhile.
 */
export function restartsStatusClock(from: LeadStatusName, to: LeadStatusName): boolean {
  return from !== to && !(COMMON_EXPIRY.has(from) && COMMON_EXPIRY.has(to));
}

/**
 * Call.leadStatus from the lead status at wrap-up (docs/decisions.md, Lead lifecycle): Unresolved gives Abandoned; New
 * (nothing happened, e.g. dialing cancelled) and statuses that never result from a call give
 * NotSet.
 */
export function callLeadStatusFor(status: LeadStatusName): CallLeadStatusName {
  switch (status) {
    case 'RedialAutomatic':
    case 'RedialManualCommon':
    case 'RedialManualPrivate':
    case 'VIPRedial':
    case 'UserProcessed':
    case 'Depleted':
    case 'Abandoned':
    case 'Failed':
      return status;
    case 'Unresolved':
      return 'Abandoned';
    case 'New':
    case 'Expired':
    case 'Removed':
    case 'Anonymized':
    case 'DoNotCall':
    case 'GlobalDoNotCall':
      return 'NotSet';
  }
}

/** A call to the lead's alternative or next number after an earlier call. */
export type FollowUpDial = 'alternativeNumber' | 'nextNumber';

/** Call.preCallLeadStatus: the open status before the call, or the follow-up dial; null for a closed lead. */
export function preCallLeadStatusFor(status: LeadStatusName, followUp?: FollowUpDial): PreCallLeadStatusName | null {
  if (followUp === 'alternativeNumber') return 'AlternativeNumberDialed';
  if (followUp === 'nextNumber') return 'NextNumberDialed';
  switch (status) {
    case 'New':
    case 'RedialAutomatic':
    case 'RedialManualCommon':
    case 'RedialManualPrivate':
    case 'VIPRedial':
    case 'Unresolved':
      return status;
    default:
      return null;
  }
}

export interface LeadState {
  status: LeadStatusName;
  /** Calls without contact so far (never reset). */
  attempts: number;
  closure?: LeadClosureName;
}

export interface CallOutcome {
  endCause: CallEndCauseName;
  /** The agent's wrap-up; absent when the dialer handled the call alone (e.g. no answer). */
  agentAction?: AgentAction;
  /** Closure inferred from the entry data; used with agentAction `close`. */
  closure?: LeadClosureName;
  /** The call was followed by a call to an alternative number: no lead status changes. */
  alternativeNumber?: boolean;
  /** This is a new call created by transferring another call: no lead status changes. */
  transferred?: boolean;
  /** The system found the lead unreachable for a reason other than no answer. */
  failed?: boolean;
  /** This call dials the alternative or next number after an earlier call. */
  followUp?: FollowUpDial;
}

export interface OutcomeResult {
  leadStatus: LeadStatusName;
  closure: LeadClosureName;
  attempts: number;
  statusChanged: boolean;
  /** Set the lead's status-changed time to the wrap-up time (see restartsStatusClock). */
  restartStatusClock: boolean;
  /** Call.leadStatus. */
  callLeadStatus: CallLeadStatusName;
  /** Call.leadClosure: only when callLeadStatus is UserProcessed. */
  callLeadClosure: LeadClosureName | null;
  /** Call.preCallLeadStatus; null when the lead was closed before the call. */
  preCallLeadStatus: PreCallLeadStatusName | null;
}

function result(
  lead: LeadState,
  status: LeadStatusName,
  closure: LeadClosureName,
  attempts: number,
  callLeadStatus: CallLeadStatusName,
  pre: PreCallLeadStatusName | null,
): OutcomeResult {
  return {
    leadStatus: status,
    closure,
    attempts,
    statusChanged: status !== lead.status,
    restartStatusClock: restartsStatusClock(lead.status, status),
    callLeadStatus,
    callLeadClosure: callLeadStatus === 'UserProcessed' ? closure : null,
    preCallLeadStatus: pre,
  };
}

/**
 * The lead and call statuses after a call's wrap-up. In order:
 * 1. A transferred call (the new call after a transfer) gets Transferred; the lead is untouched.
 * 2. An administrative lead (not to be called) is untouched; the call gets NotSet.
 * 3. A no-contact end cause (NoResponse, Busy, VoiceMail) counts one attempt.
 * 4. A call followed by a call to an alternative number gets AlternativeNumberDialed; the lead
 *    status is untouched (the follow-up call decides).
 * 5. Failed (system): an open lead becomes Failed.
 * 6. The agent's action: close → UserProcessed (+ closure), redials → RedialManualCommon,
 *    RedialManualPrivate, VIPRedial; not saved → Unresolved (call: Abandoned).
 * 7. No agent action and no contact, on an open lead: Depleted once attempts reach
 *    maxAttempts (not VIP redials); otherwise New and RedialAutomatic become RedialAutomatic,
 *    and every other status stays (common and private redials never become RedialAutomatic).
 * 8. Otherwise the status stays. The call status is then set from the lead status.
 */
export function recordCallOutcome(lead: LeadState, outcome: CallOutcome, settings: CampaignLifecycleSettings): OutcomeResult {
  const pre = preCallLeadStatusFor(lead.status, outcome.followUp);
  const keptClosure = lead.closure ?? 'NotSet';
  if (outcome.transferred) return result(lead, lead.status, keptClosure, lead.attempts, 'Transferred', pre);
  if (ADMINISTRATIVE.has(lead.status)) return result(lead, lead.status, keptClosure, lead.attempts, 'NotSet', pre);

  const noContact = NO_CONTACT.has(outcome.endCause);
  const attempts = lead.attempts + (noContact ? 1 : 0);
  if (outcome.alternativeNumber) return result(lead, lead.status, keptClosure, attempts, 'AlternativeNumberDialed', pre);

  let status = lead.status;
  if (outcome.failed && OPEN.has(status)) {
    status = 'Failed';
  } else if (outcome.agentAction !== undefined) {
    status = AGENT_TARGET[outcome.agentAction];
    if (status === undefined) throw new LifecycleError(`unknown agent action ${String(outcome.agentAction)}`);
  } else if (noContact && OPEN.has(status)) {
    if (settings.maxAttempts !== null && attempts >= settings.maxAttempts && status !== 'VIPRedial') status = 'Depleted';
    else if (status === 'New' || status === 'RedialAutomatic') status = 'RedialAutomatic';
  }
  assertTransitionAllowed(lead.status, status);

  let closure: LeadClosureName = 'NotSet';
  if (status === 'UserProcessed') closure = outcome.agentAction === 'close' ? (outcome.closure ?? 'NotSet') : keptClosure;
  return result(lead, status, closure, attempts, callLeadStatusFor(status), pre);
}

/** The lead status an agent's action gives outside a call (e.g. rescheduling from the UI). */
export function agentMove(from: LeadStatusName, action: AgentAction): LeadStatusName {
  const to = AGENT_TARGET[action];
  if (to === undefined) throw new LifecycleError(`unknown agent action ${String(action)}`);
  assertTransitionAllowed(from, to);
  return to;
}

/**
 * An administrative move: Removed and DoNotCall by an administrator, GlobalDoNotCall by a
 * superadministrator, Anonymized on the person's request. Who may do it, and whether the
 * number is on the (global) do-not-call list, is the caller's check.
 */
export function administrativeStatus(from: LeadStatusName, target: AdministrativeStatusName): LeadStatusName {
  if (!ADMINISTRATIVE.has(target)) throw new LifecycleError(`${String(target)} is not an administrative status`);
  assertTransitionAllowed(from, target);
  return target;
}

/** The time-limit moves the sweeper applies, as data so SQL can be built from it. */
export interface SweepRule {
  from: readonly LeadStatusName[];
  to: 'Abandoned' | 'Expired';
  setting: 'abandonAfter' | 'expireAfter' | 'privateExpireAfter';
}

export const SWEEP_RULES: readonly SweepRule[] = [
  { from: ['Unresolved'], to: 'Abandoned', setting: 'abandonAfter' },
  { from: ['New', 'RedialAutomatic', 'RedialManualCommon'], to: 'Expired', setting: 'expireAfter' },
  { from: ['RedialManualPrivate'], to: 'Expired', setting: 'privateExpireAfter' },
];

export interface TimedLead {
  status: LeadStatusName;
  /** When the current time-limit clock started (see restartsStatusClock). */
  statusChangedTime: Date;
}

/**
 * When the lead's time limit runs out and what it becomes then; null when no limit applies
 * (VIP redials, closed leads, a campaign without that setting). The limit is calendar
 * arithmetic in `zone` (P1D across a DST change is 23 or 25 hours).
 */
export function sweepDeadline(
  lead: TimedLead,
  settings: CampaignLifecycleSettings,
  zone: string,
): { to: 'Abandoned' | 'Expired'; at: Date } | null {
  for (const rule of SWEEP_RULES) {
    if (!rule.from.includes(lead.status)) continue;
    const limit = settings[rule.setting];
    if (limit === null) return null;
    return { to: rule.to, at: addTimeSpan(lead.statusChangedTime, limit, zone) };
  }
  return null;
}

/** The status the sweeper gives the lead at `now`, or null to leave it. Due at the deadline itself. */
export function sweepDecision(
  lead: TimedLead,
  settings: CampaignLifecycleSettings,
  now: Date,
  zone: string,
): 'Abandoned' | 'Expired' | null {
  const d = sweepDeadline(lead, settings, zone);
  return d !== null && now.getTime() >= d.at.getTime() ? d.to : null;
}
