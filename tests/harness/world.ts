import type { Knex } from 'knex';
import { EntryAccess, RESOURCE_TYPES, VERBS } from '../../src/domain/enums';
import type { Importer } from '../../src/ingest/importLead';
import type { CalendarEvent } from '../../src/domain/calendarEventSerializer';
import { projectScope } from '../../src/data/projectScope';
import type { TestApp } from './testApp';
import { basicAuth, uniq } from './testApp';

/**
 * A small, self-contained platform for one test file: an org tree, users, a lead definition,
 * campaigns in two projects and accounts. Every name carries a unique suffix, so worlds of
 * different files live side by side in the shared test database.
 */
export interface World {
  id: string;
  units: { root: string; sales: string; team: string };
  users: { agent: string; other: string };
  leadDefinition: string;
  projects: { b2b: string; retail: string };
  campaigns: { b2b: string; retail: string };
  accounts: {
    /** Every right, projects `*`, entry access Full. */
    full: { username: string; password: string; auth: string };
    /** Projects `B2B-<id>*` only, every right, entry access Partner. */
    b2b: { username: string; password: string; auth: string };
    /** No rights at all. */
    none: { username: string; password: string; auth: string };
  };
}

export const ALL_RIGHTS = Object.fromEntries(RESOURCE_TYPES.map((r) => [r, [...VERBS]]));

export async function createWorld(t: Pick<TestApp, 'load'>): Promise<World> {
  const id = uniq();
  const w: World = {
    id,
    units: { root: `Root ${id}`, sales: `Sales ${id}`, team: `TRYG Forsikring A/S ${id} æøå` },
    users: { agent: `agent-${id}@example.com`, other: `other-${id}` },
    leadDefinition: `Def ${id}`,
    projects: { b2b: `B2B-${id} Sales`, retail: `Retail-${id}` },
    campaigns: { b2b: `B2B-${id}`, retail: `RET-${id}` },
    accounts: {
      full: { username: `full-${id}`, password: 'full-pass', auth: '' },
      b2b: { username: `b2b-${id}`, password: 'b2b-pass', auth: '' },
      none: { username: `none-${id}`, password: 'none-pass', auth: '' },
    },
  };
  for (const a of Object.values(w.accounts)) a.auth = basicAuth(a.username, a.password);
  await t.load(
    { type: 'orgUnit', orgCode: w.units.root, name: 'Root' },
    { type: 'orgUnit', orgCode: w.units.sales, name: 'Sales', parent: w.units.root },
    { type: 'orgUnit', orgCode: w.units.team, name: 'Team Tryg', parent: w.units.sales },
    {
      type: 'leadDefinition',
      name: w.leadDefinition,
      fields: [
        { name: 'Name', type: 'text', required: true },
        { name: 'Phone', importName: 'Telefon', type: 'phone', required: true },
        { name: 'Email', type: 'email' },
        { name: 'Customer', type: 'text', externalKey: true },
        { name: 'Revenue', type: 'number', access: 'Partner' },
        { name: 'Secret', type: 'text', access: 'Full' },
      ],
    },
    {
      type: 'campaign',
      code: w.campaigns.b2b,
      name: 'B2B campaign',
      project: w.projects.b2b,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
    },
    {
      type: 'campaign',
      code: w.campaigns.retail,
      name: 'Retail campaign',
      project: w.projects.retail,
      leadDefinition: w.leadDefinition,
      campaignType: 'PredictiveDialer',
    },
    {
      type: 'user',
      orgCode: w.users.agent,
      username: `agent-${id}`,
      name: 'Agent Ærø',
      parent: w.units.team,
      campaigns: [w.campaigns.b2b, w.campaigns.retail],
    },
    { type: 'user', orgCode: w.users.other, username: `other-${id}`, name: 'Other Agent', parent: w.units.sales },
    {
      type: 'account',
      username: w.accounts.full.username,
      password: w.accounts.full.password,
      user: w.users.agent,
      projects: ['*'],
      rights: ALL_RIGHTS,
      entryAccess: 'Full',
    },
    {
      type: 'account',
      username: w.accounts.b2b.username,
      password: w.accounts.b2b.password,
      user: w.users.agent,
      projects: [`B2B-${id}*`],
      rights: ALL_RIGHTS,
      entryAccess: 'Partner',
    },
    {
      type: 'account',
      username: w.accounts.none.username,
      password: w.accounts.none.password,
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    },
  );
  return w;
}

/**
 * The World's full account as the use cases take it (the importer of importLead, the changer of
 * patchLead): its ids, every project (`*`, as its patterns say) and its entry access.
 */
export async function fullAccountActor(db: Knex, w: World): Promise<Importer> {
  const account = await db('accounts')
    .where({ username: w.accounts.full.username })
    .first<{ id: number; user_id: number; entry_access: number }>('id', 'user_id', 'entry_access');
  return {
    accountId: account.id,
    userId: account.user_id,
    scope: projectScope(['*']),
    entryAccess: EntryAccess.toName(account.entry_access),
  };
}

/** A calendar event under the World's calendar code, to write its hook events directly (recordCalendarEvent). */
export function worldCalendarEvent(w: World, title: string): CalendarEvent {
  return {
    uniqueId: uniq('ce-'),
    calendarCode: `cal-${w.id}`,
    leadUniqueId: uniq('lead-'),
    title,
    notes: '',
    start: new Date('2026-05-06T10:00:00Z'),
    end: new Date('2026-05-06T11:00:00Z'),
    source: 'test',
    externalId: '',
  };
}

/**
 * A campaign of the B2B project whose lead definition puts the lead's key fields above entry
 * access None: its phone field `Mobile` needs Full, its external-key field `Ref` Partner. The
 * records to load and the campaign's code.
 */
export function keyFieldsCampaign(w: World): { code: string; records: Record<string, unknown>[] } {
  const def = `Keys ${w.id}`;
  const code = `KEYS-${w.id}`;
  const records = [
    {
      type: 'leadDefinition',
      name: def,
      fields: [
        { name: 'Name', type: 'text' },
        { name: 'Mobile', type: 'phone', access: 'Full' },
        { name: 'Ref', type: 'text', externalKey: true, access: 'Partner' },
      ],
    },
    { type: 'campaign', code, name: 'Keys', project: w.projects.b2b, leadDefinition: def, campaignType: 'Master' },
  ];
  return { code, records };
}
