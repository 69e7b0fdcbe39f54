import { Knex } from 'knex';
import { useTestDb } from '../harness/useTestWorld';
import { generateSyntheticData, GenerateError, GenerateSummary, Prng } from '../../src/ingest/syntheticData';
import {
  CallEndCause,
  CallLeadStatus,
  CampaignType,
  CLOSED_LEAD_STATUSES,
  LeadClosure,
  LeadStatus,
  PreCallLeadStatus,
} from '../../src/domain/enums';

const ZONE = 'Europe/Copenhagen';
// A fixed seed and end date: the same data on every run. Other tests share the database;
// runs of one seed get prefixes of their own (g7, g7r2, ...), so a rerun never collides.
const SEED = 7;
const OPTIONS = { calls: 2000, leads: 500, seed: SEED, zone: ZONE, endDate: '2026-11-02', days: 30 };

describe('lcm generate (generateSyntheticData)', () => {
  const db = useTestDb({ timezone: ZONE });
  let summary: GenerateSummary;
  let like: string;
  const progress: [number, number][] = [];

  const one = async <T = Record<string, unknown>>(sql: string, bindings: unknown[] = []): Promise<T> =>
    (await db.raw(sql, [like, ...bindings] as Knex.RawBinding[])).rows[0] as T;
  const count = async (sql: string): Promise<number> => Number((await one<{ n: string }>(sql)).n);

  beforeAll(async () => {
    summary = await generateSyntheticData(db, { ...OPTIONS, onProgress: (done, total) => progress.push([done, total]) });
    like = `${summary.prefix}-%`;
  }, 120_000);

  it('when it ran, then it wrote the asked numbers of calls and leads under its own prefix', async () => {
    expect(summary.prefix).toMatch(new RegExp(`^g${SEED}(r\\d+)?$`));
    expect(await count(`select count(*) n from calls where unique_id like ?`)).toBe(2000);
    expect(await count(`select count(*) n from leads where unique_id like ?`)).toBe(500);
    expect(summary.counts).toMatchObject({ calls: 2000, leads: 500 });
    expect(await count(`select count(*) n from users where unique_id like ?`)).toBeGreaterThanOrEqual(200);
    const last = progress[progress.length - 1];
    expect(last[0]).toBe(last[1]);
  });

  it('when it ran, then the org tree has five levels and every call carries its user’s unit chain', async () => {
    expect(await count(`select count(distinct level) n from org_units where unique_id like ?`)).toBe(5);
    const mismatches = await count(`
      with recursive chain as (
        select u.id as user_id, o.id, o.level, o.parent_id
          from users u join org_units o on o.id = u.parent_id where u.unique_id like ?
        union all
        select c.user_id, o.id, o.level, o.parent_id from chain c join org_units o on o.id = c.parent_id),
      user_chain as (
        select user_id,
               max(id) filter (where level = 0) ou0, max(id) filter (where level = 1) ou1, max(id) filter (where level = 2) ou2,
               max(id) filter (where level = 3) ou3, max(id) filter (where level = 4) ou4
          from chain group by user_id)
      select count(*) n from calls k left join user_chain uc on uc.user_id = k.user_id
       where k.unique_id like '${summary.prefix}-%'
         and (uc.user_id is null or (k.ou0_id, k.ou1_id, k.ou2_id, k.ou3_id, k.ou4_id)
              is distinct from (uc.ou0, uc.ou1, uc.ou2, uc.ou3, uc.ou4))`);
    expect(mismatches).toBe(0);
    // Users sit at levels 2, 3 and 4, so chains of three, four and five units all occur.
    const depths = await db.raw(
      `select distinct (ou1_id is not null)::int + (ou2_id is not null)::int + (ou3_id is not null)::int + (ou4_id is not null)::int + 1 as depth
         from calls where unique_id like ?`,
      [like],
    );
    expect(depths.rows.map((r: { depth: number }) => r.depth).sort()).toEqual(expect.arrayContaining([4, 5]));
  });

  it('when it ran, then every call follows the call field rules (connect, end and duration fields agree)', async () => {
    const rules: [string, string][] = [
      ['connectTime only when connected', 'connect_time is not null and not connected'],
      ['a connected call has its connectTime', 'connected and connect_time is null'],
      ['endTime only when not in progress', '(end_time is null) <> in_progress'],
      ['conversationDuration only when connected and finished', '(conversation_ms is not null) <> (connected and not in_progress)'],
      ['dialingDuration absent only while dialing', 'dialing_ms is null and not (in_progress and not connected)'],
      ['wrapUpDuration exactly when a lead status was set', '(wrap_up_ms is null) <> (lead_status is null)'],
      ['leadStatus only after wrap-up', 'in_progress and lead_status is not null'],
      ['leadClosure only for UserProcessed', `lead_closure is not null and lead_status <> ${CallLeadStatus.toNumber('UserProcessed')}`],
      ['UserProcessed carries a closure', `lead_status = ${CallLeadStatus.toNumber('UserProcessed')} and lead_closure is null`],
      ['connectTime = startTime + dialingDuration', `connected and connect_time <> start_time + dialing_ms * interval '1 millisecond'`],
      ['endTime after startTime', 'end_time < start_time'],
      ['in-progress calls have end cause NotApplicable', `in_progress and end_cause <> ${CallEndCause.toNumber('NotApplicable')}`],
      ['enumerations hold known numbers', `not (end_cause = any(?) and (lead_status is null or lead_status = any(?)) and pre_call_lead_status = any(?)
          and (lead_closure is null or lead_closure = any(?)) and campaign_type = any(?))`],
    ];
    const values = (e: { values: Readonly<Record<string, number>> }) => Object.values(e.values);
    for (const [rule, violation] of rules) {
      const bindings = rule.startsWith('enumerations')
        ? [values(CallEndCause), values(CallLeadStatus), values(PreCallLeadStatus), values(LeadClosure), values(CampaignType)]
        : [];
      const n = Number((await one<{ n: string }>(`select count(*) n from calls where unique_id like ? and (${violation})`, bindings)).n);
      expect({ rule, violations: n }).toEqual({ rule, violations: 0 });
    }
    // Every kind of call occurs, so the rules above were really exercised.
    const kinds = await one<Record<string, string>>(`
      select count(*) filter (where connected) connected, count(*) filter (where not connected) unconnected,
             count(*) filter (where lead_status = 200) processed, count(*) filter (where incoming) incoming
        from calls where unique_id like ?`);
    for (const [kind, n] of Object.entries(kinds)) expect({ kind, some: Number(n) > 0 }).toEqual({ kind, some: true });
  });

  it('when it ran, then calls agree with their leads and campaigns', async () => {
    expect(
      await count(`
        select count(*) n from calls k join leads l on l.id = k.lead_id join campaigns c on c.id = k.campaign_id
         where k.unique_id like ? and (l.unique_id <> k.unique_lead_id or l.campaign_id <> k.campaign_id
            or l.phone_number <> k.lead_phone_number or l.external_key is distinct from k.lead_external_key
            or c.campaign_type <> k.campaign_type)`),
    ).toBe(0);
    expect(await count(`select count(*) n from calls where unique_id like ? and lead_id is null`)).toBe(0);
    // attempts counts the calls without contact (NoResponse, Busy, VoiceMail).
    expect(
      await count(`select count(*) n from leads l where unique_id like ?
                     and attempts <> (select count(*) from calls k where k.lead_id = l.id and k.end_cause in (2, 3, 4))`),
    ).toBe(0);
  });

  it('when it ran, then lead statuses follow the lifecycle', async () => {
    const statuses = await db.raw(`select distinct status from leads where unique_id like ?`, [like]);
    for (const { status } of statuses.rows) expect(() => LeadStatus.toName(status)).not.toThrow();
    // Uncalled leads are New (or expired by their campaign's limit).
    expect(
      await count(`select count(*) n from leads l where unique_id like ? and status not in (0, 500)
                     and not exists (select 1 from calls k where k.lead_id = l.id)`),
    ).toBe(0);
    // Each call starts from the status the previous call of its lead left.
    expect(
      await count(`
        select count(*) n from (
          select pre_call_lead_status, lag(lead_status) over (partition by lead_id order by start_time) prev
            from calls where unique_id like ?) x
         where pre_call_lead_status <> coalesce(prev, 0)`),
    ).toBe(0);
    // The lead's status and closure are those its last call left (or the sweeper's later move).
    expect(
      await count(`
        select count(*) n from leads l
          join lateral (select * from calls k where k.lead_id = l.id order by start_time desc limit 1) k on true
         where l.unique_id like ? and not k.in_progress and not (
               (k.lead_status = 200 and l.status = 200 and l.closure = k.lead_closure)
            or (k.lead_status = 300 and l.status in (150, 300))
            or (k.lead_status in (1, 2, 3) and l.status in (k.lead_status, 500))
            or (k.lead_status = 10 and l.status = 10)
            or (k.lead_status in (210, 400) and l.status = k.lead_status))`),
    ).toBe(0);
    expect(await count(`select count(*) n from leads where unique_id like ? and closure <> 0 and status <> 200`)).toBe(0);
    // Depleted exactly when the no-contact calls reach the campaign's maximum (VIP redials excepted).
    expect(
      await count(`select count(*) n from leads l join campaigns c on c.id = l.campaign_id where l.unique_id like ?
                     and ((l.status = 210) <> (c.max_attempts is not null and l.attempts >= c.max_attempts and l.status not in (10, 500)))
                     and l.status in (0, 1, 2, 3, 210)`),
    ).toBe(0);
    expect(await count(`select count(*) n from leads where unique_id like ? and status = 210`)).toBeGreaterThan(0);
    expect(await count(`select count(*) n from leads where unique_id like ? and status_changed_time > last_modified_time`)).toBe(0);
    // Nothing is left for the sweeper at the window end: due leads are already Abandoned or Expired.
    const end = summary.windowEnd;
    const due = await one<{ n: string }>(
      `select count(*) n from leads l join campaigns c on c.id = l.campaign_id where l.unique_id like ? and (
          (l.status in (0, 1, 2) and l.status_changed_time + c.expire_after <= ?)
       or (l.status = 3 and l.status_changed_time + c.private_expire_after <= ?)
       or (l.status = 150 and l.status_changed_time + c.abandon_after <= ?))`,
      [end, end, end],
    );
    expect(Number(due.n)).toBe(0);
    expect(await count(`select count(*) n from leads where unique_id like ? and status in (300, 500)`)).toBeGreaterThan(0);
    const closed = CLOSED_LEAD_STATUSES.map((s) => LeadStatus.toNumber(s));
    const { rows } = await db.raw(
      `select count(*) filter (where status = any(?::smallint[])) closed, count(*) called from leads l
          where unique_id like ? and exists (select 1 from calls k where k.lead_id = l.id)`,
      [closed, like],
    );
    const row = rows[0];
    expect(Number(row.closed) / Number(row.called)).toBeGreaterThan(0.5);
  });

  it('when it ran, then recordings belong to finished connected calls and ready periods end at start + seconds', async () => {
    expect(
      await count(`select count(*) n from recordings r join calls k on k.id = r.call_id where k.unique_id like ? and (not k.connected or k.in_progress)`),
    ).toBe(0);
    expect(
      await count(`select count(*) n from calls k where k.unique_id like ? and k.connected and not k.in_progress
                     and not exists (select 1 from recordings r where r.call_id = k.id and r.recording_type = 0)`),
    ).toBe(0);
    expect(await count(`select count(*) n from ready_periods where unique_id like ?`)).toBeGreaterThan(0);
    expect(
      await count(`select count(*) n from ready_periods where unique_id like ? and end_time <> start_time + seconds * interval '1 second'`),
    ).toBe(0);
  });

  it('when the same seed runs again, then it appends under a new prefix with the same content', async () => {
    const again = await generateSyntheticData(db, OPTIONS);
    expect(again.prefix).not.toBe(summary.prefix);
    const fingerprint = async (prefix: string) =>
      (
        await db.raw(
          `select md5(string_agg(concat_ws('|', split_part(unique_id, '-', 2), start_time, end_time, end_cause, lead_status,
                    pre_call_lead_status, conversation_ms, lead_phone_number), ',' order by unique_id)) f
             from calls where unique_id like ?`,
          [`${prefix}-%`],
        )
      ).rows[0].f;
    expect(await fingerprint(again.prefix)).toBe(await fingerprint(summary.prefix));
    expect(await count(`select count(*) n from calls where unique_id like ?`)).toBe(2000);
  }, 120_000);

  it('when calls are asked for without leads, then it refuses', async () => {
    await expect(generateSyntheticData(db, { ...OPTIONS, leads: 0 })).rejects.toThrow(GenerateError);
  });

  it('when seeded alike, then the PRNG repeats itself', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    const xs = Array.from({ length: 5 }, () => a.u32());
    expect(Array.from({ length: 5 }, () => b.u32())).toEqual(xs);
    expect(new Prng(43).u32()).not.toBe(xs[0]);
  });
});
