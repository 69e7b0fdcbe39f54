import type pg from 'pg';
import { RecordingType } from '../../domain/enums';
import { copyEscape, copyRows, copyTimestamp } from '../../data/copyIn';
import { sequenceNumber } from './copyWriter';
import type { LeadContacts } from './leads';
import { FLAG_CONNECTED, FLAG_INCOMING, FLAG_IN_PROGRESS, FLAG_PARTIAL, INDEX_BITS, NULL16, NULL8 } from './plan';
import type { RunRows } from './runRows';

/**
 * The calls, in start-time order (so ids and unique ids grow with time), and the recordings of
 * the connected, finished ones. Both walk the plan's sorted keys: call sortCallsByStart first.
 */

/** A call's start time: the second in its sort key plus the call's milliseconds. */
export function callStartMs(windowStartMs: number, msPart: Uint16Array, key: number, i: number): number {
  return windowStartMs + Math.floor(key / INDEX_BITS) * 1000 + msPart[i]!;
}

export async function copyCalls(conn: pg.PoolClient, run: RunRows, contacts: LeadContacts, onRows: (n: number) => void): Promise<void> {
  const { prefix: P, leadBase, callBase, window, campaigns, users, leads, calls } = run;
  const N = calls.count;
  const windowStartMs = window.startMs;
  const { campaign: leadCampaign } = leads;
  const {
    sortKey,
    lead: callLead,
    user: callUser,
    flags: callFlags,
    msPart: callMsPart,
    dialing: callDialing,
    conversation: callConversation,
  } = calls;
  const {
    endCause: callEndCause,
    preview: callPreview,
    wrapUp: callWrapUp,
    status: callStatus,
    pre: callPre,
    closure: callClosure,
  } = calls;
  const { phone: leadPhone, key: leadKey } = contacts;
  await copyRows(
    conn,
    'calls',
    [
      'id',
      'unique_id',
      'campaign_id',
      'lead_id',
      'unique_lead_id',
      'user_id',
      'ou0_id',
      'ou1_id',
      'ou2_id',
      'ou3_id',
      'ou4_id',
      'lead_phone_number',
      'lead_external_key',
      'end_cause',
      'in_progress',
      'connected',
      'incoming',
      'start_time',
      'connect_time',
      'end_time',
      'preview_ms',
      'dialing_ms',
      'conversation_ms',
      'wrap_up_ms',
      'lead_status',
      'pre_call_lead_status',
      'lead_closure',
      'campaign_type',
    ],
    function* () {
      for (let seq = 0; seq < N; seq++) {
        const key = sortKey[seq]!;
        const i = key % INDEX_BITS;
        const l = callLead[i]!;
        const c = campaigns[leadCampaign[l]!]!;
        const u = users[callUser[i]!]!;
        const f = callFlags[i]!;
        const connected = (f & FLAG_CONNECTED) !== 0;
        const inProgress = (f & FLAG_IN_PROGRESS) !== 0;
        const start = callStartMs(windowStartMs, callMsPart, key, i);
        const dialing = callDialing[i]!;
        const conversation = callConversation[i]!;
        const connectTime = connected ? copyTimestamp(start + dialing) : '\\N';
        const endTime = inProgress ? '\\N' : copyTimestamp(start + dialing + Math.max(conversation, 0));
        yield (
          `${callBase + seq}\t${P}-k${sequenceNumber(seq)}\t${c.id}\t${leadBase + l}\t${P}-l${sequenceNumber(l)}\t${u.id}\t${u.chainCols}\t` +
          `${copyEscape(leadPhone[l]!)}\t${copyEscape(leadKey[l]!)}\t${callEndCause[i]}\t${inProgress ? 't' : 'f'}\t${connected ? 't' : 'f'}\t` +
          `${f & FLAG_INCOMING ? 't' : 'f'}\t${copyTimestamp(start)}\t${connectTime}\t${endTime}\t${callPreview[i]}\t${dialing < 0 ? '\\N' : dialing}\t` +
          `${conversation < 0 ? '\\N' : conversation}\t${callWrapUp[i]! < 0 ? '\\N' : callWrapUp[i]}\t` +
          `${callStatus[i] === NULL16 ? '\\N' : callStatus[i]}\t${callPre[i]}\t${callClosure[i] === NULL8 ? '\\N' : callClosure[i]}\t${c.typeNumber}\n`
        );
      }
    },
    onRows,
  );
}

/**
 * A full recording of every connected, finished call; some also a supervisor's partial one.
 * Each carries its call's start time, the month partition it shares with its call.
 */
export async function copyRecordings(conn: pg.PoolClient, run: RunRows, onRows: (n: number) => void): Promise<void> {
  const { prefix: P, callBase, window, calls } = run;
  const N = calls.count;
  const { days, dayName, startMs: windowStartMs } = window;
  const { sortKey, flags: callFlags, msPart: callMsPart, dialing: callDialing, conversation: callConversation } = calls;
  const FULL = RecordingType.toNumber('FullRecording');
  const PARTIAL = RecordingType.toNumber('PartialRecording');
  await copyRows(
    conn,
    'recordings',
    ['call_id', 'call_start_time', 'start_time', 'end_time', 'recording_type', 'file_name'],
    function* () {
      for (let seq = 0; seq < N; seq++) {
        const key = sortKey[seq]!;
        const i = key % INDEX_BITS;
        const f = callFlags[i]!;
        if ((f & (FLAG_CONNECTED | FLAG_IN_PROGRESS)) !== FLAG_CONNECTED) continue;
        const start = callStartMs(windowStartMs, callMsPart, key, i);
        const callStart = copyTimestamp(start);
        const connect = start + callDialing[i]!;
        const conversation = callConversation[i]!;
        const end = connect + conversation;
        const file = `${dayName[Math.min(days - 1, Math.floor((connect - windowStartMs) / 86_400_000))]}/${P}-k${sequenceNumber(seq)}`;
        yield `${callBase + seq}\t${callStart}\t${copyTimestamp(connect)}\t${copyTimestamp(end)}\t${FULL}\t${file}.wav\n`;
        if (f & FLAG_PARTIAL) {
          // A supervisor's partial recording of the middle of the conversation.
          const from = connect + Math.floor(conversation / 4);
          yield `${callBase + seq}\t${callStart}\t${copyTimestamp(from)}\t${copyTimestamp(from + Math.floor(conversation / 2))}\t${PARTIAL}\t${file}-partial.wav\n`;
        }
      }
    },
    onRows,
  );
}
