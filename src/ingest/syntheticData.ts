import type { Knex } from 'knex';
import type pg from 'pg';
import { DateTime } from 'luxon';
import { callWindow } from './synthetic/callWindow';
import { copyCalls, copyRecordings } from './synthetic/calls';
import { insertCampaigns } from './synthetic/campaigns';
import { copyLeads } from './synthetic/leads';
import { insertOrganization } from './synthetic/organization';
import { INDEX_BITS, planLeadsAndCalls, sortCallsByStart } from './synthetic/plan';
import { Prng, STREAMS } from './synthetic/prng';
import { copyReadyPeriods } from './synthetic/readyPeriods';
import { claimRunPrefix, reserveIdBlocks } from './synthetic/runKeys';
import type { RunRows } from './synthetic/runRows';
import { ensureMonthPartitions } from '../data/partitions';
import { knexClient } from '../data/db';

/**
 * `lcm generate`: a realistic synthetic data set appended to the database in one transaction
 * (docs/decisions.md, Synthetic data). This module validates the options and runs the phases
 * of ./synthetic in order: the org tree and users, then lead definitions, campaigns and pools
 * (ordinary inserts); a plan of every lead's and call's values in typed arrays; then leads,
 * calls with their recordings, and ready periods through COPY FROM STDIN fed by generators, so
 * backpressure reaches the generator and memory stays flat apart from the plan.
 *
 * For a given seed, run number, end date and days the content is identical (a test keeps a
 * checksum of every table).
 */

export interface GenerateOptions {
  calls: number;
  leads: number;
  seed?: number;
  /** Platform time zone: days, production hours and pool names are local to it. */
  zone: string;
  /** The window ends at local midnight starting this date (yyyy-MM-dd); default today. */
  endDate?: string;
  /** Length of the call window in days (7..180); default 90. */
  days?: number;
  onProgress?: (done: number, total: number, phase: string) => void;
}

export interface GenerateSummary {
  prefix: string;
  seed: number;
  windowStart: Date;
  windowEnd: Date;
  counts: Record<string, number>;
  /** Milliseconds per phase. */
  timings: Record<string, number>;
}

export class GenerateError extends Error {}

export async function generateSyntheticData(db: Knex, options: GenerateOptions): Promise<GenerateSummary> {
  const seed = options.seed ?? 1;
  const days = options.days ?? 90;
  const L = options.leads;
  const N = options.calls;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new GenerateError('--seed must be an integer from 0 to 4294967295');
  if (!Number.isInteger(L) || L < 0) throw new GenerateError('--leads must be a non-negative integer');
  if (!Number.isInteger(N) || N < 0 || N >= INDEX_BITS) throw new GenerateError(`--calls must be an integer from 0 to ${INDEX_BITS - 1}`);
  if (N > 0 && L === 0) throw new GenerateError('calls need leads: give --leads of at least 1');
  if (L > 999_999_999) throw new GenerateError('--leads must be below 1000000000');
  if (!Number.isInteger(days) || days < 7 || days > 180) throw new GenerateError('--days must be from 7 to 180');

  const zone = options.zone;
  const endDay = options.endDate ? DateTime.fromISO(options.endDate, { zone }) : DateTime.now().setZone(zone).startOf('day');
  if (!endDay.isValid || (options.endDate && !/^\d{4}-\d{2}-\d{2}$/.test(options.endDate))) {
    throw new GenerateError(`bad end date ${JSON.stringify(options.endDate)}: expected yyyy-MM-dd`);
  }
  const window = callWindow(endDay, days);

  const timings: Record<string, number> = {};
  let phaseStart = Date.now();
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = now - phaseStart;
    phaseStart = now;
  };
  const counts: Record<string, number> = {};
  let prefix = '';

  const { leadBase, callBase } = await reserveIdBlocks(db, L, N);
  // The window's month partitions exist before the data transaction (creating one needs locks
  // a COPY in progress would hold), so no row waits in a default partition.
  await ensureMonthPartitions(db, new Date(window.startMs), new Date(window.endMs));

  await db.transaction(async (trx) => {
    prefix = await claimRunPrefix(trx, seed);
    const organizationDraws = new Prng(seed, STREAMS.organization);
    const organization = await insertOrganization(trx, prefix, organizationDraws);
    counts.orgUnits = organization.units.length;
    counts.users = organization.users.length;
    const { definitionCount, campaigns } = await insertCampaigns(trx, prefix, organization, window, organizationDraws);
    counts.leadDefinitions = definitionCount;
    counts.campaigns = campaigns.length;
    phase('setup');

    const { leads, calls } = planLeadsAndCalls(new Prng(seed, STREAMS.plan), L, N, campaigns, window, zone);
    const total = L + N + calls.recordingCount + calls.readyPeriodCount;
    let done = 0;
    const progress = (phaseName: string) => (n: number) => {
      done += n;
      options.onProgress?.(done, total, phaseName);
    };
    options.onProgress?.(0, total, 'leads');
    phase('plan');

    const conn = (await knexClient(trx).acquireConnection()) as pg.PoolClient;
    const rows: RunRows = { prefix, leadBase, callBase, window, campaigns, users: organization.users, leads, calls };

    const contacts = await copyLeads(conn, rows, new Prng(seed, STREAMS.leadData), progress('leads'));
    counts.leads = L;
    phase('leads');

    // From here on the calls are visited in start-time order.
    sortCallsByStart(calls);
    await copyCalls(conn, rows, contacts, progress('calls'));
    counts.calls = N;
    phase('calls');

    await copyRecordings(conn, rows, progress('recordings'));
    counts.recordings = calls.recordingCount;
    phase('recordings');

    await copyReadyPeriods(conn, rows, new Prng(seed, STREAMS.readyPeriods), progress('ready periods'));
    counts.readyPeriods = calls.readyPeriodCount;
    phase('readyPeriods');
  });
  phase('commit');

  await db.raw(
    'ANALYZE org_units, users, lead_definitions, lead_definition_fields, campaigns, user_campaigns, lead_pools, leads, calls, recordings, ready_periods',
  );
  phase('analyze');

  return { prefix, seed, windowStart: new Date(window.startMs), windowEnd: new Date(window.endMs), counts, timings };
}
