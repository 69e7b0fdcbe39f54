import type { Knex } from 'knex';
import { CampaignType, CampaignTypeName, EntryAccess, EntryAccessName, FieldType } from '../../domain/enums';
import type { CampaignLifecycleSettings } from '../../domain/lifecycle';
import { parseTimeSpan } from '../../domain/timespan';
import type { CallWindow } from './callWindow';
import type { Organization } from './organization';
import type { Prng } from './prng';
import type { Category } from './vocabulary';

/**
 * Lead definitions, campaigns, who works on which campaign, and the lead pools (one per upload
 * batch). Two lead definitions (business and consumer) with fields of every type, an external
 * key and fields behind Partner and Full entry access; eight campaigns in four projects.
 */

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

/** Which lead definition a campaign uses: 0 business (B2B_FIELDS), 1 consumer (CONSUMER_FIELDS). */
export type DefinitionKind = 0 | 1;

export interface CampaignSpec {
  name: string;
  project: string;
  category: Category;
  type: CampaignTypeName;
  definition: DefinitionKind;
  /** Share of the leads. */
  weight: number;
  maxAttempts: number | null;
  expireDays: number | null;
  privateExpireDays: number | null;
}

// Each campaign type twice; two campaigns have attempt caps, two have expiry limits.
const CAMPAIGNS: CampaignSpec[] = [
  {
    name: 'Enterprise outbound',
    project: 'B2B Sales',
    category: 'Sales',
    type: 'Master',
    definition: 0,
    weight: 3,
    maxAttempts: null,
    expireDays: null,
    privateExpireDays: null,
  },
  {
    name: 'SMB prospecting',
    project: 'B2B Sales',
    category: 'Sales',
    type: 'PowerDialer',
    definition: 0,
    weight: 3,
    maxAttempts: 6,
    expireDays: null,
    privateExpireDays: null,
  },
  {
    name: 'Support follow-up',
    project: 'B2B Support',
    category: 'Support',
    type: 'BasketDialer',
    definition: 0,
    weight: 2,
    maxAttempts: null,
    expireDays: 30,
    privateExpireDays: 21,
  },
  {
    name: 'Contract renewals',
    project: 'B2B Support',
    category: 'Support',
    type: 'Master',
    definition: 0,
    weight: 2,
    maxAttempts: null,
    expireDays: null,
    privateExpireDays: null,
  },
  {
    name: 'Retail winback',
    project: 'Retail',
    category: 'Retail',
    type: 'PredictiveDialer',
    definition: 1,
    weight: 3,
    maxAttempts: null,
    expireDays: null,
    privateExpireDays: null,
  },
  {
    name: 'Retail upsell',
    project: 'Retail',
    category: 'Retail',
    type: 'PowerDialer',
    definition: 1,
    weight: 3,
    maxAttempts: null,
    expireDays: 30,
    privateExpireDays: 21,
  },
  {
    name: 'Payment reminders',
    project: 'Collections',
    category: 'Retail',
    type: 'BasketDialer',
    definition: 1,
    weight: 2,
    maxAttempts: 6,
    expireDays: null,
    privateExpireDays: null,
  },
  {
    name: 'Debt collection',
    project: 'Collections',
    category: 'Retail',
    type: 'PredictiveDialer',
    definition: 1,
    weight: 2,
    maxAttempts: null,
    expireDays: null,
    privateExpireDays: null,
  },
];
const ABANDON_DAYS = 2;
const POOLS_PER_CAMPAIGN = 10;

export interface GenCampaign {
  spec: CampaignSpec;
  uid: string;
  code: string;
  id: number;
  typeNumber: number;
  /** Indexes (in the user list) of the callers working on the campaign. */
  agents: number[];
  /** Upload batches: the pool name, its day in the window and its id. */
  pools: { name: string; day: number; id: number }[];
}

export interface Campaigns {
  definitionCount: number;
  campaigns: GenCampaign[];
}

/** The lifecycle limits of a campaign, as the lead lifecycle (src/domain/lifecycle.ts) reads them. */
export function lifecycleSettings(spec: CampaignSpec): CampaignLifecycleSettings {
  return {
    maxAttempts: spec.maxAttempts,
    abandonAfter: parseTimeSpan(`P${ABANDON_DAYS}D`),
    expireAfter: spec.expireDays === null ? null : parseTimeSpan(`P${spec.expireDays}D`),
    privateExpireAfter: spec.privateExpireDays === null ? null : parseTimeSpan(`P${spec.privateExpireDays}D`),
  };
}

/** Users work on every campaign of their unit's business line; `poolDays` spreads the upload batches over the window. */
export async function insertCampaigns(
  trx: Knex.Transaction,
  P: string,
  { units, users }: Organization,
  window: CallWindow,
  poolDays: Prng,
): Promise<Campaigns> {
  const definitionIds: number[] = [];
  for (const [i, fields] of [B2B_FIELDS, CONSUMER_FIELDS].entries()) {
    const name = i === 0 ? `B2B prospect ${P}` : `Consumer ${P}`;
    const [def] = await trx('lead_definitions')
      .insert({ unique_id: `${P}-ld${i}`, name })
      .returning<{ id: number }[]>('id');
    definitionIds.push(def!.id);
    await trx('lead_definition_fields').insert(
      fields.map((f, sortOrder) => ({
        lead_definition_id: def!.id,
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
      .returning<{ id: number }[]>('id');
    campaigns.push({ spec, uid: `${P}-c${i}`, code, id: row!.id, typeNumber: CampaignType.toNumber(spec.type), agents: [], pools: [] });
  }

  const links: { user_id: number; campaign_id: number }[] = [];
  users.forEach((u, ui) => {
    const category = units[u.unit]!.category;
    campaigns.forEach((c) => {
      if (c.spec.category !== category) return;
      links.push({ user_id: u.id, campaign_id: c.id });
      if (u.caller) c.agents.push(ui);
    });
  });
  await trx('user_campaigns').insert(links);

  await insertPools(trx, campaigns, window, poolDays);
  return { definitionCount: definitionIds.length, campaigns };
}

/** Upload batches: one pool a batch, spread over the window (distinct dates per campaign). */
async function insertPools(trx: Knex.Transaction, campaigns: GenCampaign[], window: CallWindow, poolDays: Prng): Promise<void> {
  const { days, dayName, day8Sec, startMs } = window;
  const poolRows: { campaign_id: number; name: string; created_at: Date }[] = [];
  for (const c of campaigns) {
    const seen = new Set<number>();
    for (let b = 0; b < POOLS_PER_CAMPAIGN; b++) {
      const day = Math.min(days - 2, Math.floor(((b + poolDays.next()) * (days - 2)) / POOLS_PER_CAMPAIGN));
      if (seen.has(day)) continue;
      seen.add(day);
      c.pools.push({ name: `(auto) ${dayName[day]}`, day, id: 0 });
      poolRows.push({ campaign_id: c.id, name: `(auto) ${dayName[day]}`, created_at: new Date(startMs + (day8Sec[day]! - 3600) * 1000) });
    }
  }
  const pools = await trx('lead_pools').insert(poolRows).returning(['id', 'campaign_id', 'name']);
  const poolIds = new Map<string, number>(
    pools.map((p: { id: number; campaign_id: number; name: string }) => [`${p.campaign_id}|${p.name}`, p.id]),
  );
  for (const c of campaigns) for (const p of c.pools) p.id = poolIds.get(`${c.id}|${p.name}`)!;
}
