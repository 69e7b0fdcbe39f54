import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * GET /api/projects as objects (`uniqueId`, `name`, `active`) within the account's project
 * rights, and a project's uniqueId given back wherever a project pattern is accepted: it selects
 * exactly that project, patterns keep their meaning, and an id-shaped value naming no project
 * selects nothing (docs/decisions.md, Projects).
 */

interface Project {
  uniqueId: string;
  name: string;
  active: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('project unique ids', () => {
  const { t, w } = useTestWorld();
  /** Campaigns beside the world's: one in the B2B project spelled in upper case, one inactive, one in a project named like an id. */
  const extra = { b2bUpper: '', archive: '', idNamed: '' };
  const projects = { archive: '', idNamed: '' };
  const lead = (name: string) => `${w.id}-${name}`;
  const LEADS = ['b2b', 'b2bUpper', 'retail', 'archive', 'idNamed'];
  const search = () => `ids ${w.id}`;

  beforeAll(async () => {
    extra.b2bUpper = `B2BU-${w.id}`;
    extra.archive = `ARC-${w.id}`;
    extra.idNamed = `IDN-${w.id}`;
    projects.archive = `B2B-${w.id} Archive`;
    // A project whose name has the shape of a unique id: the name still matches as a pattern.
    projects.idNamed = randomUUID().toUpperCase();
    const campaign = (code: string, project: string, active = true) => ({
      type: 'campaign',
      code,
      name: code,
      project,
      leadDefinition: w.leadDefinition,
      campaignType: 'PowerDialer',
      active,
    });
    const leadIn = (name: string, campaignCode: string) => ({
      type: 'lead',
      uniqueId: lead(name),
      campaign: campaignCode,
      status: 'New',
      lastModifiedTime: '2026-05-01T10:00:00',
      data: { Name: `Lead ${name}`, Telefon: '+45 11 22 33 44' },
    });
    await t.load(
      // Upper case where it moves the name in no collation's order among this world's projects.
      campaign(extra.b2bUpper, w.projects.b2b.replace('Sales', 'SALES')),
      campaign(extra.archive, projects.archive, false),
      campaign(extra.idNamed, projects.idNamed),
      leadIn('b2b', w.campaigns.b2b),
      leadIn('b2bUpper', extra.b2bUpper),
      leadIn('retail', w.campaigns.retail),
      leadIn('archive', extra.archive),
      leadIn('idNamed', extra.idNamed),
      { type: 'savedSearch', user: w.users.agent, name: search(), campaigns: [w.campaigns.retail] },
      { type: 'calendar', code: `cal-b2b-${w.id}`, name: 'B2B', project: w.projects.b2b },
      { type: 'calendar', code: `cal-retail-${w.id}`, name: 'Retail', project: w.projects.retail },
      ...['b2b', 'retail'].map((k) => ({
        type: 'calendarEvent',
        uniqueId: `${w.id}-event-${k}`,
        calendarCode: `cal-${k}-${w.id}`,
        leadUniqueId: lead(k),
        title: k,
        notes: '',
        start: '2031-03-01T10:00:00',
        end: '2031-03-01T11:00:00',
        source: 'test',
        externalId: k,
      })),
    );
  });

  const get = (path: string, query: Record<string, string> = {}, auth = w.accounts.full.auth) =>
    request(t.app).get(path).query(query).set('Authorization', auth);

  /** This world's projects, as the full account sees them, by name. */
  async function worldProjects(): Promise<Map<string, Project>> {
    const res = await get('/api/projects');
    expect(res.status).toBe(200);
    const mine = (res.body as Project[]).filter((p) => p.name.toLowerCase().includes(w.id.toLowerCase()) || p.name === projects.idNamed);
    return new Map(mine.map((p) => [p.name.toLowerCase(), p]));
  }
  const idOf = async (name: string) => (await worldProjects()).get(name.toLowerCase())!.uniqueId;

  /** The world's lead ids, so other files' leads in the shared database never count. */
  const ours = () => `UniqueId=${LEADS.map(lead).join(',')}`;
  const simpleLeads = async (projectsParam: string, auth = w.accounts.full.auth) => {
    const res = await request(t.app)
      .get(`/api/simpleleads?Projects=${encodeURIComponent(projectsParam)}&${ours()}`)
      .set('Authorization', auth);
    expect(res.status).toBe(200);
    return (res.body as { uniqueId: string }[]).map((l) => l.uniqueId).sort();
  };

  describe('GET /api/projects', () => {
    it('when projects are listed, then each is an object with a uniqueId, its name and whether it is active, sorted by name', async () => {
      const res = await get('/api/projects');
      expect(res.status).toBe(200);
      const body = res.body as Project[];
      for (const p of body) {
        expect(Object.keys(p)).toEqual(['uniqueId', 'name', 'active']);
        expect(p.uniqueId).toMatch(UUID);
      }
      const names = body.map((p) => p.name);
      const mine = await worldProjects();
      const ordered = [projects.archive, w.projects.b2b, w.projects.retail].map((n) => names.indexOf(mine.get(n.toLowerCase())!.name));
      expect(ordered.every((i) => i >= 0)).toBe(true);
      expect([...ordered].sort((a, b) => a - b)).toEqual(ordered);
    });

    it('when two campaigns spell a project in different case, then it is one project; it is active when one of its campaigns is', async () => {
      const mine = await worldProjects();
      expect([...mine.keys()].filter((n) => n === w.projects.b2b.toLowerCase())).toHaveLength(1);
      // The name is one of the spellings (the first in the database's collation).
      expect([w.projects.b2b, w.projects.b2b.replace('Sales', 'SALES')]).toContain(mine.get(w.projects.b2b.toLowerCase())!.name);
      expect(mine.get(w.projects.b2b.toLowerCase())!.active).toBe(true);
      expect(mine.get(projects.archive.toLowerCase())!.active).toBe(false);
    });

    it('when the account is limited to B2B projects, then it sees exactly those, with the same ids', async () => {
      const mine = await worldProjects();
      const res = await get('/api/projects', {}, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([mine.get(projects.archive.toLowerCase()), mine.get(w.projects.b2b.toLowerCase())]);
    });

    it('when the account lacks the Campaigns right, then it is a 403', async () => {
      expect((await get('/api/projects', {}, w.accounts.none.auth)).status).toBe(403);
    });
  });

  describe('a uniqueId given back as a project pattern', () => {
    it('when simpleleads gets Projects=<uniqueId>, then exactly the leads of that project come, whatever the case of the id or the name', async () => {
      const b2b = await idOf(w.projects.b2b);
      expect(await simpleLeads(b2b)).toEqual([lead('b2b'), lead('b2bUpper')].sort());
      expect(await simpleLeads(b2b.toUpperCase())).toEqual([lead('b2b'), lead('b2bUpper')].sort());
      expect(await simpleLeads(await idOf(w.projects.retail))).toEqual([lead('retail')]);
    });

    it('when ids and patterns are mixed, then the leads of either come', async () => {
      const retail = await idOf(w.projects.retail);
      expect(await simpleLeads(`${retail},${projects.archive}`)).toEqual([lead('archive'), lead('retail')].sort());
    });

    it('when the id is of a project outside the account’s rights, then nothing comes', async () => {
      expect(await simpleLeads(await idOf(w.projects.retail), w.accounts.b2b.auth)).toEqual([]);
    });

    it('when an id-shaped value names no project, then it matches nothing; a project named like an id still matches by name', async () => {
      expect(await simpleLeads(randomUUID())).toEqual([]);
      expect(await simpleLeads(projects.idNamed.toLowerCase())).toEqual([lead('idNamed')]);
      expect(await simpleLeads(await idOf(projects.idNamed))).toEqual([lead('idNamed')]);
    });

    it('when patterns are given, then they match as before', async () => {
      expect(await simpleLeads(`B2B-${w.id}*`)).toEqual([lead('archive'), lead('b2b'), lead('b2bUpper')].sort());
      expect(await simpleLeads('*')).toEqual(LEADS.map(lead).sort());
    });

    it('when rawleads gets Projects=<uniqueId>, then only the rows of that project’s leads come', async () => {
      const res = await request(t.app)
        .get(`/api/rawleads?Projects=${await idOf(w.projects.retail)}&${ours()}`)
        .set('Authorization', w.accounts.full.auth)
        .buffer(true);
      expect(res.status).toBe(200);
      const leadIds = new Set(
        res.text
          .trim()
          .split('\r\n')
          .slice(1)
          .map((row) => row.split(';')[0]),
      );
      expect([...leadIds]).toEqual([lead('retail')]);
    });

    it('when calendar events get Project=<uniqueId>, then only the events of that project’s calendars come', async () => {
      const res = await get('/api/calendars/events', { FromDate: '2031-03-01', ToDate: '2031-03-02', Project: await idOf(w.projects.b2b) });
      expect(res.status).toBe(200);
      expect((res.body as { uniqueId: string }[]).map((e) => e.uniqueId)).toEqual([`${w.id}-event-b2b`]);
    });

    it('when a saved search gets project=<uniqueId>, then it runs over that project instead of its campaigns', async () => {
      const res = await get('/api/leads', { searchName: search(), modifiedFrom: '2026-04-01', project: await idOf(projects.archive) });
      expect(res.status).toBe(200);
      expect((res.body as { uniqueId: string }[]).map((l) => l.uniqueId)).toEqual([lead('archive')]);
    });
  });
});
