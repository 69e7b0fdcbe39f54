import {
  CallEndCause,
  CallEndCauseName,
  CallLeadStatus,
  LeadClosure,
  LeadClosureName,
  LeadStatus,
  PreCallLeadStatus,
} from '../../domain/enums';
import { AgentAction, LeadState, preCallLeadStatusFor, recordCallOutcome, sweepDeadline, SWEEP_RULES } from '../../domain/lifecycle';
import type { CallWindow } from './callWindow';
import { GenCampaign, lifecycleSettings } from './campaigns';
import type { Prng } from './prng';

/**
 * The plan, made before any lead or call row is written: which campaign, pool and uploader
 * each lead has, how often it is called, when, by whom and with what outcome, and where the
 * lead lifecycle (src/domain/lifecycle.ts) leaves it at the window end. Held in typed arrays
 * (a few dozen bytes per call), so millions of calls fit; the COPY phases turn it into rows.
 */

/** A lead's calls fall within this many days after its upload. */
const CALL_SPAN_DAYS = 20;

// What happened on a call; the lead lifecycle turns it into statuses.
const O_NO_CONTACT = 0; // NoResponse, Busy, VoiceMail, no agent action
const O_CB_COMMON = 1;
const O_CB_PRIVATE = 2;
const O_CB_VIP = 3;
const O_NOT_SAVED = 4; // agent left the contact page unsaved: lead Unresolved, call Abandoned
const O_CLOSE = 5;
const O_FAILED = 6;
const O_IN_PROGRESS = 7;

const AGENT_ACTION: (AgentAction | undefined)[] = [
  undefined,
  'redialCommon',
  'redialPrivate',
  'redialVip',
  'notSaved',
  'close',
  undefined,
  undefined,
];
const NO_CONTACT_CAUSES: CallEndCauseName[] = ['NoResponse', 'Busy', 'VoiceMail'];
const CLOSURES: LeadClosureName[] = ['Success', 'NotInterested', 'InvalidLead', 'Unqualified', 'NotSet'];
const CLOSURE_WEIGHTS = [30, 40, 12, 13, 5];
// Final outcome of a called lead: mostly closed.
const FINALS = [O_CLOSE, O_FAILED, O_NOT_SAVED, O_NO_CONTACT, O_CB_COMMON, O_CB_PRIVATE, O_CB_VIP];
const FINAL_WEIGHTS = [60, 4, 4, 14, 8, 5, 3];

/** Bits of a call's flags. */
export const FLAG_CONNECTED = 1;
export const FLAG_IN_PROGRESS = 2;
export const FLAG_INCOMING = 4;
/** A supervisor also recorded part of the conversation. */
export const FLAG_PARTIAL = 8;
/** The agent was in a ready period before the call. */
export const FLAG_READY = 16;

/** "No value" in the 16- and 8-bit status arrays. */
export const NULL16 = 0xffff;
export const NULL8 = 0xff;
/**
 * A call's sort key is `startSecond * INDEX_BITS + callIndex`: sorting the keys orders calls by
 * start time, and the key still names its call. Also the largest number of calls.
 */
export const INDEX_BITS = 2 ** 29;

/** Per lead (index l < leads). */
export interface LeadPlan {
  count: number;
  /** Index in the campaign list. */
  campaign: Uint8Array;
  /** Index in the campaign's pools. */
  pool: Uint8Array;
  uploadMs: Float64Array;
  /** Index in the user list. */
  uploader: Uint16Array;
  callCount: Uint16Array;
  /** The lead's calls are the call indexes offset[l] .. offset[l + 1] - 1, in time order. */
  offset: Uint32Array;
  status: Uint16Array;
  closure: Uint8Array;
  attempts: Uint16Array;
  /** When the lead entered its status (the sweeper's clock). */
  clockMs: Float64Array;
  changedMs: Float64Array;
}

/** Per call (index i < calls, grouped by lead); durations in ms, -1 = absent. */
export interface CallPlan {
  count: number;
  lead: Uint32Array;
  /** Index in the user list. */
  user: Uint16Array;
  pre: Uint8Array;
  status: Uint16Array;
  closure: Uint8Array;
  endCause: Uint8Array;
  flags: Uint8Array;
  /** Milliseconds added to the start second. */
  msPart: Uint16Array;
  preview: Int32Array;
  dialing: Int32Array;
  conversation: Int32Array;
  wrapUp: Int32Array;
  /** See INDEX_BITS; by call index until sortCallsByStart. */
  sortKey: Float64Array;
  recordingCount: number;
  readyPeriodCount: number;
}

export function planLeadsAndCalls(
  plan: Prng,
  leadCount: number,
  callCount: number,
  campaigns: GenCampaign[],
  window: CallWindow,
  zone: string,
): { leads: LeadPlan; calls: CallPlan } {
  const leads = placeLeads(plan, leadCount, campaigns, window);
  countCalls(plan, leads, callCount, campaigns);
  const calls = playCalls(plan, leads, callCount, campaigns, window, zone);
  return { leads, calls };
}

/** Orders the call plan's keys by start time: the lead rows read them by call index, the call rows in this order. */
export function sortCallsByStart(calls: CallPlan): void {
  calls.sortKey.sort();
}

/** Campaign by weight, a pool of it, and an upload between 06:00 and 07:59 local on the batch day, before dialing starts. */
function placeLeads(plan: Prng, L: number, campaigns: GenCampaign[], window: CallWindow): LeadPlan {
  const { startMs, day8Sec } = window;
  const leads: LeadPlan = {
    count: L,
    campaign: new Uint8Array(L),
    pool: new Uint8Array(L),
    uploadMs: new Float64Array(L),
    uploader: new Uint16Array(L),
    callCount: new Uint16Array(L),
    offset: new Uint32Array(L + 1),
    status: new Uint16Array(L),
    closure: new Uint8Array(L),
    attempts: new Uint16Array(L),
    clockMs: new Float64Array(L),
    changedMs: new Float64Array(L),
  };
  const { campaign: leadCampaign, pool: leadPool, uploadMs: leadUploadMs, uploader: leadUploader } = leads;
  const campaignWeights = campaigns.map((c) => c.spec.weight);
  for (let l = 0; l < L; l++) {
    const c = plan.weighted(campaignWeights);
    leadCampaign[l] = c;
    const campaign = campaigns[c]!;
    const p = plan.int(campaign.pools.length);
    leadPool[l] = p;
    leadUploadMs[l] = startMs + (day8Sec[campaign.pools[p]!.day]! - 7200) * 1000 + plan.int(7_200_000);
    leadUploader[l] = campaign.agents.length ? plan.pick(campaign.agents) : 0;
  }
  return leads;
}

/**
 * Call counts: a share of the leads is called at least once, the rest spread at random
 * (respecting the campaigns' attempt caps where possible).
 */
function countCalls(plan: Prng, leads: LeadPlan, N: number, campaigns: GenCampaign[]): void {
  const L = leads.count;
  const { callCount, campaign: leadCampaign, offset } = leads;
  const called = N === 0 ? 0 : Math.min(L, N, Math.max(1, Math.round(L * 0.85)));
  const perm = new Uint32Array(L);
  for (let i = 0; i < L; i++) perm[i] = i;
  for (let i = 0; i < called; i++) {
    const j = i + plan.int(L - i);
    const t = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = t;
    callCount[perm[i]!] = 1;
  }
  for (let extra = N - called; extra > 0; extra--) {
    let l = perm[plan.int(called)]!;
    for (let tries = 0; tries < 20; tries++) {
      const cap = campaigns[leadCampaign[l]!]!.spec.maxAttempts;
      if ((cap === null || callCount[l]! < cap) && callCount[l]! < 60000) break;
      l = perm[plan.int(called)]!;
    }
    callCount[l]! += 1;
  }
  for (let l = 0; l < L; l++) offset[l + 1] = offset[l]! + callCount[l]!;
}

/**
 * Each lead's calls in time order with their outcomes, played through the lead lifecycle; then
 * the sweeper's move as of the window end, so the data is already a fixpoint for it.
 */
function playCalls(plan: Prng, leads: LeadPlan, N: number, campaigns: GenCampaign[], window: CallWindow, zone: string): CallPlan {
  const L = leads.count;
  const { callCount, offset, campaign: leadCampaign, pool: leadPool, uploadMs: leadUploadMs } = leads;
  const { status: leadStatus, closure: leadClosure, attempts: leadAttempts, clockMs: leadClockMs, changedMs: leadChangedMs } = leads;
  const { days, startMs: windowStartMs, endMs: windowEndMs, day8Sec, weekend } = window;
  const callLead = new Uint32Array(N);
  const callUser = new Uint16Array(N);
  const callPre = new Uint8Array(N);
  const callStatus = new Uint16Array(N);
  const callClosure = new Uint8Array(N);
  const callEndCause = new Uint8Array(N);
  const callFlags = new Uint8Array(N);
  const callMsPart = new Uint16Array(N);
  const callPreview = new Int32Array(N);
  const callDialing = new Int32Array(N);
  const callConversation = new Int32Array(N);
  const callWrapUp = new Int32Array(N);
  const sortKey = new Float64Array(N);

  const settings = campaigns.map(({ spec }) => lifecycleSettings(spec));
  const times: number[] = [];
  const lastDaySec = day8Sec[days - 1]!;

  for (let l = 0; l < L; l++) {
    const n = callCount[l]!;
    const campaignIndex = leadCampaign[l]!;
    const c = campaigns[campaignIndex]!;
    const uploadDay = c.pools[leadPool[l]!]!.day;
    let lead: LeadState = { status: 'New', attempts: 0 };
    let clockMs = leadUploadMs[l]!;
    let changedMs = leadUploadMs[l]!;
    if (n > 0) {
      // Call times: production hours (08–21 local), mostly weekdays, within the call span.
      const span = Math.min(CALL_SPAN_DAYS, days - uploadDay);
      times.length = 0;
      for (let k = 0; k < n; k++) {
        let d = uploadDay + plan.int(span);
        if (weekend[d] && plan.chance(0.85)) d = uploadDay + plan.int(span);
        times.push(day8Sec[d]! + plan.int(13 * 3600));
      }
      times.sort((a, b) => a - b);
      // Ten minutes at least between two calls of a lead; the last day's calls stay before midnight.
      for (let k = 1; k < n; k++) if (times[k]! < times[k - 1]! + 600) times[k] = times[k - 1]! + 600;
    }
    let final = FINALS[plan.weighted(FINAL_WEIGHTS)]!;
    if (n > 0 && times[n - 1]! >= lastDaySec && plan.chance(0.1)) final = O_IN_PROGRESS;
    const cap = c.spec.maxAttempts;

    for (let k = 0; k < n; k++) {
      const i = offset[l]! + k;
      let outcome: number;
      if (k < n - 1) {
        const s = lead.status;
        if (s === 'New' || s === 'RedialAutomatic')
          outcome = [O_NO_CONTACT, O_CB_COMMON, O_CB_PRIVATE, O_CB_VIP][plan.weighted([72, 16, 8, 4])]!;
        else
          outcome = plan.chance(0.4)
            ? O_NO_CONTACT
            : s === 'RedialManualCommon'
              ? O_CB_COMMON
              : s === 'RedialManualPrivate'
                ? O_CB_PRIVATE
                : O_CB_VIP;
        // Only the last call may deplete the lead: one more no-contact call would reach the cap.
        if (outcome === O_NO_CONTACT && cap !== null && s !== 'VIPRedial' && lead.attempts + 1 >= cap) {
          outcome = s === 'RedialManualPrivate' ? O_CB_PRIVATE : O_CB_COMMON;
        }
      } else {
        outcome = final;
        // Leads that ran out of tries are mostly given up on: the last no-contact call depletes them.
        if (
          outcome !== O_CLOSE &&
          outcome !== O_IN_PROGRESS &&
          cap !== null &&
          lead.status !== 'VIPRedial' &&
          lead.attempts + 1 >= cap &&
          plan.chance(0.7)
        ) {
          outcome = O_NO_CONTACT;
        }
      }
      callLead[i] = l;
      callUser[i] = c.agents.length ? plan.pick(c.agents) : 0;
      callMsPart[i] = plan.int(1000);
      sortKey[i] = times[k]! * INDEX_BITS + i;

      const inProgress = outcome === O_IN_PROGRESS;
      const connected = (outcome >= O_CB_COMMON && outcome <= O_CLOSE) || (inProgress && plan.chance(0.6));
      const incoming = connected && !inProgress && outcome !== O_NOT_SAVED && plan.chance(0.03);
      let flags = (connected ? FLAG_CONNECTED : 0) | (inProgress ? FLAG_IN_PROGRESS : 0) | (incoming ? FLAG_INCOMING : 0);
      if (connected && !inProgress && plan.chance(0.05)) flags |= FLAG_PARTIAL;
      if (!incoming && plan.chance(0.25)) flags |= FLAG_READY;
      callFlags[i] = flags;

      const endCause: CallEndCauseName = inProgress
        ? 'NotApplicable'
        : connected
          ? plan.chance(0.95)
            ? 'NormalDisconnect'
            : 'DroppedCall'
          : outcome === O_FAILED
            ? 'DroppedCall'
            : NO_CONTACT_CAUSES[plan.weighted([60, 25, 15])]!;
      callEndCause[i] = CallEndCause.toNumber(endCause);

      const type = c.spec.type;
      callPreview[i] =
        incoming || type === 'PredictiveDialer'
          ? 0
          : type === 'Master'
            ? plan.duration(3, 45)
            : type === 'BasketDialer'
              ? plan.duration(2, 20)
              : plan.duration(0, 2);
      // Dialing is absent while still dialing; an incoming call only rings.
      callDialing[i] =
        inProgress && !connected
          ? -1
          : incoming
            ? plan.duration(0, 8)
            : connected
              ? plan.duration(4, 25)
              : endCause === 'Busy'
                ? plan.duration(2, 6)
                : endCause === 'VoiceMail'
                  ? plan.duration(12, 30)
                  : endCause === 'DroppedCall'
                    ? plan.duration(1, 6)
                    : plan.duration(25, 45);
      callConversation[i] = connected && !inProgress ? (outcome === O_CLOSE ? plan.duration(60, 900) : plan.duration(20, 400)) : -1;
      callWrapUp[i] = inProgress ? -1 : connected ? plan.duration(5, 180) : plan.duration(0, 4);

      if (inProgress) {
        // No wrap-up yet: the lead keeps its status, the call has no lead status.
        callPre[i] = PreCallLeadStatus.toNumber(preCallLeadStatusFor(lead.status)!);
        callStatus[i] = NULL16;
        callClosure[i] = NULL8;
        continue;
      }
      const closure = outcome === O_CLOSE ? CLOSURES[plan.weighted(CLOSURE_WEIGHTS)]! : undefined;
      const r = recordCallOutcome(
        lead,
        { endCause, agentAction: AGENT_ACTION[outcome], closure, failed: outcome === O_FAILED },
        settings[campaignIndex]!,
      );
      callPre[i] = PreCallLeadStatus.toNumber(r.preCallLeadStatus!);
      callStatus[i] = CallLeadStatus.toNumber(r.callLeadStatus);
      callClosure[i] = r.callLeadClosure === null ? NULL8 : LeadClosure.toNumber(r.callLeadClosure);
      const wrappedUp =
        windowStartMs + times[k]! * 1000 + callMsPart[i] + Math.max(callDialing[i], 0) + Math.max(callConversation[i], 0) + callWrapUp[i];
      if (r.restartStatusClock) clockMs = wrappedUp;
      changedMs = wrappedUp;
      lead = { status: r.leadStatus, attempts: r.attempts, closure: r.closure };
    }

    // The sweeper's move as of the window end.
    const rule = SWEEP_RULES.find((x) => x.from.includes(lead.status));
    const limit = rule ? settings[campaignIndex]![rule.setting] : null;
    // Calendar arithmetic (luxon) is slow at this scale: skip it when even a short-houred
    // reading of the limit ends after the window.
    const surelyLater = limit !== null && !limit.years && !limit.months && clockMs + limit.days * 86_400_000 - 7_200_000 > windowEndMs;
    const deadline =
      limit === null || surelyLater
        ? null
        : sweepDeadline({ status: lead.status, statusChangedTime: new Date(clockMs) }, settings[campaignIndex]!, zone);
    if (deadline !== null && deadline.at.getTime() <= windowEndMs) {
      lead = { ...lead, status: deadline.to };
      clockMs = changedMs = deadline.at.getTime();
    }
    leadStatus[l] = LeadStatus.toNumber(lead.status);
    leadClosure[l] = LeadClosure.toNumber(lead.closure ?? 'NotSet');
    leadAttempts[l] = lead.attempts;
    leadClockMs[l] = clockMs;
    leadChangedMs[l] = changedMs;
  }

  let recordingCount = 0;
  let readyPeriodCount = 0;
  for (let i = 0; i < N; i++) {
    const f = callFlags[i]!;
    if ((f & (FLAG_CONNECTED | FLAG_IN_PROGRESS)) === FLAG_CONNECTED) recordingCount += f & FLAG_PARTIAL ? 2 : 1;
    if (f & FLAG_READY) readyPeriodCount += 1;
  }

  return {
    count: N,
    lead: callLead,
    user: callUser,
    pre: callPre,
    status: callStatus,
    closure: callClosure,
    endCause: callEndCause,
    flags: callFlags,
    msPart: callMsPart,
    preview: callPreview,
    dialing: callDialing,
    conversation: callConversation,
    wrapUp: callWrapUp,
    sortKey,
    recordingCount,
    readyPeriodCount,
  };
}
