import type { TestApp } from './testApp';
import { basicAuth, uniq } from './testApp';
import { ALL_RIGHTS } from './world';
import { CallEndCause, CallLeadStatus, CampaignType, LeadClosure, LeadStatus, PreCallLeadStatus } from '../../src/domain/enums';

/**
 * Generated export data with every field shape, for the tests that compare the transcoded
 * exports with the reference serializers byte for byte: text with quotes, backslashes,
 * control characters, separators, non-ASCII and astral characters; NULLs; every enum value;
 * times on DST change days, with microseconds, before 1970 and near the year 10000; durations
 * of every canonical form; org-unit chains of every depth; names of campaigns, users and org
 * units that need quoting; leads with data fields hidden by entry access (the phone field:
 * Partner, the external-key field: Full, none in the third campaign's definition), keys that look
 * like array indexes or inherited properties, and values of other JSON types.
 */

/** A deterministic generator (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const AWKWARD_TEXTS = [
  'plain',
  '',
  'quote"inside',
  '"',
  'back\\slash',
  'tab\there',
  'new\nline',
  'carriage\rreturn',
  'crlf\r\nend',
  'semi;colon',
  'comma,here',
  'pipe|bar',
  'space here',
  'dot.dash-plus+colon:',
  'control\u0001\u0008\u000b\u000c\u001f',
  'delete\u007f',
  'æøå Åse Ærø',
  '日本語テキスト',
  'emoji 😀 and 🇩🇰',
  'section§sign',
  'line\u2028separator',
  'x'.repeat(300),
  'mixed "q";\n😀\\end',
];

const DURATIONS: (number | null)[] = [
  0,
  1,
  5,
  10,
  50,
  100,
  120,
  999,
  1000,
  1500,
  1050,
  59_999,
  60_000,
  3_599_999,
  3_600_000,
  86_399_999,
  86_400_000,
  90_061_001,
  2_147_483_647,
  -1,
  -1500,
  -86_400_000,
  null,
];

/** Instants around the Copenhagen DST changes of 2026 and elsewhere, as ISO strings with microseconds. */
const INSTANTS = [
  '2026-03-29T00:59:59.999999Z', // last CET moment
  '2026-03-29T01:00:00.000000Z', // first CEST moment (02:00 local skipped)
  '2026-03-29T01:30:00.123456Z',
  '2026-10-25T00:30:00.000500Z', // 02:30 CEST, first pass
  '2026-10-25T01:00:00.000000Z', // back to CET
  '2026-10-25T01:30:00.999999Z', // 02:30 CET, second pass
  '2026-05-06T08:16:41.000000Z',
  '2026-05-06T21:59:59.999000Z', // local midnight boundary
  '2026-05-06T22:00:00.000000Z',
  '2026-12-31T22:59:59.999999Z', // new year local
  '2026-12-31T23:00:00.000001Z',
  '1969-12-31T23:59:59.999500Z', // before 1970
  '1900-01-01T12:00:00.000000Z', // local mean time offset
  '2038-01-19T03:14:07.999999Z',
  '9999-12-31T22:59:59.999999Z', // the last local millisecond of 9999
  '2100-02-28T23:59:59.000001Z',
];

export interface ExportFixture {
  id: string;
  /** Root unit of the fixture's tree; every call lies under it. */
  root: string;
  units: { root: string; a1: string; a2: string; a3: string; a4: string; b1: string };
  users: string[];
  campaigns: string[];
  /** Project names; the restricted account sees the first only. */
  projects: string[];
  /** Pattern matching every project of the fixture (and no other). */
  projectPattern: string;
  accounts: Record<'full' | 'partner' | 'none' | 'restricted', { username: string; auth: string }>;
  /** A window holding every call of the fixture. */
  window: { start: Date; end: Date };
  calls: number;
  leads: number;
  savedSearch: string;
}

function pick<T>(rnd: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rnd() * xs.length)]!;
}

function maybe<T>(rnd: () => number, x: T, nullShare = 0.25): T | null {
  return rnd() < nullShare ? null : x;
}

export async function createExportFixture(
  t: TestApp,
  options: { calls?: number; leads?: number; seed?: number } = {},
): Promise<ExportFixture> {
  const id = uniq();
  const rnd = random(options.seed ?? 7);
  const callCount = options.calls ?? 1500;
  const leadCount = options.leads ?? 600;
  const units = {
    root: `GRoot ${id}`,
    a1: `GA1;${id}`,
    a2: `GA2 "quoted" ${id}`,
    a3: `GA3 æøå\n${id}`,
    a4: `GA4 😀 ${id}`,
    b1: `GB1,${id}`,
  };
  const projects = [`GP-${id} Main; "one"`, `GP-${id} Other æøå`];
  const definition = `GDef ${id}`;
  const campaigns = [`GC1-${id}`, `GC2-${id};x`, `GC3-${id}"q"`];
  const users = [`gu1-${id}`, `gu2-${id};"x"`, `gu3-${id} æøå`, `gu4-${id}`];
  const accounts = {
    full: { username: `gfull-${id}`, auth: basicAuth(`gfull-${id}`, 'pw-full') },
    partner: { username: `gpartner-${id}`, auth: basicAuth(`gpartner-${id}`, 'pw-partner') },
    none: { username: `gnone-${id}`, auth: basicAuth(`gnone-${id}`, 'pw-none') },
    restricted: { username: `grestricted-${id}`, auth: basicAuth(`grestricted-${id}`, 'pw-restricted') },
  };
  const savedSearch = `GSearch ${id}`;
  await t.load(
    { type: 'orgUnit', orgCode: units.root, name: 'Root "G"' },
    { type: 'orgUnit', orgCode: units.a1, name: 'A1;one', parent: units.root },
    { type: 'orgUnit', orgCode: units.a2, name: 'A2\ttab', parent: units.a1 },
    { type: 'orgUnit', orgCode: units.a3, name: 'A3 Ærø', parent: units.a2 },
    { type: 'orgUnit', orgCode: units.a4, name: 'A4 \\ back', parent: units.a3 },
    { type: 'orgUnit', orgCode: units.b1, name: 'B1', parent: units.root },
    {
      type: 'leadDefinition',
      name: definition,
      fields: [
        { name: 'Name', type: 'text', required: true, sortOrder: 1 },
        { name: 'Phone', importName: 'Telefon', type: 'phone', sortOrder: 2, access: 'Partner' },
        { name: 'Notes "quoted"', type: 'text', sortOrder: 3 },
        { name: 'Sep;Field', type: 'text', sortOrder: 4, access: 'Partner' },
        { name: 'Ærø', type: 'text', sortOrder: 5 },
        { name: '10', type: 'text', sortOrder: 6 },
        { name: '2', type: 'text', sortOrder: 7, access: 'Full' },
        { name: 'Secret', type: 'text', sortOrder: 8, access: 'Full' },
        // A second phone field: the number comes from the first (Phone), so None does not see it.
        { name: 'Mobile', type: 'phone', sortOrder: 9 },
        { name: 'Key', type: 'text', sortOrder: 10, access: 'Full', externalKey: true },
      ],
    },
    {
      type: 'leadDefinition',
      name: `${definition} inherited`,
      fields: [
        { name: 'constructor', type: 'text' },
        { name: 'Plain', type: 'text' },
      ],
    },
    {
      type: 'campaign',
      code: campaigns[0],
      name: 'Sale; "Big"\nNew',
      project: projects[0],
      leadDefinition: definition,
      campaignType: 'PowerDialer',
    },
    {
      type: 'campaign',
      code: campaigns[1],
      name: 'Second æøå 😀',
      project: projects[1],
      leadDefinition: definition,
      campaignType: 'Master',
    },
    {
      type: 'campaign',
      code: campaigns[2],
      name: 'Third\\',
      project: projects[1],
      leadDefinition: `${definition} inherited`,
      campaignType: 'PredictiveDialer',
    },
    {
      type: 'user',
      orgCode: users[0],
      username: `gu1-name-${id}`,
      name: 'Agent "One"; A4',
      parent: units.a4,
      email: 'one@example.com',
      roles: ['Agent', 'Lead;er'],
      campaigns: campaigns,
      employeeNumber: 'E1',
      payrollNumber: 'P1',
      inboundPhoneNumber: '+45 1',
    },
    { type: 'user', orgCode: users[1], username: `gu2-name-${id}`, name: 'Two\nLines', parent: units.b1, campaigns: [campaigns[1]!] },
    { type: 'user', orgCode: users[2], username: `gu3-name-${id}`, name: 'Åse Ærø', parent: units.root },
    {
      type: 'user',
      orgCode: users[3],
      username: `gu4-name-${id}`,
      name: 'Four',
      parent: units.a2,
      campaigns: [campaigns[2]!, campaigns[0]!],
    },
    {
      type: 'account',
      username: accounts.full.username,
      password: 'pw-full',
      user: users[0],
      projects: ['*'],
      rights: ALL_RIGHTS,
      entryAccess: 'Full',
    },
    {
      type: 'account',
      username: accounts.partner.username,
      password: 'pw-partner',
      user: users[0],
      projects: ['*'],
      rights: ALL_RIGHTS,
      entryAccess: 'Partner',
    },
    {
      type: 'account',
      username: accounts.none.username,
      password: 'pw-none',
      user: users[0],
      projects: ['*'],
      rights: ALL_RIGHTS,
      entryAccess: 'None',
    },
    {
      type: 'account',
      username: accounts.restricted.username,
      password: 'pw-restricted',
      user: users[0],
      projects: [`GP-${id} Main*`],
      rights: ALL_RIGHTS,
      entryAccess: 'Full',
    },
    { type: 'savedSearch', user: users[0], name: savedSearch, projects: [`GP-${id}*`] },
  );
  const idOf = async (table: string, column: string, value: string) =>
    (await t
      .db<{ id: number }>(table)
      .where({ [column]: value })
      .first('id'))!.id;
  const u = {
    root: await idOf('org_units', 'org_code', units.root),
    a1: await idOf('org_units', 'org_code', units.a1),
    a2: await idOf('org_units', 'org_code', units.a2),
    a3: await idOf('org_units', 'org_code', units.a3),
    a4: await idOf('org_units', 'org_code', units.a4),
    b1: await idOf('org_units', 'org_code', units.b1),
  };
  const chains = [
    [u.root],
    [u.root, u.b1],
    [u.root, u.a1],
    [u.root, u.a1, u.a2],
    [u.root, u.a1, u.a2, u.a3],
    [u.root, u.a1, u.a2, u.a3, u.a4],
  ];
  const userIds = await Promise.all(users.map((c) => idOf('users', 'org_code', c)));
  const campaignIds = await Promise.all(campaigns.map((c) => idOf('campaigns', 'code', c)));
  const nums = (e: { names: string[]; toNumber(n: string): number }) => e.names.map((n) => e.toNumber(n));

  // Times: the listed instants plus random ones in May 2026, each with random microseconds.
  const startMs = (i: number): string => {
    if (i < INSTANTS.length * 2) return INSTANTS[i % INSTANTS.length]!;
    const ms = Date.UTC(2026, 4, 1) + Math.floor(rnd() * 20 * 86_400_000);
    const iso = new Date(ms).toISOString();
    return iso.slice(0, 23) + String(Math.floor(rnd() * 1000)).padStart(3, '0') + 'Z';
  };
  const text = (prefix: string) => `${prefix}${pick(rnd, AWKWARD_TEXTS)}`;
  const calls: Record<string, unknown>[] = [];
  for (let i = 0; i < callCount; i++) {
    const chain = pick(rnd, chains);
    const start = startMs(i);
    const later = (ms: number) => new Date(Date.parse(start) + ms).toISOString();
    calls.push({
      unique_id: `${id}-${i}-${pick(rnd, AWKWARD_TEXTS)}`,
      campaign_id: pick(rnd, campaignIds),
      unique_lead_id: text(`lead-${i}-`),
      user_id: pick(rnd, userIds),
      ou0_id: chain[0],
      ou1_id: chain[1] ?? null,
      ou2_id: chain[2] ?? null,
      ou3_id: chain[3] ?? null,
      ou4_id: chain[4] ?? null,
      lead_phone_number: rnd() < 0.7 ? `+45${Math.floor(rnd() * 1e8)}` : text(''),
      lead_external_key: maybe(rnd, text('key-')),
      end_cause: pick(rnd, nums(CallEndCause)),
      in_progress: rnd() < 0.5,
      connected: rnd() < 0.5,
      incoming: rnd() < 0.5,
      start_time: start,
      connect_time: maybe(rnd, later(Math.floor(rnd() * 10_000) + rnd())),
      end_time: maybe(rnd, later(Math.floor(rnd() * 1_000_000))),
      preview_ms: pick(rnd, DURATIONS) ?? 0,
      dialing_ms: pick(rnd, DURATIONS),
      conversation_ms: pick(rnd, DURATIONS),
      wrap_up_ms: pick(rnd, DURATIONS),
      lead_status: maybe(rnd, pick(rnd, nums(CallLeadStatus))),
      pre_call_lead_status: maybe(rnd, pick(rnd, nums(PreCallLeadStatus))),
      lead_closure: maybe(rnd, pick(rnd, nums(LeadClosure))),
      campaign_type: maybe(rnd, pick(rnd, nums(CampaignType))),
    });
  }
  for (let i = 0; i < calls.length; i += 500) await t.db('calls').insert(calls.slice(i, i + 500));

  // Ready periods: a few per user, ending in May 2026.
  const periods: Record<string, unknown>[] = [];
  for (let i = 0; i < 60; i++) {
    const seconds = Math.floor(rnd() * 4000);
    const start = startMs(INSTANTS.length * 2 + i);
    periods.push({
      unique_id: `${id}-rp-${i}-${pick(rnd, AWKWARD_TEXTS)}`,
      user_id: pick(rnd, userIds),
      campaign_id: pick(rnd, campaignIds),
      start_time: start,
      seconds,
      end_time: t.db.raw(`?::timestamptz + ? * interval '1 second'`, [start, seconds]),
    });
  }
  await t.db('ready_periods').insert(periods);

  // Leads: pools with awkward names, data with every key shape.
  const poolIds: number[] = [];
  for (const [i, campaignId] of campaignIds.entries()) {
    for (const name of [`(auto) 2026-05-0${i + 1}`, `Pool "${i}";\næøå`]) {
      const [row] = await t
        .db<{ id: number; campaign_id: number; name: string }>('lead_pools')
        .insert({ campaign_id: campaignId, name })
        .returning('id');
      poolIds.push(row!.id);
    }
  }
  const poolCampaign = (pool: number) => campaignIds[Math.floor(poolIds.indexOf(pool) / 2)]!;
  const dataKeys = [
    'Name',
    'Phone',
    'Notes "quoted"',
    'Sep;Field',
    'Ærø',
    '10',
    '2',
    'Secret',
    'Mobile',
    'Key',
    'Stale',
    'constructor',
    'Plain',
  ];
  const leads: Record<string, unknown>[] = [];
  for (let i = 0; i < leadCount; i++) {
    const pool = pick(rnd, poolIds);
    const data: Record<string, unknown> = {};
    for (const key of dataKeys) if (rnd() < 0.6) data[key] = pick(rnd, AWKWARD_TEXTS);
    // A few values of other JSON types (never written by the API, but possible in storage).
    if (i % 97 === 5) data.Name = 42;
    if (i % 89 === 7) data.Phone = null;
    const modified = startMs(i);
    leads.push({
      unique_id: `${id}-lead-${i}-${pick(rnd, AWKWARD_TEXTS)}`,
      campaign_id: poolCampaign(pool),
      pool_id: pool,
      status: pick(rnd, nums(LeadStatus)),
      closure: pick(rnd, nums(LeadClosure)),
      priority: pick(rnd, [0, 1, -5, 100, 2_147_483_647]),
      // As an import stores them: the values of the first phone field and of the key field; now
      // and then a value no field holds (taken from another field before the definition changed).
      phone_number: rnd() < 0.1 ? maybe(rnd, text('+45 ')) : typeof data.Phone === 'string' ? data.Phone : null,
      external_key: rnd() < 0.1 ? maybe(rnd, text('ext-')) : typeof data.Key === 'string' ? data.Key : null,
      data: JSON.stringify(data),
      closure_data: JSON.stringify(rnd() < 0.5 ? [] : [{ at: modified, note: pick(rnd, AWKWARD_TEXTS) }]),
      upload_time: startMs(i + 3),
      last_modified_time: modified,
      first_processed_time: maybe(rnd, startMs(i + 5), 0.4),
      status_changed_time: modified,
      owner_org_unit_id: maybe(rnd, pick(rnd, Object.values(u))),
      uploaded_by_user_id: maybe(rnd, pick(rnd, userIds)),
      last_modified_by_user_id: maybe(rnd, pick(rnd, userIds)),
      first_processed_by_user_id: maybe(rnd, pick(rnd, userIds)),
    });
  }
  for (let i = 0; i < leads.length; i += 500) await t.db('leads').insert(leads.slice(i, i + 500));

  return {
    id,
    root: units.root,
    units,
    users,
    campaigns,
    projects,
    projectPattern: `GP-${id}*`,
    accounts,
    window: { start: new Date('1900-01-01T00:00:00Z'), end: new Date('9999-12-31T23:00:00Z') },
    calls: callCount,
    leads: leadCount,
    savedSearch,
  };
}
