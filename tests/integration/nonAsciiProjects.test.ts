import request from 'supertest';
import { basicAuth } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { lowersEveryLetter } from '../../src/data/caseMapping';
import { projectUniqueId } from '../../src/domain/liveEvents';

/**
 * Project names with capitals beyond ASCII (docs/operations.md, "Database"): project patterns
 * are matched case-insensitively in SQL (`lower(project)`) and in the application
 * (`toLowerCase()`), so both must lower-case `Å` alike. An account whose pattern is written in
 * another case than the name sees the project's campaigns and leads, imports into it, and
 * finds it by `Projects`, by name or by unique id.
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
});
