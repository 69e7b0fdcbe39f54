import { Knex } from 'knex';
import { useOwnDatabase } from '../harness/useTestWorld';
import { generateSyntheticData, GenerateError, GenerateSummary } from '../../src/ingest/syntheticData';
import { Prng } from '../../src/ingest/synthetic/prng';
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

/**
 * Every table's content of one run as an md5 per table. Ids become what they point to (unique
 * ids, pool names) or their offset in the run's id block, and the run prefix becomes `{P}`, so
 * two runs of one seed compare equal while any change of a value, a row or its order does not.
 */
const RUN_CONTENT: Record<string, string> = {
  org_units: `select x.unique_id k, to_jsonb(x) - array['id', 'parent_id'] || jsonb_build_object('parent', p.unique_id) r
                from org_units x left join org_units p on p.id = x.parent_id where x.unique_id like :like`,
  users: `select x.unique_id k, to_jsonb(x) - array['id', 'parent_id'] || jsonb_build_object('parent', p.unique_id) r
            from users x left join org_units p on p.id = x.parent_id where x.unique_id like :like`,
  lead_definitions: `select x.unique_id k, to_jsonb(x) - 'id' r from lead_definitions x where x.unique_id like :like`,
  lead_definition_fields: `select d.unique_id || lpad(x.sort_order::text, 4, '0') k,
                             to_jsonb(x) - array['id', 'lead_definition_id'] || jsonb_build_object('definition', d.unique_id) r
                             from lead_definition_fields x join lead_definitions d on d.id = x.lead_definition_id where d.unique_id like :like`,
  // `active` came later with a default for every campaign; the generator does not set it.
  campaigns: `select x.unique_id k, to_jsonb(x) - array['id', 'lead_definition_id', 'active', 'duplicate_check', 'duplicate_key', 'duplicate_window', 'on_duplicate'] || jsonb_build_object('definition', d.unique_id) r
                from campaigns x join lead_definitions d on d.id = x.lead_definition_id where x.unique_id like :like`,
  user_campaigns: `select u.unique_id || ' ' || c.unique_id k, jsonb_build_object('user', u.unique_id, 'campaign', c.unique_id) r
                     from user_campaigns x join users u on u.id = x.user_id join campaigns c on c.id = x.campaign_id where u.unique_id like :like`,
  lead_pools: `select c.unique_id || ' ' || x.name k, to_jsonb(x) - array['id', 'campaign_id'] || jsonb_build_object('campaign', c.unique_id) r
                 from lead_pools x join campaigns c on c.id = x.campaign_id where c.unique_id like :like`,
  // `id` is the row's place in insertion order: other files insert leads and calls into the same
  // tables meanwhile, so one run's ids may have gaps where another's have none.
  leads: `select x.unique_id k,
             to_jsonb(x) - array['id', 'campaign_id', 'pool_id', 'owner_org_unit_id', 'uploaded_by_user_id', 'last_modified_by_user_id', 'first_processed_by_user_id', 'phone_e164']
             || jsonb_build_object('id', row_number() over (order by x.id) - 1, 'campaign', c.unique_id, 'pool', p.name, 'owner', o.unique_id,
                                   'uploadedBy', u1.unique_id, 'lastModifiedBy', u2.unique_id, 'firstProcessedBy', u3.unique_id) r
             from leads x join campaigns c on c.id = x.campaign_id join lead_pools p on p.id = x.pool_id
             left join org_units o on o.id = x.owner_org_unit_id left join users u1 on u1.id = x.uploaded_by_user_id
             left join users u2 on u2.id = x.last_modified_by_user_id left join users u3 on u3.id = x.first_processed_by_user_id
            where x.unique_id like :like`,
  calls: `select x.unique_id k,
             to_jsonb(x) - array['id', 'campaign_id', 'lead_id', 'user_id', 'ou0_id', 'ou1_id', 'ou2_id', 'ou3_id', 'ou4_id']
             || jsonb_build_object('id', row_number() over (order by x.id) - 1, 'campaign', c.unique_id, 'lead', l.unique_id, 'user', u.unique_id,
                                   'units', jsonb_build_array(o0.unique_id, o1.unique_id, o2.unique_id, o3.unique_id, o4.unique_id)) r
             from calls x join campaigns c on c.id = x.campaign_id left join leads l on l.id = x.lead_id join users u on u.id = x.user_id
             join org_units o0 on o0.id = x.ou0_id left join org_units o1 on o1.id = x.ou1_id left join org_units o2 on o2.id = x.ou2_id
             left join org_units o3 on o3.id = x.ou3_id left join org_units o4 on o4.id = x.ou4_id
            where x.unique_id like :like`,
  // call_start_time is the call's start time (the month the recording shares with its call): the
  // join requires it to be exactly that, and the calls' checksum covers the value.
  recordings: `select k.unique_id || ' ' || x.file_name k, to_jsonb(x) - array['id', 'call_id', 'call_start_time'] || jsonb_build_object('call', k.unique_id) r
                 from recordings x join calls k on k.id = x.call_id and k.start_time = x.call_start_time where k.unique_id like :like`,
  ready_periods: `select x.unique_id k, to_jsonb(x) - array['id', 'user_id', 'campaign_id'] || jsonb_build_object('user', u.unique_id, 'campaign', c.unique_id) r
                    from ready_periods x join users u on u.id = x.user_id join campaigns c on c.id = x.campaign_id where x.unique_id like :like`,
};

/**
 * The content of OPTIONS' data set, recorded before the generator was split into its phases
 * (src/ingest/synthetic/). Benchmark figures are compared across versions on generated data:
 * change these only for an intended change of the generated content.
 */
const RECORDED_CHECKSUMS = {
  org_units: 'ab3a24834c8d697a1d6275e3b51f1ec2',
  users: 'd4df9a74695e9216cf840b83a0cb5b0b',
  lead_definitions: '114b1a3d3b3de78cecd45d0da2975a0a',
  lead_definition_fields: '0fedebaa797ba4b4d24f019e73584cc4',
  campaigns: '1efb2fea19124d0206ccff1aa84657ff',
  user_campaigns: '07bce64f03548b7e705ee218957f7440',
  lead_pools: 'adcc294b4c33afebdb2c7b4cec2a281d',
  leads: '5cec5528a6e60b7acd92e9853b08680e',
  calls: 'c5b2b7bf387b05d2221b6a886175d3f1',
  recordings: '0ad756e35abfbfa0f3eb21059248801d',
  ready_periods: '9204f1da0704eeabc47cda188c7ac96c',
};

async function runChecksums(db: Knex, prefix: string): Promise<Record<string, string>> {
  const sums: Record<string, string> = {};
  for (const [table, content] of Object.entries(RUN_CONTENT)) {
    const { rows } = await db.raw<{ rows: { sum: string }[] }>(
      `select md5(string_agg(replace(r::text, :prefix, '{P}'), E'\\n' order by k)) as sum from (${content}) q`,
      { like: `${prefix}-%`, prefix },
    );
    sums[table] = rows[0]!.sum;
  }
  return sums;
}

describe('lcm generate (generateSyntheticData)', () => {
  // A database of its own: lifecycle sweeps that other files run on the shared one would expire
  // the generated leads of campaigns with an expiry limit, and change the recorded content.
  const own = useOwnDatabase({ timezone: ZONE });
  let db: Knex;
  let summary: GenerateSummary;
  let like: string;
  const progress: [number, number][] = [];

  const one = async <T = Record<string, unknown>>(sql: string, bindings: unknown[] = []): Promise<T> =>
    (await db.raw<{ rows: T[] }>(sql, [like, ...bindings] as Knex.RawBinding[])).rows[0]!;
  const count = async (sql: string): Promise<number> => Number((await one<{ n: string }>(sql)).n);

  beforeAll(async () => {
    db = own.db;
    summary = await generateSyntheticData(db, { ...OPTIONS, onProgress: (done, total) => progress.push([done, total]) });
    like = `${summary.prefix}-%`;
  }, 120_000);

  it('when it ran, then it wrote the asked numbers of calls and leads under its own prefix', async () => {
    expect(summary.prefix).toMatch(new RegExp(`^g${SEED}(r\\d+)?$`));
    expect(await count(`select count(*) n from calls where unique_id like ?`)).toBe(2000);
    expect(await count(`select count(*) n from leads where unique_id like ?`)).toBe(500);
    expect(summary.counts).toMatchObject({ calls: 2000, leads: 500 });
    expect(await count(`select count(*) n from users where unique_id like ?`)).toBeGreaterThanOrEqual(200);
    const last = progress[progress.length - 1]!;
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
    const depths = await db.raw<{ rows: { depth: number }[] }>(
      `select distinct (ou1_id is not null)::int + (ou2_id is not null)::int + (ou3_id is not null)::int + (ou4_id is not null)::int + 1 as depth
         from calls where unique_id like ?`,
      [like],
    );
    expect(depths.rows.map((r) => r.depth).sort()).toEqual(expect.arrayContaining([4, 5]));
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
      [
        'enumerations hold known numbers',
        `not (end_cause = any(?) and (lead_status is null or lead_status = any(?)) and pre_call_lead_status = any(?)
          and (lead_closure is null or lead_closure = any(?)) and campaign_type = any(?))`,
      ],
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
    const statuses = await db.raw<{ rows: { status: number }[] }>(`select distinct status from leads where unique_id like ?`, [like]);
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
    const { rows } = await db.raw<{ rows: { closed: number; called: number }[] }>(
      `select count(*) filter (where status = any(?::smallint[])) closed, count(*) called from leads l
          where unique_id like ? and exists (select 1 from calls k where k.lead_id = l.id)`,
      [closed, like],
    );
    const row = rows[0]!;
    expect(Number(row.closed) / Number(row.called)).toBeGreaterThan(0.5);
  });

  it('when it ran, then recordings belong to finished connected calls and ready periods end at start + seconds', async () => {
    expect(
      await count(
        `select count(*) n from recordings r join calls k on k.id = r.call_id where k.unique_id like ? and (not k.connected or k.in_progress)`,
      ),
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

  it('when generated with seed 7 up to 2026-11-02, then every table holds exactly the recorded content', async () => {
    expect(await runChecksums(db, summary.prefix)).toEqual(RECORDED_CHECKSUMS);
    // Columns added after the recording (left out of the checksums): the duplicate check's phone key is each number in E.164.
    const { rows: keys } = await db.raw<{ rows: { bad: string }[] }>(
      `select count(*) filter (where x.phone_e164 is distinct from '+' || regexp_replace(x.phone_number, '[^0-9]', '', 'g')) as bad
         from leads x join campaigns c on c.id = x.campaign_id where c.unique_id like ?`,
      [`${summary.prefix}-%`],
    );
    expect(Number(keys[0]!.bad)).toBe(0);
  });

  it('when the same seed runs again, then it appends under a new prefix with the same content', async () => {
    const again = await generateSyntheticData(db, OPTIONS);
    expect(again.prefix).not.toBe(summary.prefix);
    expect(await runChecksums(db, again.prefix)).toEqual(await runChecksums(db, summary.prefix));
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
