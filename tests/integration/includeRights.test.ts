import request from 'supertest';
import { basicAuth } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * `Include` and the Organization right (docs/decisions.md, Include engine): a call's campaign
 * and user and a lead's references come with the endpoint's own right; `parent`, `children`
 * and `users`, which walk the organisation tree, count only with Organization: Get and are
 * ignored otherwise, on every endpoint that takes `Include`.
 *
 * The World's tree: Root > Sales > Team. The agent works in Team, the other user in Sales.
 */

interface OrgUnit {
  orgCode: string;
  parent?: OrgUnit | null;
  children?: OrgUnit[];
  users?: User[];
}
interface User {
  orgCode: string;
  parent?: OrgUnit | null;
}
interface Call {
  uniqueId: string;
  campaign?: { code: string };
  user?: User;
  organizationalUnits: OrgUnit[];
}
interface Lead {
  uniqueId: string;
  campaign: { code: string; name?: string };
  ownerOrgUnit?: OrgUnit | { orgCode: string } | null;
  uploadedByUser?: User | null;
  lastModifiedByUser?: User | null;
  firstProcessedByUser?: User | null;
}

const TREE = ['parent', 'children', 'users'];
const CALL_INCLUDE = ['campaign', 'user', ...TREE].join(',');
const LEAD_INCLUDE = ['campaign', 'ownerOrgUnit', 'uploadedByUser', 'lastModifiedByUser', 'firstProcessedByUser', ...TREE].join(',');
const WINDOW = { StartTime: '2026-05-06T10:00:00', TimeSpan: 'PT1H' };

const { t, w } = useTestWorld();
let callId: string;
let leadId: string;
let searchName: string;
/** Calls, Leads and SimpleLeads: Get, without Organization. */
let withoutOrganization: string;
/** The same rights and Organization: Get. */
let withOrganization: string;

beforeAll(async () => {
  callId = `${w.id}-call`;
  leadId = `${w.id}-lead`;
  searchName = `tree ${w.id}`;
  const account = (username: string, rights: Record<string, string[]>) => ({
    type: 'account',
    username,
    password: 'pw',
    user: w.users.agent,
    projects: ['*'],
    rights,
    entryAccess: 'Full',
  });
  const reads = { Calls: ['Get'], Leads: ['Get'], SimpleLeads: ['Get'] };
  await t.load(
    {
      type: 'call',
      uniqueId: callId,
      campaign: w.campaigns.b2b,
      user: w.users.agent,
      uniqueLeadId: leadId,
      leadPhoneNumber: '+4512345678',
      startTime: '2026-05-06T10:15:00+02:00',
      endCause: 'NoResponse',
      inProgress: false,
      connected: false,
      incoming: false,
      previewDuration: 'PT5S',
    },
    {
      type: 'lead',
      uniqueId: leadId,
      campaign: w.campaigns.b2b,
      status: 'UserProcessed',
      closure: 'Success',
      lastModifiedTime: '2026-04-02T00:00:00',
      firstProcessedTime: '2026-04-01T09:00:00',
      ownerOrgUnit: w.units.team,
      uploadedByUser: w.users.other,
      lastModifiedByUser: w.users.agent,
      firstProcessedByUser: w.users.agent,
      data: { Name: 'Tree', Telefon: '+45 11 22 33 44' },
    },
    { type: 'savedSearch', user: w.users.agent, name: searchName, campaigns: [w.campaigns.b2b] },
    account(`noorg-${w.id}`, reads),
    account(`org-${w.id}`, { ...reads, Organization: ['Get'] }),
  );
  withoutOrganization = basicAuth(`noorg-${w.id}`, 'pw');
  withOrganization = basicAuth(`org-${w.id}`, 'pw');
});

const get = (path: string, query: Record<string, string>, auth: string, accept = 'application/json') =>
  request(t.app).get(path).query(query).set('Authorization', auth).set('Accept', accept);

/** The org codes the tree walk would add: the agent's call and the leads name Team, the agent and the other user only. */
const beyondOwnObjects = () => [w.units.root, w.units.sales];

/**
 * Every call endpoint that takes Include, asking for the World's agent or unit (this file's
 * call is the only one in the window): the path and query, made once the World exists.
 */
const callEndpoints: [string, () => [string, Record<string, string>]][] = [
  ['GET /calls', () => ['/api/calls', { OrgCode: w.users.agent }]],
  ['GET /users/{OrgCode}/calls', () => [`/api/users/${encodeURIComponent(w.users.agent)}/calls`, {}]],
  ['GET /organizationalunits/{OrgCode}/calls', () => [`/api/organizationalunits/${encodeURIComponent(w.units.team)}/calls`, {}]],
];

describe('calls', () => {
  it.each(callEndpoints)(
    '%s: when an account without Organization: Get includes parent, children and users, then the call has its campaign, its user and a flat chain only',
    async (_name, endpoint) => {
      const [path, query] = endpoint();
      const res = await get(path, { ...query, ...WINDOW, Include: CALL_INCLUDE }, withoutOrganization);
      expect(res.status).toBe(200);
      const [call] = (res.body as Call[]).filter((c) => c.uniqueId === callId);
      expect(call!.campaign!.code).toBe(w.campaigns.b2b);
      expect(call!.user!.orgCode).toBe(w.users.agent);
      expect(call!.user).not.toHaveProperty('parent');
      expect(call!.organizationalUnits.map((u) => u.orgCode)).toEqual([w.units.root, w.units.sales, w.units.team]);
      for (const unit of call!.organizationalUnits) for (const name of TREE) expect(unit).not.toHaveProperty(name);
      expect(res.text).not.toContain(w.users.other);
    },
  );

  it.each(callEndpoints)(
    '%s: when an account with Organization: Get includes parent, children and users, then the chain is expanded',
    async (_name, endpoint) => {
      const [path, query] = endpoint();
      const res = await get(path, { ...query, ...WINDOW, Include: CALL_INCLUDE }, withOrganization);
      expect(res.status).toBe(200);
      const [call] = (res.body as Call[]).filter((c) => c.uniqueId === callId);
      const [root, sales, team] = call!.organizationalUnits;
      expect(root!.parent).toBeNull();
      expect(sales!.users!.map((u) => u.orgCode)).toEqual([w.users.other]);
      expect(team).toHaveProperty('children', []);
      expect(call!.user!.orgCode).toBe(w.users.agent);
    },
  );
});

describe('leads', () => {
  /** Every lead read that takes Include, answering this file's lead. */
  const leadReads: [string, (auth: string) => Promise<Lead>][] = [
    [
      'GET /simpleleads',
      async (auth) => {
        const res = await get('/api/simpleleads', { UniqueId: leadId, Include: LEAD_INCLUDE }, auth);
        expect(res.status).toBe(200);
        return (res.body as Lead[])[0]!;
      },
    ],
    [
      'GET /leads (saved search)',
      async (auth) => {
        const res = await get('/api/leads', { searchName, modifiedFrom: '2026-01-01', Include: LEAD_INCLUDE }, auth);
        expect(res.status).toBe(200);
        return (res.body as Lead[]).find((l) => l.uniqueId === leadId)!;
      },
    ],
    [
      'GET /leads/{UniqueId}',
      async (auth) => {
        const res = await get(`/api/leads/${encodeURIComponent(leadId)}`, { Include: LEAD_INCLUDE }, auth);
        expect(res.status).toBe(200);
        return res.body as Lead;
      },
    ],
  ];

  it.each(leadReads)(
    '%s: when an account without Organization: Get includes parent, children and users, then only the references are expanded',
    async (_name, read) => {
      const lead = await read(withoutOrganization);
      expect(lead.campaign.name).toBe('B2B campaign');
      expect(lead.ownerOrgUnit).toMatchObject({ orgCode: w.units.team });
      expect(lead.uploadedByUser).toMatchObject({ orgCode: w.users.other });
      expect(lead.lastModifiedByUser).toMatchObject({ orgCode: w.users.agent });
      for (const name of TREE) {
        expect(lead.ownerOrgUnit).not.toHaveProperty(name);
        expect(lead.uploadedByUser).not.toHaveProperty(name);
        expect(lead.lastModifiedByUser).not.toHaveProperty(name);
      }
      const text = JSON.stringify(lead);
      for (const code of beyondOwnObjects()) expect(text).not.toContain(code);
    },
  );

  it.each(leadReads)(
    '%s: when an account with Organization: Get includes parent, children and users, then the tree is walked from the references',
    async (_name, read) => {
      const lead = await read(withOrganization);
      const owner = lead.ownerOrgUnit as OrgUnit;
      expect(owner.parent!.orgCode).toBe(w.units.sales);
      expect(owner.parent!.parent!.orgCode).toBe(w.units.root);
      // The agent and the other user are references of this lead already: not repeated below.
      expect(owner.users).toEqual([]);
      expect(owner.parent!.users).toEqual([]);
    },
  );

  it('GET /leads/{UniqueId} as HTML: when an account without Organization: Get includes the tree, then the page names no unit beyond the references', async () => {
    const path = `/api/leads/${encodeURIComponent(leadId)}`;
    const without = await get(path, { Include: LEAD_INCLUDE }, withoutOrganization, 'text/html');
    expect(without.status).toBe(200);
    expect(without.headers['content-type']).toMatch(/^text\/html/);
    for (const code of beyondOwnObjects()) expect(without.text).not.toContain(code);
    const withRight = await get(path, { Include: LEAD_INCLUDE }, withOrganization, 'text/html');
    for (const code of beyondOwnObjects()) expect(withRight.text).toContain(code);
  });
});

describe('organisation reads', () => {
  it('when an account without Organization: Get asks for users or org units with Include, then 403', async () => {
    expect((await get('/api/users', { Include: 'parent' }, withoutOrganization)).status).toBe(403);
    expect((await get('/api/orgunits', { Include: 'users' }, withoutOrganization)).status).toBe(403);
  });

  it('when an account with Organization: Get includes children and users of a unit, then they come', async () => {
    const res = await get(`/api/orgunits/${encodeURIComponent(w.units.sales)}`, { Include: 'children,users' }, withOrganization);
    expect(res.status).toBe(200);
    const sales = res.body as OrgUnit;
    expect(sales.children!.map((u) => u.orgCode)).toEqual([w.units.team]);
    expect(sales.users!.map((u) => u.orgCode)).toEqual([w.users.other]);
  });
});
