import { randomUUID } from 'node:crypto';
import { CallEndCause, CallLeadStatus, CampaignType, LeadClosure, PreCallLeadStatus, RecordingType } from '../../../domain/enums';
import { timeSpanToMillis, type TimeSpan } from '../../../domain/timespan';
import { applyCallOutcomeToLead } from '../../../data/leadLifecycleRepository';
import { CALLS, READY_PERIODS, findKey, upsertByUniqueId, type PartitionedKey } from '../../../data/uniqueIdRegistry';
import { recordCallEvent, recordLeadEvent } from '../../../data/hookEvents';
import { findUnitCode } from '../../../data/loader/organization';
import { findLeadId } from '../../../data/loader/campaigns';
import { findCallInProgress, upsertRecording } from '../../../data/loader/calls';
import { RecordError } from '../recordError';
import type { Applier, ApplyContext } from './applier';

export const applyCall: Applier<'call'> = async (r, ctx) => {
  const { trx, refs } = ctx;
  const rule = (ok: boolean, message: string) => {
    if (!ok) throw new RecordError(message);
  };
  // The Call field rules (docs/decisions.md, Loader).
  rule(r.connectTime === undefined || r.connected, 'connectTime is only present when connected is true');
  rule(r.endTime === undefined || !r.inProgress, 'endTime is only present when the call is not in progress');
  rule(
    r.conversationDuration === undefined || (r.connected && !r.inProgress),
    'conversationDuration needs a connected call that is not in progress',
  );
  rule(r.leadClosure === undefined || r.leadStatus === 'UserProcessed', 'leadClosure is only present when leadStatus is UserProcessed');

  const campaign = await refs.campaign(r.campaign);
  const user = await refs.user(r.user);
  let chain: number[];
  if (r.organizationalUnits !== undefined) {
    chain = [];
    for (const code of r.organizationalUnits) chain.push((await refs.unit(code)).id);
    const deepest = await refs.unit(r.organizationalUnits[r.organizationalUnits.length - 1]!);
    rule(
      deepest.chain.length === chain.length && deepest.chain.every((id, i) => id === chain[i]),
      'organizationalUnits must be a chain of org units from the root down',
    );
  } else {
    rule(user.parentId !== null, `user ${JSON.stringify(r.user)} belongs to no org unit; give organizationalUnits`);
    chain = (await refs.unit((await findUnitCode(trx, user.parentId!))!)).chain;
  }
  const ms = (ts: TimeSpan | undefined) => {
    if (ts === undefined) return null;
    try {
      return timeSpanToMillis(ts);
    } catch (err) {
      throw new RecordError((err as Error).message);
    }
  };
  const leadId = await findLeadId(trx, r.uniqueLeadId);
  // Through the registry: calls has no index on unique_id alone (month partitions).
  const known = r.uniqueId === undefined ? undefined : await findKey(trx, CALLS, r.uniqueId);
  const wasInProgress = known === undefined ? undefined : await findCallInProgress(trx, known);
  const values = {
    campaign_id: campaign.id,
    lead_id: leadId ?? null,
    unique_lead_id: r.uniqueLeadId,
    user_id: user.id,
    ou0_id: chain[0],
    ou1_id: chain[1] ?? null,
    ou2_id: chain[2] ?? null,
    ou3_id: chain[3] ?? null,
    ou4_id: chain[4] ?? null,
    lead_phone_number: r.leadPhoneNumber,
    lead_external_key: r.leadExternalKey ?? null,
    end_cause: CallEndCause.toNumber(r.endCause),
    in_progress: r.inProgress,
    connected: r.connected,
    incoming: r.incoming,
    start_time: r.startTime,
    connect_time: r.connectTime ?? null,
    end_time: r.endTime ?? null,
    preview_ms: ms(r.previewDuration),
    dialing_ms: ms(r.dialingDuration),
    conversation_ms: ms(r.conversationDuration),
    wrap_up_ms: ms(r.wrapUpDuration),
    lead_status: r.leadStatus === undefined ? null : CallLeadStatus.toNumber(r.leadStatus),
    pre_call_lead_status: r.preCallLeadStatus === undefined ? null : PreCallLeadStatus.toNumber(r.preCallLeadStatus),
    lead_closure: r.leadClosure === undefined ? null : LeadClosure.toNumber(r.leadClosure),
    campaign_type: r.campaignType === undefined ? campaign.campaignType : CampaignType.toNumber(r.campaignType),
  };
  const key = await upsertByUniqueId(trx, CALLS, r.uniqueId ?? randomUUID(), values);
  if (r.applyOutcome) await applyOutcome(ctx, key);
  // call.ended once: when a completed call is first loaded, or loaded again after it was in progress.
  if (!r.inProgress && (wasInProgress === undefined || wasInProgress)) {
    await recordCallEvent(trx, { callId: key.id, startTime: key.time, time: ctx.now() });
  }
};

/** The lead lifecycle: applies a loaded call's outcome to its lead. */
async function applyOutcome(ctx: ApplyContext, call: PartitionedKey): Promise<void> {
  try {
    const change = await applyCallOutcomeToLead(ctx.trx, call);
    if (change) {
      await recordLeadEvent(ctx.trx, {
        type: 'lead.statusChanged',
        leadId: change.leadId,
        previousStatus: change.previousStatus,
        time: ctx.now(),
      });
    }
  } catch (err) {
    throw new RecordError((err as Error).message);
  }
}

export const applyRecording: Applier<'recording'> = async (r, ctx) => {
  const call = await findKey(ctx.trx, CALLS, r.call);
  if (!call) throw new RecordError(`unknown call ${JSON.stringify(r.call)}`);
  await upsertRecording(ctx.trx, call, {
    file_name: r.fileName,
    start_time: r.startTime,
    end_time: r.endTime ?? null,
    recording_type: RecordingType.toNumber(r.recordingType),
  });
};

export const applyReadyPeriod: Applier<'readyPeriod'> = async (r, ctx) => {
  const user = await ctx.refs.user(r.orgCode);
  const campaign = await ctx.refs.campaign(r.campaign);
  await upsertByUniqueId(ctx.trx, READY_PERIODS, r.uniqueId ?? randomUUID(), {
    user_id: user.id,
    campaign_id: campaign.id,
    start_time: r.startTime,
    seconds: r.seconds,
    end_time: new Date(r.startTime.getTime() + r.seconds * 1000),
  });
};
