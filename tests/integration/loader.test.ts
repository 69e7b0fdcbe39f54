import { Readable } from 'node:stream';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { loadNdjson, LoadError } from '../../src/ingest/loader/loadNdjson';
import { verifyPassword } from '../../src/domain/password';

/** The columns of the tables these tests read. */
interface LeadTableRow {
  id: number;
  unique_id: string;
  pool_id: number;
  data: Record<string, string>;
}
interface CallTableRow {
  id: number;
  unique_id: string;
  ou0_id: number | null;
  ou1_id: number | null;
  ou2_id: number | null;
  ou3_id: number | null;
  start_time: Date;
}
interface AccountTableRow {
  id: number;
  username: string;
  password_hash: string;
  version: number;
}

describe('lcm load (loadNdjson)', () => {
  const { t, w } = useTestWorld();

  const loadLines = (lines: string[]) => loadNdjson(t.db, Readable.from(lines.map((l) => l + '\n')), { zone: 'Europe/Copenhagen' });

  it('when every record type is loaded, then each lands in its table with references resolved', async () => {
    const id = uniq();
    const leadId = `lead-${id}`;
    const callId = `call-${id}`;
    const summary = await t.load(
      {
        type: 'lead',
        campaign: w.campaigns.b2b,
        uniqueId: leadId,
        data: { name: 'Ann', telefon: '+45 12 34 56 78', Customer: `C-${id}`, Revenue: '12.5' },
        status: 'RedialAutomatic',
        ownerOrgUnit: w.units.sales,
        uploadedByUser: w.users.agent,
        uploadTime: '2026-03-01T10:00:00',
      },
      {
        type: 'call',
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueId: callId,
        uniqueLeadId: leadId,
        leadPhoneNumber: '+4512345678',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: '2026-03-01T10:05:00',
        connectTime: '2026-03-01T10:05:10',
        endTime: '2026-03-01T10:10:00',
        previewDuration: 'PT5S',
        dialingDuration: 'PT10S',
        conversationDuration: 'PT4M50S',
        wrapUpDuration: '00:00:30',
        leadStatus: 'UserProcessed',
        preCallLeadStatus: 'New',
        leadClosure: 'Success',
      },
      {
        type: 'recording',
        call: callId,
        startTime: '2026-03-01T10:05:10',
        endTime: '2026-03-01T10:10:00',
        recordingType: 'FullRecording',
        fileName: `${id}.wav`,
      },
      {
        type: 'readyPeriod',
        orgCode: w.users.agent,
        campaign: w.campaigns.b2b,
        startTime: '2026-03-01T09:00:00',
        seconds: 120,
        uniqueId: `rp-${id}`,
      },
      { type: 'calendar', code: `cal-${id}`, name: 'Calendar', project: w.projects.b2b },
      {
        type: 'calendarEvent',
        uniqueId: `ev-${id}`,
        calendarCode: `cal-${id}`,
        leadUniqueId: leadId,
        title: 'Call back',
        notes: '',
        start: '2026-03-02T09:00:00',
        end: '2026-03-02T09:30:00',
        source: 'crm',
        externalId: 'x1',
      },
      {
        type: 'savedSearch',
        user: w.users.agent,
        name: `search-${id}`,
        campaigns: [w.campaigns.b2b],
        statuses: ['New', 'redialautomatic'],
        allOpenStatuses: false,
      },
      {
        type: 'account',
        username: `acc-${id}`,
        password: 'secret-1',
        user: w.users.agent,
        projects: ['B2B*'],
        rights: { Calls: ['Get'] },
        entryAccess: 'Partner',
      },
      { type: 'requestLimit', account: `acc-${id}`, service: 'calls', dailyLimit: 50 },
    );
    expect(summary.counts).toMatchObject({
      lead: 1,
      call: 1,
      recording: 1,
      readyPeriod: 1,
      calendar: 1,
      calendarEvent: 1,
      savedSearch: 1,
      account: 1,
      requestLimit: 1,
    });

    const lead = (await t.db<LeadTableRow>('leads').where({ unique_id: leadId }).first())!;
    expect(lead).toMatchObject({ status: 1, phone_number: '+45 12 34 56 78', external_key: `C-${id}` });
    expect(lead.data).toEqual({ Name: 'Ann', Phone: '+45 12 34 56 78', Customer: `C-${id}`, Revenue: '12.5' });
    const pool = (await t.db<{ id: number; name: string }>('lead_pools').where({ id: lead.pool_id }).first())!;
    expect(pool.name).toBe('(auto) 2026-03-01');

    const call = (await t.db<CallTableRow>('calls').where({ unique_id: callId }).first())!;
    const chain = await t
      .db('org_units')
      .whereIn('org_code', [w.units.root, w.units.sales, w.units.team])
      .orderBy('level')
      .pluck<number[]>('id');
    expect([call.ou0_id, call.ou1_id, call.ou2_id, call.ou3_id]).toEqual([...chain, null]);
    expect(call).toMatchObject({
      lead_id: lead.id,
      preview_ms: 5000,
      conversation_ms: 290000,
      wrap_up_ms: 30000,
      lead_status: 200,
      pre_call_lead_status: 0,
      lead_closure: 1,
      campaign_type: 1,
    });
    expect(call.start_time.toISOString()).toBe('2026-03-01T09:05:00.000Z');

    const rp = (await t
      .db<{ unique_id: string; start_time: Date; end_time: Date }>('ready_periods')
      .where({ unique_id: `rp-${id}` })
      .first())!;
    expect(rp.end_time.getTime() - rp.start_time.getTime()).toBe(120000);
    const search = (await t
      .db<{ name: string; statuses: number[] }>('saved_searches')
      .where({ name: `search-${id}` })
      .first())!;
    expect(search.statuses).toEqual([0, 1]);
    const account = (await t
      .db<AccountTableRow>('accounts')
      .where({ username: `acc-${id}` })
      .first())!;
    expect(account.password_hash).not.toContain('secret-1');
    expect(await verifyPassword('secret-1', account.password_hash)).toBe(true);
    expect(await t.db('request_limits').where({ account_id: account.id }).first()).toMatchObject({ service: 'calls', daily_limit: 50 });
    expect(await t.db('recordings').where({ call_id: call.id }).first()).toMatchObject({ recording_type: 0, file_name: `${id}.wav` });
    expect(
      await t
        .db('calendar_events')
        .where({ unique_id: `ev-${id}` })
        .first(),
    ).toMatchObject({ title: 'Call back', source: 'crm' });
  });

  it('when a record is loaded twice, then it is upserted by its natural key', async () => {
    const code = `unit-${uniq()}`;
    await t.load({ type: 'orgUnit', orgCode: code, name: 'First', parent: w.units.root });
    await t.load({ type: 'orgUnit', orgCode: code, name: 'Second', parent: w.units.root });
    const rows = await t.db('org_units').where({ org_code: code });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'Second', level: 1 });
    const before = (await t.db<AccountTableRow>('accounts').where({ username: w.accounts.none.username }).first('version'))!;
    await t.load({
      type: 'account',
      username: w.accounts.none.username,
      password: 'changed',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    const after = (await t.db<AccountTableRow>('accounts').where({ username: w.accounts.none.username }).first('version'))!;
    expect(after.version).toBe(before.version + 1);
  });

  it('when line 3 holds a byte that is not UTF-8, then the load stops naming line 3 and keeps nothing', async () => {
    const code = `utf8-${uniq()}`;
    const good = Buffer.from(JSON.stringify({ type: 'orgUnit', orgCode: code, name: 'Køge' }) + '\n');
    const latin1 = Buffer.from(JSON.stringify({ type: 'orgUnit', orgCode: `${code}-2`, name: 'Køge' }) + '\n', 'latin1');
    const err = await loadNdjson(t.db, Readable.from([good, good, latin1]), { zone: 'Europe/Copenhagen' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoadError);
    expect((err as LoadError).message).toMatch(/^line 3: not valid UTF-8; /);
    expect(await t.db('org_units').where('org_code', 'like', `${code}%`)).toEqual([]);
  });

  it('when an org code is used by a user, then an org unit cannot take it (and the other way round)', async () => {
    await expect(t.load({ type: 'orgUnit', orgCode: w.users.agent, name: 'Clash', parent: w.units.root })).rejects.toThrow(
      /line 1: orgUnit: org code .* is already used by a user/,
    );
    await expect(t.load({ type: 'user', orgCode: w.units.sales, username: `u-${uniq()}`, name: 'Clash' })).rejects.toThrow(
      /already used by an org unit/,
    );
    // Enforced by the database itself too, not only by the loader's check.
    await expect(t.db('users').insert({ unique_id: uniq(), org_code: w.units.team, username: uniq(), name: 'x' })).rejects.toThrow(
      /already used by an org unit/,
    );
  });

  it.each([
    ['{not json', /line 2: not valid JSON/],
    ['{"type":"spaceship"}', /line 2: unknown record type "spaceship"/],
    ['{"orgCode":"no-type"}', /^line 2: "type" is required: one of orgUnit, /],
    ['{"type":"orgUnit","name":"No code"}', /^line 2: orgUnit: "orgCode" is required$/],
    [
      '{"type":"user","orgCode":"u-x","username":"u-x","name":"x","parent":"no such unit"}',
      /line 2: user: unknown org unit "no such unit"/,
    ],
    ['{"type":"lead","campaign":"NO-SUCH","data":{}}', /line 2: lead: unknown campaign "NO-SUCH"/],
    [
      '{"type":"readyPeriod","orgCode":"nobody","campaign":"x","startTime":"2026-13-01T00:00:00","seconds":1}',
      /^line 2: readyPeriod: "startTime" is not an ISO 8601 DateTime \(month 13 is out of range\)$/,
    ],
    [
      '{"type":"campaign","code":"c","name":"c","project":"p","leadDefinition":"d","campaignType":"Master","expireAfter":"pt2h"}',
      /^line 2: campaign: "expireAfter" is not a TimeSpan /,
    ],
    ['{"type":"orgUnit","orgCode":"x","name":"x","colour":"red"}', /line 2: orgUnit: unknown field "colour"/],
  ])('when line 2 is %s, then the load stops with its line number and reason', async (bad, reason) => {
    const code = `ok-${uniq()}`;
    const err = await loadLines([JSON.stringify({ type: 'orgUnit', orgCode: code, name: 'ok' }), bad]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LoadError);
    expect((err as LoadError).message).toMatch(reason);
    expect(await t.db('org_units').where({ org_code: code }).first()).toBeUndefined();
  });

  it('when a large file has a bad line in the middle, then nothing of the file is kept', async () => {
    const id = uniq();
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      lines.push(
        JSON.stringify({
          type: 'lead',
          campaign: w.campaigns.retail,
          uniqueId: `bulk-${id}-${i}`,
          data: { Name: `n${i}`, Phone: '12345678' },
          pool: `pool-${id}`,
        }),
      );
    }
    lines.splice(1500, 0, JSON.stringify({ type: 'lead', campaign: w.campaigns.retail, data: { Name: 'bad', Phone: 'not a phone' } }));
    const err = await loadLines(lines).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^line 1501: lead: data.Phone must be a phone number/);
    expect(await t.db('leads').where('unique_id', 'like', `bulk-${id}-%`).count('* as n').first()).toEqual({ n: 0 });
    expect(
      await t
        .db('lead_pools')
        .where({ name: `pool-${id}` })
        .first(),
    ).toBeUndefined();
    // 1,500 leads stored one by one before the bad line: minutes on a machine busy with other suites.
  }, 240_000);

  it('when call fields contradict each other (connectTime without connected), then the line is refused', async () => {
    const base = {
      type: 'call',
      campaign: w.campaigns.b2b,
      user: w.users.agent,
      uniqueLeadId: 'l',
      leadPhoneNumber: '1',
      endCause: 'Busy',
      inProgress: false,
      connected: false,
      incoming: false,
      startTime: '2026-03-01T10:00:00',
      previewDuration: 'PT1S',
    };
    await expect(t.load({ ...base, connectTime: '2026-03-01T10:00:05' })).rejects.toThrow(/connectTime is only present when connected/);
    await expect(t.load({ ...base, inProgress: true, endTime: '2026-03-01T10:01:00' })).rejects.toThrow(/endTime is only present/);
    await expect(t.load({ ...base, leadStatus: 'Failed', leadClosure: 'Success' })).rejects.toThrow(/leadClosure is only present/);
  });
});
