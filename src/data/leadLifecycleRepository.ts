import type { Knex } from 'knex';
import type { PartitionedKey } from './uniqueIdRegistry';
import {
  CallEndCause,
  CallEndCauseName,
  CallLeadStatus,
  CallLeadStatusName,
  LeadClosure,
  LeadClosureName,
  LeadStatus,
  LeadStatusName,
  PreCallLeadStatus,
  PreCallLeadStatusName,
} from '../domain/enums';
import { CallOutcome, NO_LIMITS, preCallLeadStatusFor, recordCallOutcome } from '../domain/lifecycle';

/**
 * Applies a recorded call's outcome to its lead through the lifecycle rules
 * (src/domain/lifecycle.ts), and gives the call the statuses those rules produce, so the call's
 * leadStatus, preCallLeadStatus and leadClosure always agree with what happened to the lead.
 */

/** The call statuses stored on the call once its outcome was applied. */
interface AppliedOutcome {
  leadStatus: number | null;
  preCallLeadStatus: number | null;
  leadClosure: number | null;
}

/**
 * What a recorded call says happened at wrap-up, read from the call status it was recorded with
 * (docs/decisions.md, Leads): the agent's action, a failure, a transfer or a follow-up to an alternative number.
 * Statuses the dialer sets on its own (RedialAutomatic, Depleted, NotSet, ...) carry no action:
 * the rules decide them from the end cause and the campaign's maximum attempts.
 */
export function outcomeOfRecordedCall(call: {
  endCause: CallEndCauseName;
  leadStatus: CallLeadStatusName | null;
  preCallLeadStatus: PreCallLeadStatusName | null;
  leadClosure: LeadClosureName | null;
}): CallOutcome {
  const outcome: CallOutcome = { endCause: call.endCause };
  if (call.preCallLeadStatus === 'AlternativeNumberDialed') outcome.followUp = 'alternativeNumber';
  else if (call.preCallLeadStatus === 'NextNumberDialed') outcome.followUp = 'nextNumber';
  switch (call.leadStatus) {
    case 'UserProcessed':
      outcome.agentAction = 'close';
      if (call.leadClosure !== null) outcome.closure = call.leadClosure;
      break;
    case 'RedialManualCommon':
      outcome.agentAction = 'redialCommon';
      break;
    case 'RedialManualPrivate':
      outcome.agentAction = 'redialPrivate';
      break;
    case 'VIPRedial':
      outcome.agentAction = 'redialVip';
      break;
    case 'Abandoned':
      // A lead left Unresolved at wrap-up gives the call Abandoned.
      outcome.agentAction = 'notSaved';
      break;
    case 'Failed':
      outcome.failed = true;
      break;
    case 'Transferred':
      outcome.transferred = true;
      break;
    case 'AlternativeNumberDialed':
      outcome.alternativeNumber = true;
      break;
    default:
      break;
  }
  return outcome;
}

const numOrNull = <N extends string>(e: { toNumber(n: N): number }, name: N | null) => (name === null ? null : e.toNumber(name));

/** A lead whose status an applied outcome changed (for its lead.statusChanged event). */
export interface LeadStatusChange {
  leadId: number;
  previousStatus: LeadStatusName;
  status: LeadStatusName;
}

/** The call as applyCallOutcomeToLead reads it. */
interface CallOutcomeRow {
  id: number;
  unique_lead_id: string;
  lead_id: number | null;
  user_id: number;
  end_cause: number;
  in_progress: boolean;
  lead_status: number | null;
  pre_call_lead_status: number | null;
  lead_closure: number | null;
  applied_outcome: AppliedOutcome | null;
  start_time: Date;
  wrap_up_time: Date;
}

/**
 * Applies the outcome of the call (its id and start time, which finds its month's partition)
 * to its lead inside `trx`. A call loaded again keeps the
 * statuses of its first application and the lead is not touched twice. A call still in
 * progress has no outcome yet: only its preCallLeadStatus is set. Returns the lead's status
 * change when there was one.
 */
export async function applyCallOutcomeToLead(trx: Knex.Transaction, key: PartitionedKey): Promise<LeadStatusChange | undefined> {
  const callId = key.id;
  const byKey = { id: key.id, start_time: key.time };
  const { rows } = await trx.raw<{ rows: CallOutcomeRow[] }>(
    `select c.id, c.unique_lead_id, c.lead_id, c.user_id, c.end_cause, c.in_progress, c.lead_status,
            c.pre_call_lead_status, c.lead_closure, c.applied_outcome, c.start_time,
            coalesce(c.end_time + coalesce(c.wrap_up_ms, 0) * interval '1 millisecond', c.end_time, c.start_time) as wrap_up_time
       from calls c where c.id = ? and c.start_time = ?`,
    [key.id, key.time],
  );
  const call = rows[0];
  if (!call) throw new Error(`call ${callId} does not exist`);

  const applied = call.applied_outcome;
  if (applied !== null) {
    await trx('calls').where(byKey).update({
      lead_status: applied.leadStatus,
      pre_call_lead_status: applied.preCallLeadStatus,
      lead_closure: applied.leadClosure,
    });
    return undefined;
  }
  if (call.lead_id === null) {
    throw new Error(`applyOutcome needs the call's lead, and lead ${JSON.stringify(call.unique_lead_id)} does not exist`);
  }

  const { rows: leadRows } = await trx.raw<{
    rows: { id: number; status: number; closure: number; attempts: number; max_attempts: number | null }[];
  }>(
    `select l.id, l.status, l.closure, l.attempts, c.max_attempts
       from leads l join campaigns c on c.id = l.campaign_id
      where l.id = ? for update of l`,
    [call.lead_id],
  );
  const lead = leadRows[0]!;
  const leadStatus = LeadStatus.toName(lead.status);

  if (call.in_progress) {
    // Not applied yet: the call's outcome is applied when it is loaded again, finished.
    const pre = call.pre_call_lead_status === null ? null : PreCallLeadStatus.toName(call.pre_call_lead_status);
    const followUp = pre === 'AlternativeNumberDialed' ? 'alternativeNumber' : pre === 'NextNumberDialed' ? 'nextNumber' : undefined;
    await trx('calls')
      .where(byKey)
      .update({
        lead_status: null,
        lead_closure: null,
        pre_call_lead_status: numOrNull(PreCallLeadStatus, preCallLeadStatusFor(leadStatus, followUp)),
      });
    return undefined;
  }
  const outcome = outcomeOfRecordedCall({
    endCause: CallEndCause.toName(call.end_cause),
    leadStatus: call.lead_status === null ? null : CallLeadStatus.toName(call.lead_status),
    preCallLeadStatus: call.pre_call_lead_status === null ? null : PreCallLeadStatus.toName(call.pre_call_lead_status),
    leadClosure: call.lead_closure === null ? null : LeadClosure.toName(call.lead_closure),
  });
  const r = recordCallOutcome({ status: leadStatus, attempts: lead.attempts, closure: LeadClosure.toName(lead.closure) }, outcome, {
    ...NO_LIMITS,
    maxAttempts: lead.max_attempts,
  });
  const wrapUp = call.wrap_up_time;
  await trx('leads')
    .where({ id: lead.id })
    .update({
      status: LeadStatus.toNumber(r.leadStatus),
      closure: LeadClosure.toNumber(r.closure),
      attempts: r.attempts,
      ...(r.restartStatusClock ? { status_changed_time: wrapUp } : {}),
      // Calls may be loaded out of order: the lead's modified time never goes back.
      last_modified_time: trx.raw('greatest(last_modified_time, ?)', [wrapUp]),
      last_modified_by_user_id: call.user_id,
      first_processed_time: trx.raw('coalesce(first_processed_time, ?)', [call.start_time]),
      first_processed_by_user_id: trx.raw('coalesce(first_processed_by_user_id, ?)', [call.user_id]),
    });
  const result: AppliedOutcome = {
    leadStatus: CallLeadStatus.toNumber(r.callLeadStatus),
    preCallLeadStatus: numOrNull(PreCallLeadStatus, r.preCallLeadStatus),
    leadClosure: numOrNull(LeadClosure, r.callLeadClosure),
  };
  await trx('calls')
    .where(byKey)
    .update({
      lead_status: result.leadStatus,
      pre_call_lead_status: result.preCallLeadStatus,
      lead_closure: result.leadClosure,
      applied_outcome: JSON.stringify(result),
    });
  return r.leadStatus === leadStatus ? undefined : { leadId: lead.id, previousStatus: leadStatus, status: r.leadStatus };
}
