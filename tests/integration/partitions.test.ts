import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { Client } from 'pg';
import { prepareValue } from 'pg/lib/utils';
import { loadNdjson } from '../../src/ingest/loader/loadNdjson';
import { callWindowQuery, findVisibleCall, listRecordings, streamReadyPeriods } from '../../src/data/callRepository';
import { projectScope } from '../../src/data/projectScope';
import { ensureMonthPartitions, listMonthPartitions, maintainPartitions, partitionName } from '../../src/data/partitions';
import { JOB_NAMES, listScheduledJobs, runScheduledJob } from '../../src/data/scheduledJobs';
import { CALLS, findKey } from '../../src/data/uniqueIdRegistry';
import { callCopySql, readyPeriodCopySql } from '../../src/data/exportQueries';
import { main } from '../../src/app/main';
import { uniq } from '../harness/testApp';
import { useOwnDatabase } from '../harness/useTestWorld';

const ZONE = 'Europe/Copenhagen';
const ALL = projectScope(['*']);

const load = (db: Knex, ...records: Record<string, unknown>[]) =>
  loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: ZONE });

/** An org unit, a user, a campaign and a lead to hang calls on. */
async function loadBasics(db: Knex, id: string) {
  await load(
    db,
    { type: 'orgUnit', orgCode: `Root ${id}`, name: 'Root' },
    { type: 'leadDefinition', name: `Def ${id}`, fields: [{ name: 'Name', type: 'text' }] },
    { type: 'campaign', code: `C-${id}`, name: 'C', project: `P-${id}`, leadDefinition: `Def ${id}`, campaignType: 'PowerDialer' },
    { type: 'user', orgCode: `agent-${id}`, username: `agent-${id}`, name: 'Agent', parent: `Root ${id}` },
    { type: 'lead', uniqueId: `lead-${id}`, campaign: `C-${id}`, data: { Name: 'A' } },
  );
}

function call(id: string, n: number, startTime: string, extra: Record<string, unknown> = {}) {
  return {
    type: 'call',
    uniqueId: `call-${id}-${n}`,
    campaign: `C-${id}`,
    user: `agent-${id}`,
    uniqueLeadId: `lead-${id}`,
    leadPhoneNumber: '+45 11 22 33 44',
    endCause: 'NormalDisconnect',
    previewDuration: 'PT5S',
    inProgress: false,
    connected: true,
    incoming: false,
    startTime,
    connectTime: startTime,
    endTime: startTime,
    ...extra,
  };
}

const recording = (id: string, n: number, startTime: string, fileName: string) => ({
  type: 'recording',
  call: `call-${id}-${n}`,
  startTime,
  recordingType: 'FullRecording',
  fileName,
});

async function partitionOf(db: Knex, table: string, where: string, bindings: Knex.RawBinding[]): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { p: string }[] }>(
    `select tableoid::regclass::text as p from ${table} where ${where} order by 1`,
    bindings,
  );
  return rows.map((r) => r.p);
}

async function explain(db: Knex, sql: string, bindings: readonly unknown[] = []): Promise<string> {
  const { rows } = await db.raw<{ rows: Record<string, string>[] }>(`explain ${sql}`, bindings as Knex.RawBinding[]);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

/** The partitions a plan reads (Seq/Index/Bitmap scans on partitions). */
const scanned = (plan: string, table: string) =>
  [...new Set([...plan.matchAll(new RegExp(`on (${table}_(?:p\\d{4}_\\d{2}|default))\\b`, 'g'))].map((m) => m[1]))].sort();

describe('month partitions of calls, recordings and ready periods', () => {
  const own = useOwnDatabase();
  const id = uniq();
  beforeAll(async () => {
    await loadBasics(own.db, id);
  });

  it('when migrated, then each table has month partitions from last month to three months ahead, and a default one', async () => {
    const now = new Date();
    const months = [-1, 0, 1, 2, 3].map((k) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + k, 1)));
    for (const table of ['calls', 'recordings', 'ready_periods']) {
      const names = (await listMonthPartitions(own.db, table)).map((p) => p.name);
      expect(names).toEqual(expect.arrayContaining(months.map((m) => partitionName(table, m))));
      const { rows } = await own.db.raw<{ rows: { ok: boolean }[] }>('select to_regclass(?) is not null as ok', [`${table}_default`]);
      expect(rows[0]!.ok).toBe(true);
    }
  });

  it('when a call of a month without a partition is loaded, then it waits in the default partition, and maintenance moves it with its recordings into a month of their own', async () => {
    await load(own.db, call(id, 1, '2024-03-15T10:00:00Z'), recording(id, 1, '2024-03-15T10:00:05Z', 'a.wav'));
    expect(await partitionOf(own.db, 'calls', 'unique_id = ?', [`call-${id}-1`])).toEqual(['calls_default']);
    expect(await partitionOf(own.db, 'recordings', 'file_name = ?', ['a.wav'])).toEqual(['recordings_default']);

    const report = await maintainPartitions(own.db, { now: new Date(), monthsAhead: 3 });
    expect(report.created).toEqual(expect.arrayContaining(['calls_p2024_03', 'recordings_p2024_03']));
    expect(report.moved).toBe(2);
    expect(await partitionOf(own.db, 'calls', 'unique_id = ?', [`call-${id}-1`])).toEqual(['calls_p2024_03']);
    expect(await partitionOf(own.db, 'recordings', 'file_name = ?', ['a.wav'])).toEqual(['recordings_p2024_03']);
    // Indexes of a new partition are named after their parent's.
    const { rows } = await own.db.raw<{ rows: { indexname: string }[] }>(
      `select indexname from pg_indexes where tablename = 'calls_p2024_03' order by 1`,
    );
    expect(rows.map((r) => r.indexname)).toContain('calls_ou0_time_p2024_03');

    // Found by unique id through the registry, its recordings through its month.
    const key = await findVisibleCall(own.db, `call-${id}-1`, ALL);
    expect(key).toEqual({ id: expect.any(Number) as jest.AsymmetricMatcher, time: new Date('2024-03-15T10:00:00Z') });
    expect((await listRecordings(own.db, key!, {})).map((r) => r.file_name)).toEqual(['a.wav']);
    // A second pass has nothing left to do.
    expect(await maintainPartitions(own.db, { now: new Date(), monthsAhead: 3 })).toEqual({
      created: [],
      moved: 0,
      dropped: [],
      indexed: [],
      postponed: [],
    });
  });

  it('when a call is loaded again with a start time in another month, then it moves there with its recordings and keeps its unique id', async () => {
    await ensureMonthPartitions(own.db, new Date('2024-04-01Z'), new Date('2024-04-01Z'));
    await load(own.db, call(id, 2, '2024-03-20T10:00:00Z'), recording(id, 2, '2024-03-20T10:00:05Z', 'b.wav'));
    await load(own.db, call(id, 2, '2024-04-02T09:00:00Z', { leadPhoneNumber: '+45 99' }));
    expect(await partitionOf(own.db, 'calls', 'unique_id = ?', [`call-${id}-2`])).toEqual(['calls_p2024_04']);
    expect(await partitionOf(own.db, 'recordings', 'file_name = ?', ['b.wav'])).toEqual(['recordings_p2024_04']);
    expect(
      await own
        .db('calls')
        .where({ unique_id: `call-${id}-2` })
        .count('* as n')
        .first(),
    ).toEqual({ n: 1 });
    const key = await own
      .db<{ unique_id: string; start_time: Date }>('call_keys')
      .where({ unique_id: `call-${id}-2` })
      .first();
    expect(key!.start_time).toEqual(new Date('2024-04-02T09:00:00Z'));
    expect((await findVisibleCall(own.db, `call-${id}-2`, ALL))?.time).toEqual(new Date('2024-04-02T09:00:00Z'));
  });

  it('when a unique id is inserted a second time, in any month, then the registry refuses it', async () => {
    const row = await own
      .db('calls')
      .where({ unique_id: `call-${id}-1` })
      .first<Record<string, unknown>>();
    const copy = { ...row };
    delete copy.id;
    await expect(own.db('calls').insert({ ...copy, start_time: new Date('2026-01-05T10:00:00Z') })).rejects.toMatchObject({
      code: '23505',
    });
    await expect(
      own.db.raw(
        `insert into ready_periods (unique_id, user_id, campaign_id, start_time, seconds, end_time)
      select 'rp-dup-${id}', user_id, campaign_id, t, 1, t + interval '1 second' from calls, (values (timestamptz '2024-03-01Z'), ('2025-07-01Z')) v(t)
       where unique_id = ?`,
        [`call-${id}-1`],
      ),
    ).rejects.toMatchObject({ code: '23505' });
    // A ready period reloaded under its unique id is updated, not duplicated.
    const rp = {
      type: 'readyPeriod',
      uniqueId: `rp-${id}`,
      orgCode: `agent-${id}`,
      campaign: `C-${id}`,
      startTime: '2024-03-10T10:00:00Z',
      seconds: 30,
    };
    await load(own.db, rp);
    await load(own.db, { ...rp, startTime: '2024-04-10T10:00:00Z' });
    expect(await partitionOf(own.db, 'ready_periods', 'unique_id = ?', [`rp-${id}`])).toEqual(['ready_periods_p2024_04']);
  });

  describe('window queries', () => {
    beforeAll(async () => {
      await ensureMonthPartitions(own.db, new Date('2024-01-01Z'), new Date('2024-06-01Z'));
      await load(own.db, call(id, 10, '2024-05-06T08:30:00Z'), call(id, 11, '2024-05-06T09:10:00Z'), call(id, 12, '2024-06-06T09:10:00Z'));
      await own.db.raw('analyze calls, ready_periods');
    });

    let unitId: number;
    beforeAll(async () => {
      unitId = (await own
        .db<{ id: number; org_code: string }>('org_units')
        .where({ org_code: `Root ${id}` })
        .first('id'))!.id;
    });
    // Not async: awaiting a query builder would run it.
    const unitWindow = (start: string, end: string) =>
      callWindowQuery(own.db, { subject: { kind: 'unit', unitId, level: 0 }, start: new Date(start), end: new Date(end), scope: ALL });

    it('when a 2-hour window is read with bound parameters (the cursor), then only its month partition is in the plan', async () => {
      const q = unitWindow('2024-05-06T08:00:00Z', '2024-05-06T10:00:00Z');
      const native = q.toSQL().toNative();
      const client = own.db.client as { acquireConnection(): Promise<Client>; releaseConnection(connection: Client): Promise<void> };
      const conn = await client.acquireConnection();
      try {
        const { rows } = await conn.query<Record<string, string>>(`explain ${native.sql}`, [...native.bindings]);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        expect(scanned(plan, 'calls')).toEqual(['calls_p2024_05']);
        // A generic plan of the same statement prunes at run time.
        await conn.query(`prepare w as ${native.sql}`, []);
        await conn.query(`set plan_cache_mode = force_generic_plan`);
        // EXECUTE takes literals: pg's own text form of each parameter (arrays included), quoted.
        const params = native.bindings.map((b) => conn.escapeLiteral(String(prepareValue(b))));
        const generic = (await conn.query<Record<string, string>>(`explain (analyze, costs off) execute w(${params.join(', ')})`)).rows
          .map((r) => r['QUERY PLAN'])
          .join('\n');
        expect(generic).toMatch(/Subplans Removed: \d+/);
        expect(scanned(generic.replace(/.*never executed.*\n?/g, ''), 'calls')).toEqual(['calls_p2024_05']);
        await conn.query('deallocate w');
        await conn.query('reset plan_cache_mode');
      } finally {
        await client.releaseConnection(conn);
      }
      expect(((await q) as { unique_id: string }[]).map((r) => r.unique_id)).toEqual([`call-${id}-10`, `call-${id}-11`]);
    });

    it('when the same SELECT is written with its values inline (as COPY (SELECT …) runs it), then it prunes the same way', async () => {
      const q = unitWindow('2024-05-06T08:00:00Z', '2024-05-06T10:00:00Z');
      expect(scanned(await explain(own.db, q.toQuery()), 'calls')).toEqual(['calls_p2024_05']);
      const across = unitWindow('2024-05-31T20:00:00Z', '2024-06-07T00:00:00Z');
      expect(scanned(await explain(own.db, across.toQuery()), 'calls')).toEqual(['calls_p2024_05', 'calls_p2024_06']);
    });

    it("when the transcoder COPYs its lean SELECTs of a window, then they prune to the window's months", async () => {
      const campaigns = (await own.db('campaigns').pluck('id')) as number[];
      const calls = callCopySql(
        own.db,
        { subject: { kind: 'unit', unitId, level: 0 }, start: new Date('2024-05-06T08:00:00Z'), end: new Date('2024-05-06T10:00:00Z') },
        campaigns,
      );
      expect(scanned(await explain(own.db, calls), 'calls')).toEqual(['calls_p2024_05']);
      const periods = readyPeriodCopySql(
        own.db,
        { from: new Date('2024-04-10T00:00:00Z'), to: new Date('2024-04-11T00:00:00Z') },
        campaigns,
      );
      expect(scanned(await explain(own.db, periods), 'ready_periods')).toEqual(['ready_periods_p2024_04']);
    });

    it('when ready periods are read for a window, then only the partitions of their end times are in the plan', async () => {
      const stream = await streamReadyPeriods(own.db, {
        from: new Date('2024-04-10T00:00:00Z'),
        to: new Date('2024-04-11T00:00:00Z'),
        scope: ALL,
      });
      const rows: { unique_id: string }[] = [];
      for await (const r of stream) rows.push(r as { unique_id: string });
      expect(rows.map((r) => r.unique_id)).toEqual([`rp-${id}`]);
      const plan = await explain(
        own.db,
        `select * from ready_periods r where r.end_time >= '2024-04-10T00:00:00Z' and r.end_time < '2024-04-11T00:00:00Z' order by end_time, unique_id`,
      );
      expect(scanned(plan, 'ready_periods')).toEqual(['ready_periods_p2024_04']);
    });

    it('when a call is looked up by unique id, then the registry probe leaves one month partition to read', async () => {
      // As findVisibleCall: the registry's key, then the call by its literal partition key.
      const key = await findKey(own.db, CALLS, `call-${id}-11`);
      expect(key).toBeDefined();
      const plan = await own.db.raw<{ rows: Record<string, string>[] }>(
        `explain (costs off) select c.id from calls c where c.id = ? and c.start_time = ?`,
        [key!.id, key!.time],
      );
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      const scannedPartitions = text.split('\n').filter((l) => /on calls_/.test(l));
      expect(scannedPartitions).toHaveLength(1);
      expect(scannedPartitions[0]).toMatch(/calls_p2024_05/);
      const found = await findVisibleCall(own.db, `call-${id}-11`, projectScope(['*']));
      expect(found).toEqual(key);
      expect(await findVisibleCall(own.db, `call-${id}-11`, projectScope(['NoSuchProject']))).toBeUndefined();
      expect(await findVisibleCall(own.db, `no-such-call-${id}`, projectScope(['*']))).toBeUndefined();
    });
  });

  it('when retention keeps 3 months, then older month partitions are dropped whole, with their unique ids and recordings', async () => {
    await load(own.db, call(id, 20, '2023-11-05T10:00:00Z'), recording(id, 20, '2023-11-05T10:00:01Z', 'old.wav'));
    const now = new Date('2024-06-15T12:00:00Z');
    const report = await maintainPartitions(own.db, { now, monthsAhead: 1, retentionMonths: 3 });
    // Cut-off: 2024-03-01 (three whole months before June). The 2023 call in the default partition goes too.
    expect(report.dropped).toEqual(expect.arrayContaining(['recordings_p2024_01', 'calls_p2024_01', 'calls_p2024_02']));
    expect(report.dropped).not.toContain('calls_p2024_03');
    expect((await listMonthPartitions(own.db, 'calls')).map((p) => p.name)[0]).toBe('calls_p2024_03');
    expect(await own.db('calls').where('start_time', '<', new Date('2024-03-01Z')).count('* as n').first()).toEqual({ n: 0 });
    expect(
      await own
        .db('call_keys')
        .where({ unique_id: `call-${id}-20` })
        .first(),
    ).toBeUndefined();
    expect(await own.db('recordings').where({ file_name: 'old.wav' }).first()).toBeUndefined();
    expect(
      await own
        .db('call_keys')
        .where({ unique_id: `call-${id}-1` })
        .first(),
    ).toBeDefined();
  });

  it('when the default partition is busy, then maintenance gives up within its lock timeout and does the step at the next run', async () => {
    await load(own.db, call(id, 30, '2023-05-05T10:00:00Z'));
    const blocker = await own.db.transaction();
    try {
      await blocker.raw('lock table calls_default in access share mode');
      const report = await maintainPartitions(own.db, { now: new Date(), monthsAhead: 3, lockTimeoutMs: 200 });
      expect(report.postponed.join(' ')).toMatch(/calls_p2023_05/);
    } finally {
      await blocker.rollback();
    }
    const report = await maintainPartitions(own.db, { now: new Date(), monthsAhead: 3, lockTimeoutMs: 200 });
    expect(report.created).toContain('calls_p2023_05');
  });
});

describe('the migration to month partitions', () => {
  const own = useOwnDatabase({ migrate: false });
  const PARTITIONING = '20261123300001_partition_calls_by_month';

  it('when a database with calls, recordings and ready periods is migrated, then every row moves into its month, and down brings back the plain tables', async () => {
    // Every migration before the partitioning one.
    for (;;) {
      const [, pending] = (await own.db.migrate.list()) as [unknown[], { name: string }[]];
      if (pending[0]!.name === PARTITIONING) break;
      await own.db.migrate.up();
    }
    const id = uniq();
    await own.db.raw(`insert into org_units (unique_id, org_code, name, level) values ('ou-${id}', 'Root ${id}', 'Root', 0);
      insert into users (unique_id, org_code, username, name, parent_id) select 'u-${id}', 'agent-${id}', 'agent-${id}', 'A', id from org_units where unique_id = 'ou-${id}';
      insert into lead_definitions (unique_id, name) values ('d-${id}', 'Def ${id}');
      insert into campaigns (unique_id, code, name, project, lead_definition_id, campaign_type) select 'c-${id}', 'C-${id}', 'C', 'P', id, 1 from lead_definitions where unique_id = 'd-${id}';`);
    await own.db.raw(`
      insert into calls (unique_id, campaign_id, unique_lead_id, user_id, ou0_id, lead_phone_number, start_time)
        select 'k-' || n, c.id, 'l', u.id, u.parent_id, '+45', timestamptz '2025-01-20T10:00:00Z' + n * interval '9 days'
          from generate_series(1, 40) n, campaigns c, users u where c.code = 'C-${id}' and u.org_code = 'agent-${id}';
      insert into recordings (call_id, start_time, recording_type, file_name) select id, start_time + interval '1 second', 0, unique_id || '.wav' from calls;
      insert into ready_periods (unique_id, user_id, campaign_id, start_time, seconds, end_time)
        select 'r-' || unique_id, user_id, campaign_id, start_time - interval '30 seconds', 30, start_time from calls;`);
    const before = async () =>
      (
        await own.db.raw<{
          rows: Record<string, string>[];
        }>(`select (select md5(string_agg(c::text, ',' order by id)) from (select id, unique_id, start_time, user_id from calls) c) as calls,
                                (select md5(string_agg(r::text, ',' order by id)) from (select id, call_id, start_time, file_name from recordings) r) as recordings,
                                (select md5(string_agg(p::text, ',' order by id)) from (select id, unique_id, end_time from ready_periods) p) as ready`)
      ).rows[0];
    const original = await before();

    await own.db.migrate.up();
    expect(await before()).toEqual(original);
    // 40 calls nine days apart from 2025-01-20 span January 2025 to January 2026: 13 months, each
    // row in its own month's partition, recordings with their calls, ready periods by end time.
    const placed = (
      await own.db.raw<{ rows: Record<string, number>[] }>(`
      select (select count(distinct tableoid) from calls)::int as months,
             (select count(*) from calls where tableoid::regclass::text <> 'calls_p' || to_char(start_time at time zone 'UTC', 'YYYY_MM'))::int as calls,
             (select count(*) from recordings where tableoid::regclass::text <> 'recordings_p' || to_char(call_start_time at time zone 'UTC', 'YYYY_MM'))::int as recordings,
             (select count(*) from ready_periods where tableoid::regclass::text <> 'ready_periods_p' || to_char(end_time at time zone 'UTC', 'YYYY_MM'))::int as ready`)
    ).rows[0];
    expect(placed).toEqual({ months: 13, calls: 0, recordings: 0, ready: 0 });
    expect(Number((await own.db.raw<{ rows: { n: string }[] }>('select count(*) n from call_keys')).rows[0]!.n)).toBe(40);
    expect(Number((await own.db.raw<{ rows: { n: string }[] }>('select count(*) n from ready_period_keys')).rows[0]!.n)).toBe(40);
    expect(
      Number(
        (
          await own.db.raw<{ rows: { n: string }[] }>(
            `select count(*) n from recordings r join calls c on c.id = r.call_id and c.start_time = r.call_start_time`,
          )
        ).rows[0]!.n,
      ),
    ).toBe(40);
    // New rows keep numbering after the moved ones.
    const [next] = (
      await own.db.raw<{ rows: { ok: boolean }[] }>(
        `select nextval(pg_get_serial_sequence('calls', 'id')) > (select max(id) from calls) as ok`,
      )
    ).rows;
    expect(next!.ok).toBe(true);

    await own.db.migrate.down();
    expect(await before()).toEqual(original);
    const kinds = (
      await own.db.raw<{ rows: { relname: string; relkind: string }[] }>(
        `select relname, relkind from pg_class where relname in ('calls', 'recordings', 'ready_periods') order by 1`,
      )
    ).rows;
    expect(kinds).toEqual([
      { relname: 'calls', relkind: 'r' },
      { relname: 'ready_periods', relkind: 'r' },
      { relname: 'recordings', relkind: 'r' },
    ]);
    await own.db.migrate.latest();
    expect(await before()).toEqual(original);
  });
});

describe('scheduled jobs across API nodes', () => {
  const own = useOwnDatabase();

  it('when two nodes start the same job at once, then one runs it and the other finds it busy', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = runScheduledJob(own.db, 'test-job', { intervalMs: 60_000, node: 'node-a' }, async () => {
      await gate;
      return 'a';
    });
    await new Promise((r) => setTimeout(r, 200));
    const second = await runScheduledJob(own.db, 'test-job', { intervalMs: 60_000, node: 'node-b' }, () => Promise.resolve('b'));
    expect(second).toEqual({ ran: false, reason: 'busy' });
    release();
    expect(await first).toEqual({ ran: true, result: 'a' });
  });

  it('when a node comes to a job another node ran within the interval, then it skips; forced, it runs', async () => {
    expect(await runScheduledJob(own.db, 'test-job', { intervalMs: 60_000, node: 'node-b' }, () => Promise.resolve('b'))).toEqual({
      ran: false,
      reason: 'not-due',
    });
    expect(
      await runScheduledJob(own.db, 'test-job', { intervalMs: 60_000, force: true, node: 'node-b' }, () => Promise.resolve('b')),
    ).toEqual({
      ran: true,
      result: 'b',
    });
    const [job] = (await listScheduledJobs(own.db)).filter((j) => j.job === 'test-job');
    expect(job).toMatchObject({ runs: 2, lastNode: 'node-b', lastResult: 'b', lastError: null });
  });

  it('when `lcm maintain` and `lcm migrate` run, then they report the partitions and the run is recorded', async () => {
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = own.url;
    const out: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    try {
      expect(await main(['node', 'lcm', 'migrate'])).toBe(0);
      expect(await main(['node', 'lcm', 'maintain', '--now', '2031-02-01T12:00:00'])).toBe(0);
    } finally {
      write.mockRestore();
      if (saved === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = saved;
    }
    expect(out.join('')).toMatch(/already up to date\npartitions: no partition to create/);
    expect(out.join('')).toMatch(/partitions: created .*calls_p2031_05/);
    const [job] = (await listScheduledJobs(own.db)).filter((j) => j.job === JOB_NAMES.partitionMaintenance);
    expect(job!.runs).toBe(1);
  });
});
