import type pg from 'pg';
import { callStartMs } from './calls';
import { copyRows, copyTimestamp } from '../../data/copyIn';
import { sequenceNumber } from './copyWriter';
import { FLAG_READY, INDEX_BITS } from './plan';
import type { Prng } from './prng';
import type { RunRows } from './runRows';

/**
 * Agent ready periods: the agent was ready for a while (mostly up to 90 seconds, sometimes up
 * to 15 minutes) before the dialer handed over a call; the period ends when the call starts.
 * Walks the calls in start-time order, like the call rows.
 */
export async function copyReadyPeriods(conn: pg.PoolClient, run: RunRows, lengths: Prng, onRows: (n: number) => void): Promise<void> {
  const { prefix: P, window, campaigns, users, leads, calls } = run;
  const N = calls.count;
  const windowStartMs = window.startMs;
  const { campaign: leadCampaign } = leads;
  const { sortKey, flags: callFlags, msPart: callMsPart, user: callUser, lead: callLead } = calls;
  let readySeq = 0;
  await copyRows(
    conn,
    'ready_periods',
    ['unique_id', 'user_id', 'campaign_id', 'start_time', 'seconds', 'end_time'],
    function* () {
      for (let seq = 0; seq < N; seq++) {
        const key = sortKey[seq]!;
        const i = key % INDEX_BITS;
        if (!(callFlags[i]! & FLAG_READY)) continue;
        const end = callStartMs(windowStartMs, callMsPart, key, i);
        const seconds = lengths.chance(0.8) ? lengths.between(1, 90) : lengths.between(91, 900);
        yield `${P}-rp${sequenceNumber(readySeq++)}\t${users[callUser[i]!]!.id}\t${campaigns[leadCampaign[callLead[i]!]!]!.id}\t${copyTimestamp(end - seconds * 1000)}\t${seconds}\t${copyTimestamp(end)}\n`;
      }
    },
    onRows,
  );
}
