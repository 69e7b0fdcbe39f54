import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';

interface LeadDefinition {
  uniqueId: string;
  name: string;
  fields: { name: string }[];
}

interface Campaign {
  uniqueId: string;
  code: string;
  active: boolean;
  leadDefinition: LeadDefinition;
}

/**
 * Lead definitions and single campaigns: what an account sees follows its project rights (which
 * definitions, which campaigns) and its entry access (which fields).
 */
describe('lead definitions and campaigns', () => {
  const { t, w } = useTestWorld();
  let definitionId: string;
  let retailOnly: { name: string; uniqueId: string };
  let retailCampaign: string;
  let pausedCampaign: string;

  beforeAll(async () => {
    definitionId = (await t
      .db<{ name: string; unique_id: string }>('lead_definitions')
      .where({ name: w.leadDefinition })
      .first('unique_id'))!.unique_id;
    retailOnly = { name: `Retail only ${w.id}`, uniqueId: `ld-retail-${w.id}` };
    retailCampaign = `RET2-${w.id}`;
    pausedCampaign = `PAUSED-${w.id}`;
    await t.load(
      { type: 'leadDefinition', name: retailOnly.name, uniqueId: retailOnly.uniqueId, fields: [{ name: 'Phone', type: 'phone' }] },
      {
        type: 'campaign',
        code: retailCampaign,
        name: 'Retail 2',
        project: w.projects.retail,
        leadDefinition: retailOnly.name,
        campaignType: 'Master',
      },
      {
        type: 'campaign',
        code: pausedCampaign,
        name: 'Paused',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'Master',
        active: false,
      },
    );
  });

  const get = (path: string, auth = w.accounts.full.auth) => request(t.app).get(path).set('Authorization', auth);
  const fieldNames = (d: { fields: { name: string }[] }) => d.fields.map((f) => f.name);

  describe('GET /leaddefinitions', () => {
    it('when the Full account lists them, then the world’s definition has every field in sort order with its settings', async () => {
      const res = await get('/api/leaddefinitions');
      expect(res.status).toBe(200);
      const def = (res.body as LeadDefinition[]).find((d) => d.uniqueId === definitionId)!;
      expect(fieldNames(def)).toEqual(['Name', 'Phone', 'Email', 'Customer', 'Revenue', 'Secret']);
      expect(def.name).toBe(w.leadDefinition);
      expect(def.fields[1]).toEqual({
        name: 'Phone',
        importName: 'Telefon',
        type: 'phone',
        required: true,
        sortOrder: 1,
        editable: true,
        access: 'None',
        externalKey: false,
      });
      expect(def.fields[3]).toMatchObject({ name: 'Customer', importName: null, externalKey: true, required: false });
      expect(def.fields[5]).toMatchObject({ name: 'Secret', access: 'Full' });
    });

    it('when the Partner account of the B2B project lists them, then the Full field is left out and a definition used only in Retail is absent', async () => {
      const res = await get('/api/leaddefinitions', w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      const definitions = res.body as LeadDefinition[];
      const ids = definitions.map((d) => d.uniqueId);
      expect(ids).toContain(definitionId);
      expect(ids).not.toContain(retailOnly.uniqueId);
      const def = definitions.find((d) => d.uniqueId === definitionId)!;
      expect(fieldNames(def)).toEqual(['Name', 'Phone', 'Email', 'Customer', 'Revenue']);
    });

    it('when one definition is asked for, then it answers it; unknown or outside the account’s projects is a 404', async () => {
      const one = await get(`/api/leaddefinitions/${definitionId}`, w.accounts.b2b.auth);
      expect(one.status).toBe(200);
      expect(fieldNames(one.body as LeadDefinition)).toEqual(['Name', 'Phone', 'Email', 'Customer', 'Revenue']);
      const foreign = await get(`/api/leaddefinitions/${retailOnly.uniqueId}`, w.accounts.b2b.auth);
      expect(foreign.status).toBe(404);
      expect(foreign.headers['content-type']).toMatch(/application\/problem\+json/);
      expect((foreign.body as { code: string }).code).toBe('not_found');
      expect((await get(`/api/leaddefinitions/${retailOnly.uniqueId}`)).status).toBe(200);
      expect((await get('/api/leaddefinitions/no-such-definition')).status).toBe(404);
    });

    it('when the account lacks the LeadDefinitions right, then both are a 403', async () => {
      expect((await get('/api/leaddefinitions', w.accounts.none.auth)).status).toBe(403);
      expect((await get(`/api/leaddefinitions/${definitionId}`, w.accounts.none.auth)).status).toBe(403);
    });
  });

  describe('GET /campaigns/{Code}', () => {
    it('when a visible campaign is asked for by code or unique id, then it answers it with active', async () => {
      const res = await get(`/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}`, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        uniqueId: expect.any(String) as jest.AsymmetricMatcher,
        name: 'B2B campaign',
        code: w.campaigns.b2b,
        project: w.projects.b2b,
        leadDefinitionUniqueId: definitionId,
        active: true,
        duplicateCheck: 'None',
        duplicateKey: 'Phone',
        duplicateWindow: null,
        onDuplicate: 'Reject',
      });
      const byId = await get(`/api/campaigns/${(res.body as Campaign).uniqueId}`, w.accounts.b2b.auth);
      expect(byId.body).toEqual(res.body);
    });

    it('when Include=leadDefinition is asked, then the definition is expanded within the account’s entry access', async () => {
      const res = await get(`/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}?Include=leadDefinition`, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      const campaign = res.body as Campaign;
      expect(campaign.leadDefinition.uniqueId).toBe(definitionId);
      expect(fieldNames(campaign.leadDefinition)).toEqual(['Name', 'Phone', 'Email', 'Customer', 'Revenue']);
      const full = await get(`/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}?include=LEADDEFINITION`);
      expect(fieldNames((full.body as Campaign).leadDefinition)).toContain('Secret');
    });

    it('when a campaign was loaded with active: false, then it says so here and in the list', async () => {
      const one = await get(`/api/campaigns/${encodeURIComponent(pausedCampaign)}`);
      expect((one.body as Campaign).active).toBe(false);
      const list = await get('/api/campaigns');
      const campaigns = list.body as Campaign[];
      const entry = campaigns.find((c) => c.code === pausedCampaign);
      expect(entry).toMatchObject({ code: pausedCampaign, active: false });
      expect(campaigns.find((c) => c.code === w.campaigns.b2b)!.active).toBe(true);
    });

    it('when a campaign is outside the account’s projects or unknown, then it is a 404', async () => {
      expect((await get(`/api/campaigns/${encodeURIComponent(retailCampaign)}`, w.accounts.b2b.auth)).status).toBe(404);
      expect((await get(`/api/campaigns/${encodeURIComponent(w.campaigns.retail)}`, w.accounts.b2b.auth)).status).toBe(404);
      expect((await get('/api/campaigns/NO-SUCH-CAMPAIGN')).status).toBe(404);
      expect((await get(`/api/campaigns/${encodeURIComponent(w.campaigns.b2b)}`, w.accounts.none.auth)).status).toBe(403);
    });
  });
});
