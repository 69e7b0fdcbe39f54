import request from 'supertest';
import { basicAuth } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { lowersEveryLetter } from '../../src/data/caseMapping';
import { projectUniqueId } from '../../src/domain/liveEvents';

/**
 * Project names with capitals beyond ASCII (docs/operations.md, "Database"), and `?` in patterns:
 * project patterns are matched case-insensitively in SQL (`lower(project)`, and
 * lcm_glob_to_like for hooks) and in the application (lowerCase), so both must lower-case `Å`,
 * a final `Σ` and `İ` alike, and read `?` alike. An account whose pattern is written in another
 * case than the name sees the project's campaigns and leads, imports into it, finds it by
 * `Projects`, by name or by unique id, and hooks it.
 */
describe('projects named with capitals beyond ASCII', () => {
  const { t, w } = useTestWorld();
  const project = () => `Århus Øst ${w.id}`;
  const campaign = () => `AARHUS-${w.id}`;
  const auth = () => basicAuth(`aarhus-${w.id}`, 'pw');

  beforeAll(async () => {
    await t.load(
      { type: 'campaign', code: campaign(), name: 'Aarhus', project: project(), leadDefinition: w.leadDefinition, campaignType: 'Master' },
      {
        type: 'account',
        username: `aarhus-${w.id}`,
        password: 'pw',
        user: w.users.agent,
        // Written in lower case: the name has `Å` and `Ø`.
        projects: [`århus øst ${w.id.toLowerCase()}*`],
        rights: { Leads: ['Get', 'Post'], SimpleLeads: ['Get'], Campaigns: ['Get'] },
        entryAccess: 'Full',
      },
    );
  });

  it('when the database is asked, then its lower() maps every letter, as the application does', async () => {
    expect(await lowersEveryLetter(t.db)).toBe(true);
  });

  it('when the account lists campaigns and projects, then its project is there, with the unique id the application computes', async () => {
    const campaigns = (await request(t.app).get('/api/campaigns').set('Authorization', auth())).body as { code: string }[];
    expect(campaigns.map((c) => c.code)).toEqual([campaign()]);
    const projects = (await request(t.app).get('/api/projects').set('Authorization', auth())).body as { uniqueId: string; name: string }[];
    expect(projects).toEqual([expect.objectContaining({ name: project(), uniqueId: projectUniqueId(project()) })]);
  });

  it('when the account imports into the project and lists it by Projects in any case or by unique id, then the lead is stored and found', async () => {
    const res = await request(t.app)
      .post('/api/leads')
      .set('Authorization', auth())
      .send({ CampaignCode: campaign(), Data: { Name: 'Åse', Phone: '+45 86 12 34 56' } });
    expect(res.body).toMatchObject({ success: true });
    const uniqueId = (res.body as { uniqueId: string }).uniqueId;
    for (const projects of [project().toUpperCase(), project().toLowerCase(), 'ÅRHUS*', projectUniqueId(project())]) {
      const list = await request(t.app)
        .get(`/api/simpleleads?Projects=${encodeURIComponent(projects)}`)
        .set('Authorization', auth());
      expect({ projects, ids: (list.body as { uniqueId: string }[]).map((l) => l.uniqueId) }).toEqual({ projects, ids: [uniqueId] });
    }
    const one = await request(t.app).get(`/api/leads/${uniqueId}`).set('Authorization', auth());
    expect(one.status).toBe(200);
  });

  it.each([
    ['a final capital sigma', 'ΑΘΗΝΑΣ', 'ΑΘΗΝΑΣ'],
    ['a dotted capital I', 'İstanbul', 'İSTANBUL'],
  ])(
    'when a project name has %s, then an account whose pattern spells it reads and writes it, and Projects= finds it',
    async (_, name, pattern) => {
      const code = `${pattern === 'ΑΘΗΝΑΣ' ? 'GR' : 'TR'}-${w.id}`;
      const username = `${code.toLowerCase()}-user`;
      await t.load(
        { type: 'campaign', code, name, project: `${name} ${w.id}`, leadDefinition: w.leadDefinition, campaignType: 'Master' },
        {
          type: 'account',
          username,
          password: 'pw',
          user: w.users.agent,
          projects: [`${pattern} ${w.id}`],
          rights: { Leads: ['Get', 'Post'], SimpleLeads: ['Get'], Campaigns: ['Get'] },
          entryAccess: 'Full',
        },
      );
      const as = basicAuth(username, 'pw');
      const campaigns = (await request(t.app).get('/api/campaigns').set('Authorization', as)).body as { code: string }[];
      expect(campaigns.map((c) => c.code)).toEqual([code]);
      const res = await request(t.app)
        .post('/api/leads')
        .set('Authorization', as)
        .send({ CampaignCode: code, Data: { Name: name, Phone: '+45 86 12 34 57' } });
      expect(res.body).toMatchObject({ success: true });
      for (const projects of [`${name} ${w.id}`, `${pattern} ${w.id}`, projectUniqueId(`${name} ${w.id}`)]) {
        const list = await request(t.app)
          .get(`/api/simpleleads?Projects=${encodeURIComponent(projects)}`)
          .set('Authorization', w.accounts.full.auth);
        expect({ projects, n: (list.body as unknown[]).length }).toEqual({ projects, n: 1 });
      }
    },
  );

  it('when a pattern has `?`, then the account may hook a campaign of the project, and the hook gets the project’s events', async () => {
    const username = `q-${w.id}`;
    await t.load({
      type: 'account',
      username,
      password: 'pw',
      user: w.users.agent,
      projects: [`?etail-${w.id}`],
      rights: { Leads: ['Get', 'Post'], WebHooks: ['Get', 'Post'] },
      entryAccess: 'Full',
    });
    const as = basicAuth(username, 'pw');
    const hook = await request(t.app)
      .post('/api/hooks')
      .set('Authorization', as)
      .send({ name: 'q', url: 'https://crm.example.com/q', events: ['lead.created'], campaignCode: w.campaigns.retail });
    expect(hook.status).toBe(201);
    const imported = await request(t.app)
      .post('/api/leads')
      .set('Authorization', as)
      .send({ CampaignCode: w.campaigns.retail, Data: { Name: 'Q', Phone: '+45 86 12 34 58' } });
    expect(imported.body).toMatchObject({ success: true });
    const deliveries = await t
      .db('hook_deliveries as d')
      .join('hooks as h', 'h.id', 'd.hook_id')
      .where('h.unique_id', (hook.body as { uniqueId: string }).uniqueId)
      .count<{ count: string }[]>('d.id as count');
    expect(Number(deliveries[0]!.count)).toBe(1);
  });
});
