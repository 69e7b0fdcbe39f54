import type { Knex } from 'knex';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { untilValue } from '../harness/until';
import { CallLeadStatus, LeadClosure, LeadStatus, LeadStatusName, PreCallLeadStatus } from '../../src/domain/enums';
import { parseDateTime } from '../../src/domain/datetime';
import { CampaignLifecycleSettings, NO_LIMITS, sweepDecision } from '../../src/domain/lifecycle';
import { parseTimeSpan } from '../../src/domain/timespan';
import { sweepLeads } from '../../src/data/lifecycleSweep';
import { startLifecycleSweeper } from '../../src/jobs/lifecycleSweeper';
import { main } from '../../src/app/main';
import { createLogger } from '../../src/config/logger';

const CPH = 'Europe/Copenhagen';
const at = (s: string) => parseDateTime(s, CPH);

/** The columns of `leads` and `calls` these tests read. */
interface LeadTableRow {
  unique_id: string;
  status: number;
  closure: number;
  attempts: number;
  status_changed_time: Date;
  last_modified_time: Date;
  first_processed_time: Date | null;
  last_modified_by_user_id: number | null;
}
interface CallTableRow {
  unique_id: string;
  lead_status: number | null;
  pre_call_lead_status: number | null;
  lead_closure: number | null;
}

async function leadState(db: Knex, uniqueId: string) {
  const row = (await db<LeadTableRow>('leads').where({ unique_id: uniqueId }).first())!;
  return {
    status: LeadStatus.toName(row.status),
    closure: LeadClosure.toName(row.closure),
    attempts: row.attempts,
    statusChangedTime: row.status_changed_time,
    lastModifiedTime: row.last_modified_time,
    firstProcessedTime: row.first_processed_time,
    lastModifiedByUserId: row.last_modified_by_user_id,
  };
}

async function callState(db: Knex, uniqueId: string) {
  const row = (await db<CallTableRow>('calls')
    .where({ unique_id: uniqueId })
    .first('lead_status', 'pre_call_lead_status', 'lead_closure'))!;
  return {
    leadStatus: row.lead_status === null ? null : CallLeadStatus.toName(row.lead_status),
    preCallLeadStatus: row.pre_call_lead_status === null ? null : PreCallLeadStatus.toName(row.pre_call_lead_status),
    leadClosure: row.lead_closure === null ? null : LeadClosure.toName(row.lead_closure),
  };
}

describe('lead lifecycle applied to data', () => {
  const { t, w } = useTestWorld();
  /** A campaign with every limit: 2 attempts, abandon after 1 hour, expiry after 1 day (private: 3 days). */
  let limited: string;
  let limitedId: number;
  let unlimited: string;
  let unlimitedId: number;

  beforeAll(async () => {
    limited = `LIM-${w.id}`;
    unlimited = `UNL-${w.id}`;
    await t.load(
      {
        type: 'campaign',
        code: limited,
        name: 'Limited',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'PowerDialer',
        maxAttempts: 2,
        abandonAfter: 'PT1H',
        expireAfter: 'P1D',
        privateExpireAfter: 'P3D',
      },
      {
        type: 'campaign',
        code: unlimited,
        name: 'Unlimited',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
      },
    );
    limitedId = (await t.db<{ id: number; code: string }>('campaigns').where({ code: limited }).first('id'))!.id;
    unlimitedId = (await t.db<{ id: number; code: string }>('campaigns').where({ code: unlimited }).first('id'))!.id;
  });

  const newLead = async (campaign: string, status: LeadStatusName, changed: string, extra: Record<string, unknown> = {}) => {
    const uniqueId = uniq('lc-');
    await t.load({
      type: 'lead',
      uniqueId,
      campaign,
      status,
      uploadTime: changed,
      lastModifiedTime: changed,
      data: { Name: 'Lifecycle', Telefon: '12345678' },
      ...extra,
    });
    return uniqueId;
  };
  const call = (leadId: string, fields: Record<string, unknown> = {}) => ({
    type: 'call',
    uniqueId: uniq('call-'),
    campaign: limited,
    user: w.users.agent,
    uniqueLeadId: leadId,
    leadPhoneNumber: '12345678',
    endCause: 'NoResponse',
    inProgress: false,
    connected: false,
    incoming: false,
    startTime: '2026-02-10T10:00:00',
    endTime: '2026-02-10T10:00:30',
    previewDuration: 'PT2S',
    dialingDuration: 'PT28S',
    applyOutcome: true,
    ...fields,
  });

  describe('lcm load call records with applyOutcome', () => {
    it('when a New lead is not answered, then it becomes RedialAutomatic and the call records it', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const c = call(lead, { endCause: 'Busy' });
      await t.load(c);
      expect(await leadState(t.db, lead)).toMatchObject({ status: 'RedialAutomatic', attempts: 1 });
      expect(await callState(t.db, c.uniqueId)).toEqual({
        leadStatus: 'RedialAutomatic',
        preCallLeadStatus: 'New',
        leadClosure: null,
      });
    });

    it('when the last allowed attempt is not answered, then the lead is Depleted and the call says so, whatever was recorded', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const first = call(lead);
      const second = call(lead, {
        startTime: '2026-02-11T10:00:00',
        endTime: '2026-02-11T10:00:30',
        leadStatus: 'RedialAutomatic',
        preCallLeadStatus: 'New',
      });
      await t.load(first);
      await t.load(second);
      expect(await leadState(t.db, lead)).toMatchObject({ status: 'Depleted', attempts: 2 });
      expect(await callState(t.db, second.uniqueId)).toEqual({
        leadStatus: 'Depleted',
        preCallLeadStatus: 'RedialAutomatic',
        leadClosure: null,
      });
    });

    it('when a manual common redial is not answered, then it never moves to RedialAutomatic', async () => {
      const lead = await newLead(limited, 'RedialManualCommon', '2026-02-01T09:00:00');
      const c = call(lead, { endCause: 'VoiceMail' });
      await t.load(c);
      expect(await leadState(t.db, lead)).toMatchObject({ status: 'RedialManualCommon', attempts: 1 });
      expect((await callState(t.db, c.uniqueId)).leadStatus).toBe('RedialManualCommon');
    });

    it('when the agent closes the lead with a closure, then lead and call carry UserProcessed and the closure, and the times follow the call', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const c = call(lead, {
        endCause: 'NormalDisconnect',
        connected: true,
        connectTime: '2026-02-10T10:00:10',
        conversationDuration: 'PT20S',
        wrapUpDuration: 'PT1M',
        leadStatus: 'UserProcessed',
        leadClosure: 'Success',
      });
      await t.load(c);
      const state = await leadState(t.db, lead);
      expect(state).toMatchObject({ status: 'UserProcessed', closure: 'Success', attempts: 0 });
      expect(state.lastModifiedTime.toISOString()).toBe(at('2026-02-10T10:01:30').toISOString()); // end + wrap-up
      expect(state.statusChangedTime.toISOString()).toBe(at('2026-02-10T10:01:30').toISOString());
      expect(state.firstProcessedTime!.toISOString()).toBe(at('2026-02-10T10:00:00').toISOString());
      expect(await callState(t.db, c.uniqueId)).toEqual({
        leadStatus: 'UserProcessed',
        preCallLeadStatus: 'New',
        leadClosure: 'Success',
      });
    });

    it('when the agent does not save the lead, then the lead is Unresolved and the call Abandoned', async () => {
      const lead = await newLead(limited, 'RedialAutomatic', '2026-02-01T09:00:00');
      const c = call(lead, { endCause: 'NormalDisconnect', connected: true, connectTime: '2026-02-10T10:00:10', leadStatus: 'Abandoned' });
      await t.load(c);
      expect((await leadState(t.db, lead)).status).toBe('Unresolved');
      expect(await callState(t.db, c.uniqueId)).toEqual({
        leadStatus: 'Abandoned',
        preCallLeadStatus: 'RedialAutomatic',
        leadClosure: null,
      });
    });

    it.each([
      ['RedialManualPrivate', 'RedialManualPrivate'],
      ['VIPRedial', 'VIPRedial'],
      ['RedialManualCommon', 'RedialManualCommon'],
    ] as const)('when the agent schedules a redial recorded as %s, then the lead becomes %s', async (recorded, expected) => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      await t.load(call(lead, { endCause: 'NormalDisconnect', connected: true, connectTime: '2026-02-10T10:00:10', leadStatus: recorded }));
      expect((await leadState(t.db, lead)).status).toBe(expected);
    });

    it('when a call was transferred or followed by an alternative number, then the lead status is untouched', async () => {
      const lead = await newLead(limited, 'RedialManualCommon', '2026-02-01T09:00:00');
      const transferred = call(lead, {
        endCause: 'NormalDisconnect',
        connected: true,
        connectTime: '2026-02-10T10:00:10',
        leadStatus: 'Transferred',
      });
      const alternative = call(lead, { endCause: 'NoResponse', leadStatus: 'AlternativeNumberDialed' });
      await t.load(transferred, alternative);
      expect((await leadState(t.db, lead)).status).toBe('RedialManualCommon');
      expect((await callState(t.db, transferred.uniqueId)).leadStatus).toBe('Transferred');
      expect((await callState(t.db, alternative.uniqueId)).leadStatus).toBe('AlternativeNumberDialed');
    });

    it('when the system finds the lead unreachable, then an open lead is Failed', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const c = call(lead, { endCause: 'DroppedCall', leadStatus: 'Failed' });
      await t.load(c);
      expect((await leadState(t.db, lead)).status).toBe('Failed');
      expect((await callState(t.db, c.uniqueId)).leadStatus).toBe('Failed');
    });

    it('when the same call is loaded twice, then its outcome is applied once', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const c = call(lead);
      await t.load(c);
      await t.load(c);
      expect(await leadState(t.db, lead)).toMatchObject({ status: 'RedialAutomatic', attempts: 1 });
      expect((await callState(t.db, c.uniqueId)).leadStatus).toBe('RedialAutomatic');
    });

    it('when a call is still in progress, then only its pre-call status is set, and the outcome follows when it is loaded finished', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const running = call(lead, { inProgress: true, endTime: undefined, dialingDuration: undefined });
      await t.load(running);
      expect((await leadState(t.db, lead)).status).toBe('New');
      expect(await callState(t.db, running.uniqueId)).toEqual({ leadStatus: null, preCallLeadStatus: 'New', leadClosure: null });
      await t.load({ ...running, inProgress: false, endTime: '2026-02-10T10:00:30', dialingDuration: 'PT28S' });
      expect((await leadState(t.db, lead)).status).toBe('RedialAutomatic');
    });

    it('when the lead of the call does not exist, then the load fails and keeps nothing', async () => {
      const c = call(`missing-${w.id}`);
      await expect(t.load(c)).rejects.toThrow(/lead .*does not exist/);
      expect(await t.db('calls').where({ unique_id: c.uniqueId })).toHaveLength(0);
    });

    it('when applyOutcome is absent, then the call is stored as given and the lead untouched', async () => {
      const lead = await newLead(limited, 'New', '2026-02-01T09:00:00');
      const c = call(lead, { applyOutcome: undefined, leadStatus: 'RedialAutomatic', preCallLeadStatus: 'New' });
      await t.load(c);
      expect(await leadState(t.db, lead)).toMatchObject({ status: 'New', attempts: 0 });
    });
  });

  describe('sweepLeads', () => {
    const sweep = (now: string, batchSize?: number) =>
      sweepLeads(t.db, at(now), CPH, { campaignIds: [limitedId, unlimitedId], ...(batchSize ? { batchSize } : {}) });

    it('when an Unresolved lead passes abandonAfter, then it becomes Abandoned (not a moment before)', async () => {
      const lead = await newLead(limited, 'Unresolved', '2026-01-05T10:00:00');
      await sweep('2026-01-05T10:59:59.999');
      expect((await leadState(t.db, lead)).status).toBe('Unresolved');
      const result = await sweep('2026-01-05T11:00:00');
      expect(result.abandoned).toBeGreaterThanOrEqual(1);
      const state = await leadState(t.db, lead);
      expect(state.status).toBe('Abandoned');
      expect(state.lastModifiedTime.toISOString()).toBe(at('2026-01-05T11:00:00').toISOString());
      expect(state.lastModifiedByUserId).toBeNull();
    });

    it.each(['New', 'RedialAutomatic', 'RedialManualCommon'] as const)(
      'when a %s lead passes expireAfter, then it becomes Expired',
      async (status) => {
        const lead = await newLead(limited, status, '2026-01-06T10:00:00');
        await sweep('2026-01-07T09:59:59');
        expect((await leadState(t.db, lead)).status).toBe(status);
        await sweep('2026-01-07T10:00:00');
        expect((await leadState(t.db, lead)).status).toBe('Expired');
      },
    );

    it('when a private redial passes expireAfter but not privateExpireAfter, then it waits for its own limit', async () => {
      const lead = await newLead(limited, 'RedialManualPrivate', '2026-01-06T10:00:00');
      await sweep('2026-01-08T10:00:00');
      expect((await leadState(t.db, lead)).status).toBe('RedialManualPrivate');
      await sweep('2026-01-09T10:00:00');
      expect((await leadState(t.db, lead)).status).toBe('Expired');
    });

    it('when a VIP redial is very old, then it never expires', async () => {
      const lead = await newLead(limited, 'VIPRedial', '2020-01-01T10:00:00');
      await sweep('2026-01-09T10:00:00');
      expect((await leadState(t.db, lead)).status).toBe('VIPRedial');
    });

    it('when the campaign has no limits, then its leads never move', async () => {
      const leads = await Promise.all(
        (['New', 'RedialAutomatic', 'RedialManualCommon', 'RedialManualPrivate', 'Unresolved'] as const).map((s) =>
          newLead(unlimited, s, '2020-01-01T10:00:00'),
        ),
      );
      await sweep('2026-01-09T10:00:00');
      const statuses = await Promise.all(leads.map(async (l) => (await leadState(t.db, l)).status));
      expect(statuses).toEqual(['New', 'RedialAutomatic', 'RedialManualCommon', 'RedialManualPrivate', 'Unresolved']);
    });

    it('when a lead is closed, then it does not expire', async () => {
      const lead = await newLead(limited, 'UserProcessed', '2020-01-01T10:00:00', { closure: 'Success' });
      await sweep('2026-01-09T10:00:00');
      expect((await leadState(t.db, lead)).status).toBe('UserProcessed');
    });

    it('when the limit is one day across the spring DST change, then it is a calendar day (23 hours)', async () => {
      const lead = await newLead(limited, 'New', '2026-03-28T12:00:00');
      await sweep('2026-03-29T11:59:59'); // 22:59:59 later
      expect((await leadState(t.db, lead)).status).toBe('New');
      await sweep('2026-03-29T12:00:00'); // 23 hours later, the same wall time
      expect((await leadState(t.db, lead)).status).toBe('Expired');
    });

    it('when more leads are due than one batch holds, then every one is moved', async () => {
      const leads = await Promise.all(Array.from({ length: 7 }, () => newLead(limited, 'Unresolved', '2026-01-20T08:00:00')));
      const result = await sweep('2026-01-20T12:00:00', 3);
      expect(result.abandoned).toBeGreaterThanOrEqual(7);
      for (const l of leads) expect((await leadState(t.db, l)).status).toBe('Abandoned');
    });

    it('when leads of every open status and age are swept, then each ends as the pure rules decide', async () => {
      const settings: CampaignLifecycleSettings = {
        ...NO_LIMITS,
        maxAttempts: 2,
        abandonAfter: parseTimeSpan('PT1H'),
        expireAfter: parseTimeSpan('P1D'),
        privateExpireAfter: parseTimeSpan('P3D'),
      };
      const now = '2026-02-20T12:00:00';
      const cases: { lead: string; status: LeadStatusName; changed: string }[] = [];
      for (const status of [
        'New',
        'RedialAutomatic',
        'RedialManualCommon',
        'RedialManualPrivate',
        'VIPRedial',
        'Unresolved',
        'UserProcessed',
        'Failed',
      ] as const) {
        for (const changed of [
          '2026-02-20T11:30:00',
          '2026-02-20T10:30:00',
          '2026-02-19T11:00:00',
          '2026-02-17T11:00:00',
          '2026-02-10T00:00:00',
        ]) {
          cases.push({ lead: await newLead(limited, status, changed), status, changed });
        }
      }
      await sweep(now);
      for (const c of cases) {
        const decided = sweepDecision({ status: c.status, statusChangedTime: at(c.changed) }, settings, at(now), CPH);
        expect({ ...c, result: (await leadState(t.db, c.lead)).status }).toEqual({ ...c, result: decided ?? c.status });
      }
    });
  });

  describe('lcm lifecycle sweep and the server sweeper', () => {
    let realDatabaseUrl: string | undefined;
    beforeAll(() => {
      realDatabaseUrl = process.env.DATABASE_URL;
      process.env.DATABASE_URL = process.env.TEST_DATABASE_URL;
    });
    afterAll(() => {
      if (realDatabaseUrl === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = realDatabaseUrl;
    });

    it('when `lcm lifecycle sweep` runs, then leads already due are moved and the counts are printed', async () => {
      const lead = await newLead(limited, 'Unresolved', '2020-01-01T10:00:00');
      const out: string[] = [];
      const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out.push(String(chunk));
        return true;
      });
      try {
        expect(await main(['node', 'lcm', 'lifecycle', 'sweep'])).toBe(0);
      } finally {
        write.mockRestore();
      }
      expect(out.join('')).toMatch(/^swept: \d+ abandoned, \d+ expired/);
      expect((await leadState(t.db, lead)).status).toBe('Abandoned');
    });

    it('when --now is not a date, then the command fails with a reason', async () => {
      await expect(main(['node', 'lcm', 'lifecycle', 'sweep', '--now', 'soon'])).rejects.toThrow(/--now/);
    });

    it('when the server sweeper runs, then it moves due leads on its interval until stopped', async () => {
      const lead = await newLead(limited, 'RedialManualPrivate', '2020-01-01T10:00:00');
      const stop = startLifecycleSweeper(t.db, { ...t.settings, SWEEP_INTERVAL_MS: 50 }, createLogger('silent'));
      try {
        await untilValue(
          'the sweeper to expire the lead',
          () => leadState(t.db, lead),
          (state) => state.status === 'Expired',
          { timeoutMs: 5000 },
        );
      } finally {
        stop();
      }
    });

    it('when SWEEP_INTERVAL_MS is 0, then no sweeper runs', async () => {
      const lead = await newLead(limited, 'Unresolved', '2020-01-01T10:00:00');
      const stop = startLifecycleSweeper(t.db, { ...t.settings, SWEEP_INTERVAL_MS: 0 }, createLogger('silent'));
      await new Promise((r) => setTimeout(r, 200));
      stop();
      expect((await leadState(t.db, lead)).status).toBe('Unresolved');
    });
  });
});
