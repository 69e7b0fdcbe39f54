import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Knex } from 'knex';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { DateTime } from 'luxon';
import {
  CallEndCause,
  CallEndCauseName,
  CallLeadStatus,
  CampaignType,
  CampaignTypeName,
  EntryAccess,
  EntryAccessName,
  FieldType,
  LeadClosure,
  LeadClosureName,
  LeadStatus,
  PreCallLeadStatus,
  RecordingType,
} from '../domain/enums';
import {
  AgentAction,
  CampaignLifecycleSettings,
  LeadState,
  preCallLeadStatusFor,
  recordCallOutcome,
  sweepDeadline,
  SWEEP_RULES,
} from '../domain/lifecycle';
import { parseTimeSpan } from '../domain/timespan';

/**
 * `lcm generate` (docs/decisions.md, Command line): a realistic synthetic data set appended to the database in one
 * transaction. Small tables go in through ordinary inserts; leads, calls, recordings and
 * ready periods through COPY FROM STDIN (text format) fed by generators, so backpressure
 * reaches the generator and memory stays flat apart from the per-call plan arrays.
 *
 * Every generated key carries the run prefix `g{seed}` (`g{seed}r{n}` for the n-th run of the
 * same seed in one database), so runs never collide. For a given seed, run number, end date and
 * days the content is identical.
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

// ---- seeded PRNG ------------------------------------------------------------------------------

/** sfc32 seeded through splitmix32: small, fast, good enough for synthetic data. */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    let s = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
    const splitmix = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = splitmix();
    this.b = splitmix();
    this.c = splitmix();
    this.d = splitmix();
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** [0, 1) */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Integer in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** Index chosen by weight. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i];
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** Roughly log-normal duration in ms between lo and hi seconds, most mass near lo. */
  duration(loSec: number, hiSec: number): number {
    const u = this.next();
    return Math.round((loSec + (hiSec - loSec) * u * u * u) * 1000) + this.int(1000);
  }
}

// ---- fixed vocabulary -------------------------------------------------------------------------

const FIRST_NAMES = [
  'Anders', 'Anne', 'Birgitte', 'Bo', 'Camilla', 'Christian', 'Dorthe', 'Emil', 'Freja', 'Frederik', 'Gitte', 'Hanne',
  'Ida', 'Jens', 'Jette', 'Kasper', 'Karin', 'Lars', 'Line', 'Mads', 'Maja', 'Mette', 'Morten', 'Niels', 'Nanna',
  'Ole', 'Pernille', 'Peter', 'Rasmus', 'Signe', 'Søren', 'Sofie', 'Thomas', 'Tove', 'Ulla', 'Åse', 'Øystein',
  'Ingrid', 'Henrik', 'Lotte', 'Mikkel', 'Astrid', 'Bjørn', 'Linnéa', 'Erik', 'Kari', 'Johan', 'Marianne',
];
const LAST_NAMES = [
  'Hansen', 'Jensen', 'Nielsen', 'Pedersen', 'Andersen', 'Christensen', 'Larsen', 'Sørensen', 'Rasmussen',
  'Jørgensen', 'Petersen', 'Madsen', 'Kristensen', 'Olsen', 'Thomsen', 'Poulsen', 'Johansen', 'Møller', 'Mortensen',
  'Karlsson', 'Lindqvist', 'Berg', 'Haugen', 'Dahl', 'Lund', 'Holm', 'Bakke', 'Østergaard', 'Frandsen', 'Kjær',
];
const COMPANY_WORDS = ['Nord', 'Vest', 'Hav', 'Fjord', 'Lys', 'Skov', 'Bygge', 'Data', 'Energi', 'Transport', 'Medico', 'Agro', 'Fin', 'Logi', 'Tekno'];
const COMPANY_SUFFIXES = ['A/S', 'ApS', 'AB', 'AS', 'I/S', 'Holding A/S'];
const CITIES = ['København', 'Aarhus', 'Odense', 'Aalborg', 'Malmö', 'Göteborg', 'Oslo', 'Bergen', 'Esbjerg', 'Roskilde'];
const SEGMENTS = ['Gold', 'Silver', 'Bronze', 'Partner+', 'Standard'];

const COUNTRIES = ['Danmark', 'Sverige', 'Norge'];
const CATEGORIES = ['Sales', 'Support', 'Retail'] as const;
type Category = (typeof CATEGORIES)[number];

interface FieldSpec {
  name: string;
  importName?: string;
  type: FieldType;
  required?: boolean;
  access?: EntryAccessName;
  externalKey?: boolean;
}

const B2B_FIELDS: FieldSpec[] = [
  { name: 'CompanyName', importName: 'Company', type: 'text', required: true },
  { name: 'ContactName', type: 'text' },
  { name: 'Phone', type: 'phone', required: true },
  { name: 'Mobile', type: 'phone' },
  { name: 'Email', type: 'email' },
  { name: 'Employees', type: 'number' },
  { name: 'CustomerSince', type: 'date' },
  { name: 'CustomerNumber', importName: 'CustNo', type: 'text', externalKey: true },
  { name: 'LastOrderAt', type: 'datetime' },
  { name: 'Newsletter', type: 'boolean' },
  { name: 'PartnerNotes', type: 'text', access: 'Partner' },
  { name: 'CreditScore', type: 'number', access: 'Full' },
];
const CONSUMER_FIELDS: FieldSpec[] = [
  { name: 'FirstName', type: 'text', required: true },
  { name: 'LastName', type: 'text', required: true },
  { name: 'Phone', type: 'phone', required: true },
  { name: 'Email', type: 'email' },
  { name: 'BirthDate', type: 'date' },
  { name: 'Age', type: 'number' },
  { name: 'City', type: 'text' },
  { name: 'MemberNo', importName: 'Member', type: 'text', externalKey: true },
  { name: 'PartnerSegment', type: 'text', access: 'Partner' },
  { name: 'InternalRating', type: 'number', access: 'Full' },
];

interface CampaignSpec {
  name: string;
  project: string;
  category: Category;
  type: CampaignTypeName;
  definition: 0 | 1;
  weight: number;
  maxAttempts: number | null;
  expireDays: number | null;
  privateExpireDays: number | null;
}

// Each campaign type twice; two campaigns have attempt caps, two have expiry limits.
const CAMPAIGNS: CampaignSpec[] = [
  { name: 'Enterprise outbound', project: 'B2B Sales', category: 'Sales', type: 'Master', definition: 0, weight: 3, maxAttempts: null, expireDays: null, privateExpireDays: null },
  { name: 'SMB prospecting', project: 'B2B Sales', category: 'Sales', type: 'PowerDialer', definition: 0, weight: 3, maxAttempts: 6, expireDays: null, privateExpireDays: null },
  { name: 'Support follow-up', project: 'B2B Support', category: 'Support', type: 'BasketDialer', definition: 0, weight: 2, maxAttempts: null, expireDays: 30, privateExpireDays: 21 },
  { name: 'Contract renewals', project: 'B2B Support', category: 'Support', type: 'Master', definition: 0, weight: 2, maxAttempts: null, expireDays: null, privateExpireDays: null },
  { name: 'Retail winback', project: 'Retail', category: 'Retail', type: 'PredictiveDialer', definition: 1, weight: 3, maxAttempts: null, expireDays: null, privateExpireDays: null },
  { name: 'Retail upsell', project: 'Retail', category: 'Retail', type: 'PowerDialer', definition: 1, weight: 3, maxAttempts: null, expireDays: 30, privateExpireDays: 21 },
  { name: 'Payment reminders', project: 'Collections', category: 'Retail', type: 'BasketDialer', definition: 1, weight: 2, maxAttempts: 6, expireDays: null, privateExpireDays: null },
  { name: 'Debt collection', project: 'Collections', category: 'Retail', type: 'PredictiveDialer', definition: 1, weight: 2, maxAttempts: null, expireDays: null, privateExpireDays: null },
];
const ABANDON_DAYS = 2;
/** A lead's calls fall within this many days after its upload. */
const CALL_SPAN_DAYS = 20;
const POOLS_PER_CAMPAIGN = 10;

// ---- call outcomes ----------------------------------------------------------------------------

// What happened on a call; the lead lifecycle (src/domain/lifecycle.ts) turns it into statuses.
const O_NO_CONTACT = 0; // NoResponse, Busy, VoiceMail, no agent action
const O_CB_COMMON = 1;
const O_CB_PRIVATE = 2;
const O_CB_VIP = 3;
const O_NOT_SAVED = 4; // agent left the contact page unsaved: lead Unresolved, call Abandoned
const O_CLOSE = 5;
const O_FAILED = 6;
const O_IN_PROGRESS = 7;

const AGENT_ACTION: (AgentAction | undefined)[] = [undefined, 'redialCommon', 'redialPrivate', 'redialVip', 'notSaved', 'close', undefined, undefined];
const NO_CONTACT_CAUSES: CallEndCauseName[] = ['NoResponse', 'Busy', 'VoiceMail'];

const FLAG_CONNECTED = 1;
const FLAG_IN_PROGRESS = 2;
const FLAG_INCOMING = 4;
const FLAG_PARTIAL = 8;
const FLAG_READY = 16;

const NULL16 = 0xffff;
const NULL8 = 0xff;
/** Call planning index bits in the sort key; the rest holds the start second in the window. */
const INDEX_BITS = 2 ** 29;

// ---- COPY helpers -----------------------------------------------------------------------------

/** Escapes a value for COPY text format. */
function esc(value: string): string {
  return /[\\\t\n\r]/.test(value)
    ? value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
    : value;
}

function ts(ms: number): string {
  return new Date(ms).toISOString();
}

function pad(n: number): string {
  return n.toString().padStart(9, '0');
}

const CHUNK_CHARS = 1 << 20;

async function copyRows(
  conn: pg.PoolClient,
  table: string,
  columns: string[],
  rows: () => Generator<string>,
  onRows: (n: number) => void,
): Promise<void> {
  function* chunks(): Generator<string> {
    let buf = '';
    let n = 0;
    for (const row of rows()) {
      buf += row;
      n += 1;
      if (buf.length >= CHUNK_CHARS) {
        yield buf;
        onRows(n);
        buf = '';
        n = 0;
      }
    }
    if (buf.length > 0) {
      yield buf;
      onRows(n);
    }
  }
  const stream = conn.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  await pipeline(Readable.from(chunks(), { objectMode: false }), stream);
}

// ---- the generator ----------------------------------------------------------------------------

interface Unit {
  uid: string;
  code: string;
  name: string;
  level: number;
  parent: number | null;
  category: Category | null;
  id: number;
  /** Ids of the unit chain, root first. */
  chain: number[];
}

interface GenUser {
  uid: string;
  username: string;
  name: string;
  unit: number;
  roles: string[];
  caller: boolean;
  id: number;
  /** `ou0\tou1\tou2\tou3\tou4` for call rows. */
  chainCols: string;
  ownerUnitId: number;
}

interface GenCampaign {
  spec: CampaignSpec;
  uid: string;
  code: string;
  id: number;
  typeNumber: number;
  agents: number[];
  pools: { name: string; day: number; id: number }[];
}

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
  const endDay = options.endDate
    ? DateTime.fromISO(options.endDate, { zone })
    : DateTime.now().setZone(zone).startOf('day');
  if (!endDay.isValid || (options.endDate && !/^\d{4}-\d{2}-\d{2}$/.test(options.endDate))) {
    throw new GenerateError(`bad end date ${JSON.stringify(options.endDate)}: expected yyyy-MM-dd`);
  }
  const windowEnd = endDay.startOf('day');
  const windowStart = windowEnd.minus({ days });
  const windowStartMs = windowStart.toMillis();
  const windowEndMs = windowEnd.toMillis();
  // 08:00 local of each day (DST-correct), its weekday and its date for pool names.
  const day8Sec = new Float64Array(days);
  const weekend = new Uint8Array(days);
  const dayName: string[] = [];
  for (let d = 0; d < days; d++) {
    const day = windowStart.plus({ days: d });
    day8Sec[d] = (day.set({ hour: 8 }).toMillis() - windowStartMs) / 1000;
    weekend[d] = day.weekday >= 6 ? 1 : 0;
    dayName.push(day.toISODate()!);
  }

  const timings: Record<string, number> = {};
  let phaseStart = Date.now();
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = now - phaseStart;
    phaseStart = now;
  };

  const counts: Record<string, number> = {};
  let prefix = '';

  // Id blocks are reserved up front so calls can name their leads and recordings their calls
  // before any row exists. The short transaction's EXCLUSIVE lock keeps other writers (the only
  // other users of these sequences) out between nextval and setval; the block stays ours after
  // commit, and a failed run only leaves a gap in the ids.
  const { leadBase, callBase } = await db.transaction(async (trx) => {
    await trx.raw('LOCK TABLE leads, calls IN EXCLUSIVE MODE');
    const reserve = async (table: string, count: number): Promise<number> => {
      if (count === 0) return 0;
      const { rows } = await trx.raw(
        `select setval(s, nextval(s) + ?::bigint - 1) - ?::bigint + 1 as first
           from (select pg_get_serial_sequence(?, 'id')::regclass as s) q`,
        [count, count, table],
      );
      return Number(rows[0].first);
    };
    return { leadBase: await reserve('leads', L), callBase: await reserve('calls', N) };
  });

  await db.transaction(async (trx) => {
    // ---- run prefix: the first free g{seed}[r{n}] --------------------------------------------
    for (let run = 1; ; run++) {
      prefix = run === 1 ? `g${seed}` : `g${seed}r${run}`;
      const taken = await trx('org_units').where({ unique_id: `${prefix}-ou0` }).first('id');
      if (!taken) break;
    }
    const P = prefix;

    // ---- org tree: root → country → category → team → squad ------------------------------
    const units: Unit[] = [];
    const addUnit = (name: string, level: number, parent: number | null, category: Category | null) => {
      const idx = units.length;
      units.push({ uid: `${P}-ou${idx}`, code: `${P} ${name}`, name, level, parent, category, id: 0, chain: [] });
      return idx;
    };
    const root = addUnit('Nordic Contact Center A/S', 0, null, null);
    const squads: number[] = [];
    const teams: number[] = [];
    const departments: number[] = [];
    for (const country of COUNTRIES) {
      const c = addUnit(country, 1, root, null);
      for (const category of CATEGORIES) {
        const dep = addUnit(`${country} ${category}`, 2, c, category);
        departments.push(dep);
        for (const team of ['Team A', 'Team B']) {
          const t = addUnit(`${country} ${category} ${team}`, 3, dep, category);
          teams.push(t);
          for (const squad of ['Squad 1', 'Squad 2']) squads.push(addUnit(`${country} ${category} ${team} ${squad}`, 4, t, category));
        }
      }
    }
    for (let level = 0; level <= 4; level++) {
      const batch = units.filter((u) => u.level === level);
      const rows = await trx('org_units')
        .insert(batch.map((u) => ({ unique_id: u.uid, org_code: u.code, name: u.name, level, parent_id: u.parent === null ? null : units[u.parent].id })))
        .returning(['id', 'unique_id']);
      const ids = new Map<string, number>(rows.map((r: { id: number; unique_id: string }) => [r.unique_id, r.id]));
      for (const u of batch) {
        u.id = ids.get(u.uid)!;
        u.chain = u.parent === null ? [u.id] : [...units[u.parent].chain, u.id];
      }
    }
    counts.orgUnits = units.length;

    // ---- users: 8 agents a squad, a team leader a team, a manager a department -------------
    const org = new Prng(seed, 1);
    const users: GenUser[] = [];
    const usernames = new Set<string>();
    const addUser = (unit: number, roles: string[], caller: boolean) => {
      const first = org.pick(FIRST_NAMES);
      const last = org.pick(LAST_NAMES);
      const base = `${ascii(first)}.${ascii(last)}`;
      let username = `${base}.${P}`;
      for (let n = 2; usernames.has(username); n++) username = `${base}${n}.${P}`;
      usernames.add(username);
      users.push({
        uid: `${P}-u${users.length}`,
        username,
        name: `${first} ${last}`,
        unit,
        roles,
        caller,
        id: 0,
        chainCols: '',
        ownerUnitId: units[unit].chain[1],
      });
    };
    for (const dep of departments) addUser(dep, ['Manager'], false);
    for (const t of teams) addUser(t, ['TeamLeader', 'Agent'], true);
    for (const s of squads) for (let i = 0; i < 8; i++) addUser(s, ['Agent'], true);
    const userRows = await trx('users')
      .insert(
        users.map((u, i) => ({
          unique_id: u.uid,
          org_code: u.username,
          username: u.username,
          name: u.name,
          parent_id: units[u.unit].id,
          email: `${u.username.replace(/\.g\d+(r\d+)?$/, '')}@${P}.example.com`,
          inbound_phone_number: org.chance(0.3) ? `+45 70 ${String(1000 + i).padStart(4, '0')} 00` : null,
          roles: u.roles,
          employee_number: `E${String(i + 1).padStart(5, '0')}`,
          payroll_number: org.chance(0.8) ? `P${String(100000 + i)}` : null,
        })),
      )
      .returning(['id', 'unique_id']);
    const userIds = new Map<string, number>(userRows.map((r: { id: number; unique_id: string }) => [r.unique_id, r.id]));
    for (const u of users) {
      u.id = userIds.get(u.uid)!;
      const chain = units[u.unit].chain;
      u.chainCols = [0, 1, 2, 3, 4].map((l) => (chain[l] === undefined ? '\\N' : String(chain[l]))).join('\t');
    }
    counts.users = users.length;

    // ---- lead definitions and campaigns -----------------------------------------------------
    const definitionIds: number[] = [];
    for (const [i, fields] of [B2B_FIELDS, CONSUMER_FIELDS].entries()) {
      const name = i === 0 ? `B2B prospect ${P}` : `Consumer ${P}`;
      const [def] = await trx('lead_definitions').insert({ unique_id: `${P}-ld${i}`, name }).returning('id');
      definitionIds.push(def.id);
      await trx('lead_definition_fields').insert(
        fields.map((f, sortOrder) => ({
          lead_definition_id: def.id,
          name: f.name,
          import_name: f.importName ?? null,
          type: f.type,
          required: f.required ?? false,
          sort_order: sortOrder + 1,
          editable: !f.externalKey,
          access: EntryAccess.toNumber(f.access ?? 'None'),
          external_key: f.externalKey ?? false,
        })),
      );
    }
    counts.leadDefinitions = definitionIds.length;

    const campaigns: GenCampaign[] = [];
    for (const [i, spec] of CAMPAIGNS.entries()) {
      const code = `${P}-C${String(i + 1).padStart(2, '0')}`;
      const [row] = await trx('campaigns')
        .insert({
          unique_id: `${P}-c${i}`,
          code,
          name: `${spec.name} (${P})`,
          project: spec.project,
          lead_definition_id: definitionIds[spec.definition],
          campaign_type: CampaignType.toNumber(spec.type),
          max_attempts: spec.maxAttempts,
          abandon_after: `${ABANDON_DAYS} days`,
          expire_after: spec.expireDays === null ? null : `${spec.expireDays} days`,
          private_expire_after: spec.privateExpireDays === null ? null : `${spec.privateExpireDays} days`,
        })
        .returning('id');
      campaigns.push({ spec, uid: `${P}-c${i}`, code, id: row.id, typeNumber: CampaignType.toNumber(spec.type), agents: [], pools: [] });
    }
    counts.campaigns = campaigns.length;

    const links: { user_id: number; campaign_id: number }[] = [];
    users.forEach((u, ui) => {
      const category = units[u.unit].category;
      campaigns.forEach((c) => {
        if (c.spec.category !== category) return;
        links.push({ user_id: u.id, campaign_id: c.id });
        if (u.caller) c.agents.push(ui);
      });
    });
    await trx('user_campaigns').insert(links);

    // Upload batches: one pool a batch, spread over the window (distinct dates per campaign).
    const poolRows: { campaign_id: number; name: string; created_at: Date }[] = [];
    for (const c of campaigns) {
      const seen = new Set<number>();
      for (let b = 0; b < POOLS_PER_CAMPAIGN; b++) {
        const day = Math.min(days - 2, Math.floor(((b + org.next()) * (days - 2)) / POOLS_PER_CAMPAIGN));
        if (seen.has(day)) continue;
        seen.add(day);
        c.pools.push({ name: `(auto) ${dayName[day]}`, day, id: 0 });
        poolRows.push({ campaign_id: c.id, name: `(auto) ${dayName[day]}`, created_at: new Date(windowStartMs + (day8Sec[day] - 3600) * 1000) });
      }
    }
    const pools = await trx('lead_pools').insert(poolRows).returning(['id', 'campaign_id', 'name']);
    const poolIds = new Map<string, number>(pools.map((p: { id: number; campaign_id: number; name: string }) => [`${p.campaign_id}|${p.name}`, p.id]));
    for (const c of campaigns) for (const p of c.pools) p.id = poolIds.get(`${c.id}|${p.name}`)!;
    phase('setup');

    // ---- plan: which leads are called how often, and every call's outcome --------------------
    const plan = new Prng(seed, 2);
    const leadCampaign = new Uint8Array(L);
    const leadPool = new Uint8Array(L);
    const leadUploadMs = new Float64Array(L);
    const leadUploader = new Uint16Array(L);
    const leadStatus = new Uint16Array(L);
    const leadClosure = new Uint8Array(L);
    const leadChangedMs = new Float64Array(L);
    const campaignWeights = campaigns.map((c) => c.spec.weight);
    for (let l = 0; l < L; l++) {
      const c = plan.weighted(campaignWeights);
      leadCampaign[l] = c;
      const p = plan.int(campaigns[c].pools.length);
      leadPool[l] = p;
      // Uploaded between 06:00 and 07:59 local on the batch day, before the dialing day starts.
      leadUploadMs[l] = windowStartMs + (day8Sec[campaigns[c].pools[p].day] - 7200) * 1000 + plan.int(7_200_000);
      leadUploader[l] = campaigns[c].agents.length ? plan.pick(campaigns[c].agents) : 0;
    }

    // Call counts: a share of the leads is called at least once, the rest spread at random
    // (respecting the campaigns' attempt caps where possible).
    const callCount = new Uint16Array(L);
    const called = N === 0 ? 0 : Math.min(L, N, Math.max(1, Math.round(L * 0.85)));
    const perm = new Uint32Array(L);
    for (let i = 0; i < L; i++) perm[i] = i;
    for (let i = 0; i < called; i++) {
      const j = i + plan.int(L - i);
      const t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
      callCount[perm[i]] = 1;
    }
    for (let extra = N - called; extra > 0; extra--) {
      let l = perm[plan.int(called)];
      for (let tries = 0; tries < 20; tries++) {
        const cap = campaigns[leadCampaign[l]].spec.maxAttempts;
        if ((cap === null || callCount[l] < cap) && callCount[l] < 60000) break;
        l = perm[plan.int(called)];
      }
      callCount[l] += 1;
    }
    const offset = new Uint32Array(L + 1);
    for (let l = 0; l < L; l++) offset[l + 1] = offset[l] + callCount[l];

    const callLead = new Uint32Array(N);
    const callUser = new Uint16Array(N);
    const callPre = new Uint8Array(N);
    const callStatus = new Uint16Array(N);
    const callClosure = new Uint8Array(N);
    const callEndCause = new Uint8Array(N);
    const callFlags = new Uint8Array(N);
    const callMsPart = new Uint16Array(N);
    const callPreview = new Int32Array(N);
    const callDialing = new Int32Array(N);
    const callConversation = new Int32Array(N);
    const callWrapUp = new Int32Array(N);
    const sortKey = new Float64Array(N);

    const CLOSURES: LeadClosureName[] = ['Success', 'NotInterested', 'InvalidLead', 'Unqualified', 'NotSet'];
    const CLOSURE_WEIGHTS = [30, 40, 12, 13, 5];
    // Final outcome of a called lead: mostly closed.
    const FINALS = [O_CLOSE, O_FAILED, O_NOT_SAVED, O_NO_CONTACT, O_CB_COMMON, O_CB_PRIVATE, O_CB_VIP];
    const FINAL_WEIGHTS = [60, 4, 4, 14, 8, 5, 3];
    const settings: CampaignLifecycleSettings[] = campaigns.map(({ spec }) => ({
      maxAttempts: spec.maxAttempts,
      abandonAfter: parseTimeSpan(`P${ABANDON_DAYS}D`),
      expireAfter: spec.expireDays === null ? null : parseTimeSpan(`P${spec.expireDays}D`),
      privateExpireAfter: spec.privateExpireDays === null ? null : parseTimeSpan(`P${spec.privateExpireDays}D`),
    }));
    const leadAttempts = new Uint16Array(L);
    const leadClockMs = new Float64Array(L);
    const times: number[] = [];
    const lastDaySec = day8Sec[days - 1];

    for (let l = 0; l < L; l++) {
      const n = callCount[l];
      const c = campaigns[leadCampaign[l]];
      const uploadDay = c.pools[leadPool[l]].day;
      let lead: LeadState = { status: 'New', attempts: 0 };
      let clockMs = leadUploadMs[l];
      let changedMs = leadUploadMs[l];
      if (n > 0) {
        // Call times: production hours (08–21 local), mostly weekdays, within the call span.
        const span = Math.min(CALL_SPAN_DAYS, days - uploadDay);
        times.length = 0;
        for (let k = 0; k < n; k++) {
          let d = uploadDay + plan.int(span);
          if (weekend[d] && plan.chance(0.85)) d = uploadDay + plan.int(span);
          times.push(day8Sec[d] + plan.int(13 * 3600));
        }
        times.sort((a, b) => a - b);
        // Ten minutes at least between two calls of a lead; the last day's calls stay before midnight.
        for (let k = 1; k < n; k++) if (times[k] < times[k - 1] + 600) times[k] = times[k - 1] + 600;
      }
      let final = FINALS[plan.weighted(FINAL_WEIGHTS)];
      if (n > 0 && times[n - 1] >= lastDaySec && plan.chance(0.1)) final = O_IN_PROGRESS;
      const cap = c.spec.maxAttempts;

      for (let k = 0; k < n; k++) {
        const i = offset[l] + k;
        let outcome: number;
        if (k < n - 1) {
          const s = lead.status;
          if (s === 'New' || s === 'RedialAutomatic') outcome = [O_NO_CONTACT, O_CB_COMMON, O_CB_PRIVATE, O_CB_VIP][plan.weighted([72, 16, 8, 4])];
          else outcome = plan.chance(0.4) ? O_NO_CONTACT : s === 'RedialManualCommon' ? O_CB_COMMON : s === 'RedialManualPrivate' ? O_CB_PRIVATE : O_CB_VIP;
          // Only the last call may deplete the lead: one more no-contact call would reach the cap.
          if (outcome === O_NO_CONTACT && cap !== null && s !== 'VIPRedial' && lead.attempts + 1 >= cap) {
            outcome = s === 'RedialManualPrivate' ? O_CB_PRIVATE : O_CB_COMMON;
          }
        } else {
          outcome = final;
          // Leads that ran out of tries are mostly given up on: the last no-contact call depletes them.
          if (outcome !== O_CLOSE && outcome !== O_IN_PROGRESS && cap !== null && lead.status !== 'VIPRedial' && lead.attempts + 1 >= cap && plan.chance(0.7)) {
            outcome = O_NO_CONTACT;
          }
        }
        callLead[i] = l;
        callUser[i] = c.agents.length ? plan.pick(c.agents) : 0;
        callMsPart[i] = plan.int(1000);
        sortKey[i] = times[k] * INDEX_BITS + i;

        const inProgress = outcome === O_IN_PROGRESS;
        const connected = (outcome >= O_CB_COMMON && outcome <= O_CLOSE) || (inProgress && plan.chance(0.6));
        const incoming = connected && !inProgress && outcome !== O_NOT_SAVED && plan.chance(0.03);
        let flags = (connected ? FLAG_CONNECTED : 0) | (inProgress ? FLAG_IN_PROGRESS : 0) | (incoming ? FLAG_INCOMING : 0);
        if (connected && !inProgress && plan.chance(0.05)) flags |= FLAG_PARTIAL;
        if (!incoming && plan.chance(0.25)) flags |= FLAG_READY;
        callFlags[i] = flags;

        const endCause: CallEndCauseName = inProgress
          ? 'NotApplicable'
          : connected
            ? plan.chance(0.95)
              ? 'NormalDisconnect'
              : 'DroppedCall'
            : outcome === O_FAILED
              ? 'DroppedCall'
              : NO_CONTACT_CAUSES[plan.weighted([60, 25, 15])];
        callEndCause[i] = CallEndCause.toNumber(endCause);

        const type = c.spec.type;
        callPreview[i] = incoming || type === 'PredictiveDialer' ? 0 : type === 'Master' ? plan.duration(3, 45) : type === 'BasketDialer' ? plan.duration(2, 20) : plan.duration(0, 2);
        // Dialing is absent while still dialing; an incoming call only rings.
        callDialing[i] =
          inProgress && !connected
            ? -1
            : incoming
              ? plan.duration(0, 8)
              : connected
                ? plan.duration(4, 25)
                : endCause === 'Busy'
                  ? plan.duration(2, 6)
                  : endCause === 'VoiceMail'
                    ? plan.duration(12, 30)
                    : endCause === 'DroppedCall'
                      ? plan.duration(1, 6)
                      : plan.duration(25, 45);
        callConversation[i] = connected && !inProgress ? (outcome === O_CLOSE ? plan.duration(60, 900) : plan.duration(20, 400)) : -1;
        callWrapUp[i] = inProgress ? -1 : connected ? plan.duration(5, 180) : plan.duration(0, 4);

        if (inProgress) {
          // No wrap-up yet: the lead keeps its status, the call has no lead status.
          callPre[i] = PreCallLeadStatus.toNumber(preCallLeadStatusFor(lead.status)!);
          callStatus[i] = NULL16;
          callClosure[i] = NULL8;
          continue;
        }
        const closure = outcome === O_CLOSE ? CLOSURES[plan.weighted(CLOSURE_WEIGHTS)] : undefined;
        const r = recordCallOutcome(lead, { endCause, agentAction: AGENT_ACTION[outcome], closure, failed: outcome === O_FAILED }, settings[leadCampaign[l]]);
        callPre[i] = PreCallLeadStatus.toNumber(r.preCallLeadStatus!);
        callStatus[i] = CallLeadStatus.toNumber(r.callLeadStatus);
        callClosure[i] = r.callLeadClosure === null ? NULL8 : LeadClosure.toNumber(r.callLeadClosure);
        const wrappedUp = windowStartMs + times[k] * 1000 + callMsPart[i] + Math.max(callDialing[i], 0) + Math.max(callConversation[i], 0) + callWrapUp[i];
        if (r.restartStatusClock) clockMs = wrappedUp;
        changedMs = wrappedUp;
        lead = { status: r.leadStatus, attempts: r.attempts, closure: r.closure };
      }

      // The sweeper's move as of the window end, so the data is already a fixpoint for it.
      const rule = SWEEP_RULES.find((x) => x.from.includes(lead.status));
      const limit = rule ? settings[leadCampaign[l]][rule.setting] : null;
      // Calendar arithmetic (luxon) is slow at this scale: skip it when even a short-houred
      // reading of the limit ends after the window.
      const surelyLater = limit !== null && !limit.years && !limit.months && clockMs + limit.days * 86_400_000 - 7_200_000 > windowEndMs;
      const deadline = limit === null || surelyLater ? null : sweepDeadline({ status: lead.status, statusChangedTime: new Date(clockMs) }, settings[leadCampaign[l]], zone);
      if (deadline !== null && deadline.at.getTime() <= windowEndMs) {
        lead = { ...lead, status: deadline.to };
        clockMs = changedMs = deadline.at.getTime();
      }
      leadStatus[l] = LeadStatus.toNumber(lead.status);
      leadClosure[l] = LeadClosure.toNumber(lead.closure ?? 'NotSet');
      leadAttempts[l] = lead.attempts;
      leadClockMs[l] = clockMs;
      leadChangedMs[l] = changedMs;
    }

    let recordingTotal = 0;
    let readyTotal = 0;
    for (let i = 0; i < N; i++) {
      const f = callFlags[i];
      if ((f & (FLAG_CONNECTED | FLAG_IN_PROGRESS)) === FLAG_CONNECTED) recordingTotal += f & FLAG_PARTIAL ? 2 : 1;
      if (f & FLAG_READY) readyTotal += 1;
    }
    const total = L + N + recordingTotal + readyTotal;
    let done = 0;
    const progress = (phaseName: string) => (n: number) => {
      done += n;
      options.onProgress?.(done, total, phaseName);
    };
    options.onProgress?.(0, total, 'leads');
    phase('plan');

    const conn = (await trx.client.acquireConnection()) as pg.PoolClient;

    // ---- leads ----------------------------------------------------------------------------
    const data = new Prng(seed, 3);
    const leadPhone: string[] = new Array(L);
    const leadKey: string[] = new Array(L);
    await copyRows(
      conn,
      'leads',
      ['id', 'unique_id', 'campaign_id', 'pool_id', 'status', 'closure', 'priority', 'phone_number', 'external_key', 'data', 'attempts',
        'upload_time', 'last_modified_time', 'first_processed_time', 'status_changed_time', 'owner_org_unit_id', 'uploaded_by_user_id',
        'last_modified_by_user_id', 'first_processed_by_user_id'],
      function* () {
        for (let l = 0; l < L; l++) {
          const c = campaigns[leadCampaign[l]];
          const lead = leadData(data, c.spec.definition, l, P);
          leadPhone[l] = lead.phone;
          leadKey[l] = lead.key;
          const n = callCount[l];
          const uploader = users[leadUploader[l]];
          let first = '\\N\t';
          let lastBy = String(uploader.id);
          if (n > 0) {
            const i0 = offset[l];
            first = `${ts(windowStartMs + Math.floor(sortKey[i0] / INDEX_BITS) * 1000 + callMsPart[i0])}\t`;
            let last = offset[l] + n - 1;
            if (callFlags[last] & FLAG_IN_PROGRESS && n > 1) last -= 1;
            lastBy = String(users[callUser[last]].id);
          }
          const firstBy = n > 0 ? String(users[callUser[offset[l]]].id) : '\\N';
          yield `${leadBase + l}\t${P}-l${pad(l)}\t${c.id}\t${c.pools[leadPool[l]].id}\t${leadStatus[l]}\t${leadClosure[l]}\t${data.chance(0.9) ? 0 : data.between(1, 5)}\t` +
            `${esc(lead.phone)}\t${esc(lead.key)}\t${esc(lead.json)}\t${leadAttempts[l]}\t${ts(leadUploadMs[l])}\t${ts(leadChangedMs[l])}\t${first}` +
            `${ts(leadClockMs[l])}\t${uploader.ownerUnitId}\t${uploader.id}\t${lastBy}\t${firstBy}\n`;
        }
      },
      progress('leads'),
    );
    counts.leads = L;
    phase('leads');

    // ---- calls, in start-time order (ids and unique ids then grow with time) ----------------
    sortKey.sort();
    const startMsOf = (key: number, i: number) => windowStartMs + Math.floor(key / INDEX_BITS) * 1000 + callMsPart[i];
    await copyRows(
      conn,
      'calls',
      ['id', 'unique_id', 'campaign_id', 'lead_id', 'unique_lead_id', 'user_id', 'ou0_id', 'ou1_id', 'ou2_id', 'ou3_id', 'ou4_id',
        'lead_phone_number', 'lead_external_key', 'end_cause', 'in_progress', 'connected', 'incoming', 'start_time', 'connect_time',
        'end_time', 'preview_ms', 'dialing_ms', 'conversation_ms', 'wrap_up_ms', 'lead_status', 'pre_call_lead_status', 'lead_closure',
        'campaign_type'],
      function* () {
        for (let seq = 0; seq < N; seq++) {
          const key = sortKey[seq];
          const i = key % INDEX_BITS;
          const l = callLead[i];
          const c = campaigns[leadCampaign[l]];
          const u = users[callUser[i]];
          const f = callFlags[i];
          const connected = (f & FLAG_CONNECTED) !== 0;
          const inProgress = (f & FLAG_IN_PROGRESS) !== 0;
          const start = startMsOf(key, i);
          const dialing = callDialing[i];
          const conversation = callConversation[i];
          const connectTime = connected ? ts(start + dialing) : '\\N';
          const endTime = inProgress ? '\\N' : ts(start + dialing + Math.max(conversation, 0));
          yield `${callBase + seq}\t${P}-k${pad(seq)}\t${c.id}\t${leadBase + l}\t${P}-l${pad(l)}\t${u.id}\t${u.chainCols}\t` +
            `${esc(leadPhone[l])}\t${esc(leadKey[l])}\t${callEndCause[i]}\t${inProgress ? 't' : 'f'}\t${connected ? 't' : 'f'}\t` +
            `${f & FLAG_INCOMING ? 't' : 'f'}\t${ts(start)}\t${connectTime}\t${endTime}\t${callPreview[i]}\t${dialing < 0 ? '\\N' : dialing}\t` +
            `${conversation < 0 ? '\\N' : conversation}\t${callWrapUp[i] < 0 ? '\\N' : callWrapUp[i]}\t` +
            `${callStatus[i] === NULL16 ? '\\N' : callStatus[i]}\t${callPre[i]}\t${callClosure[i] === NULL8 ? '\\N' : callClosure[i]}\t${c.typeNumber}\n`;
        }
      },
      progress('calls'),
    );
    counts.calls = N;
    phase('calls');

    // ---- recordings of the connected, finished calls -----------------------------------------
    const FULL = RecordingType.toNumber('FullRecording');
    const PARTIAL = RecordingType.toNumber('PartialRecording');
    await copyRows(
      conn,
      'recordings',
      ['call_id', 'start_time', 'end_time', 'recording_type', 'file_name'],
      function* () {
        for (let seq = 0; seq < N; seq++) {
          const key = sortKey[seq];
          const i = key % INDEX_BITS;
          const f = callFlags[i];
          if ((f & (FLAG_CONNECTED | FLAG_IN_PROGRESS)) !== FLAG_CONNECTED) continue;
          const connect = startMsOf(key, i) + callDialing[i];
          const end = connect + callConversation[i];
          const file = `${dayName[Math.min(days - 1, Math.floor((connect - windowStartMs) / 86_400_000))]}/${P}-k${pad(seq)}`;
          yield `${callBase + seq}\t${ts(connect)}\t${ts(end)}\t${FULL}\t${file}.wav\n`;
          if (f & FLAG_PARTIAL) {
            // A supervisor's partial recording of the middle of the conversation.
            const from = connect + Math.floor(callConversation[i] / 4);
            yield `${callBase + seq}\t${ts(from)}\t${ts(from + Math.floor(callConversation[i] / 2))}\t${PARTIAL}\t${file}-partial.wav\n`;
          }
        }
      },
      progress('recordings'),
    );
    counts.recordings = recordingTotal;
    phase('recordings');

    // ---- ready periods: the agent was ready for a while before the dialer handed a call -----
    const ready = new Prng(seed, 4);
    let readySeq = 0;
    await copyRows(
      conn,
      'ready_periods',
      ['unique_id', 'user_id', 'campaign_id', 'start_time', 'seconds', 'end_time'],
      function* () {
        for (let seq = 0; seq < N; seq++) {
          const key = sortKey[seq];
          const i = key % INDEX_BITS;
          if (!(callFlags[i] & FLAG_READY)) continue;
          const end = startMsOf(key, i);
          const seconds = ready.chance(0.8) ? ready.between(1, 90) : ready.between(91, 900);
          yield `${P}-rp${pad(readySeq++)}\t${users[callUser[i]].id}\t${campaigns[leadCampaign[callLead[i]]].id}\t${ts(end - seconds * 1000)}\t${seconds}\t${ts(end)}\n`;
        }
      },
      progress('ready periods'),
    );
    counts.readyPeriods = readyTotal;
    phase('readyPeriods');
  });
  phase('commit');

  await db.raw('ANALYZE org_units, users, lead_definitions, lead_definition_fields, campaigns, user_campaigns, lead_pools, leads, calls, recordings, ready_periods');
  phase('analyze');

  return { prefix, seed, windowStart: new Date(windowStartMs), windowEnd: new Date(windowEndMs), counts, timings };
}

function ascii(name: string): string {
  return name
    .toLowerCase()
    .replace(/æ/g, 'ae')
    .replace(/ø/g, 'oe')
    .replace(/å/g, 'aa')
    .normalize('NFD')
    .replace(/[^a-z]/g, '');
}

/** One lead's data (field name → string), its phone number and its external key. */
function leadData(r: Prng, definition: 0 | 1, l: number, P: string): { json: string; phone: string; key: string } {
  const phone = `+${r.pick(['45', '45', '45', '46', '47'])} ${r.between(20, 99)} ${r.between(10, 99)} ${r.between(10, 99)} ${r.between(10, 99)}`;
  const first = r.pick(FIRST_NAMES);
  const last = r.pick(LAST_NAMES);
  const data: Record<string, string> = {};
  let key: string;
  if (definition === 0) {
    const company = `${r.pick(COMPANY_WORDS)}${r.pick(COMPANY_WORDS).toLowerCase()} ${r.pick(COMPANY_SUFFIXES)}`;
    key = `CU-${P}-${l + 1}`;
    data.CompanyName = company;
    data.ContactName = `${first} ${last}`;
    data.Phone = phone;
    if (r.chance(0.5)) data.Mobile = `+45 ${r.between(20, 99)} ${r.between(10, 99)} ${r.between(10, 99)} ${r.between(10, 99)}`;
    if (r.chance(0.8)) data.Email = `${ascii(first)}.${ascii(last)}@${ascii(company.split(' ')[0])}.example.com`;
    data.Employees = String(r.between(1, 5000));
    if (r.chance(0.6)) data.CustomerSince = `${r.between(2005, 2025)}-${String(r.between(1, 12)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}`;
    data.CustomerNumber = key;
    if (r.chance(0.4)) data.LastOrderAt = `2026-${String(r.between(1, 9)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}T${String(r.between(8, 17)).padStart(2, '0')}:${String(r.between(0, 59)).padStart(2, '0')}:00`;
    data.Newsletter = r.chance(0.3) ? 'true' : 'false';
    if (r.chance(0.3)) data.PartnerNotes = `Referred by partner ${r.pick(LAST_NAMES)}`;
    data.CreditScore = String(r.between(300, 850));
  } else {
    key = `M${P}-${l + 1}`;
    const age = r.between(18, 90);
    data.FirstName = first;
    data.LastName = last;
    data.Phone = phone;
    if (r.chance(0.7)) data.Email = `${ascii(first)}.${ascii(last)}${r.between(1, 999)}@example.com`;
    if (r.chance(0.7)) data.BirthDate = `${2025 - age}-${String(r.between(1, 12)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}`;
    data.Age = String(age);
    data.City = r.pick(CITIES);
    data.MemberNo = key;
    if (r.chance(0.5)) data.PartnerSegment = r.pick(SEGMENTS);
    data.InternalRating = String(r.between(1, 10));
  }
  return { json: JSON.stringify(data), phone, key };
}
