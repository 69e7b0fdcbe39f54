import iconv from 'iconv-lite';
import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * What real HTTP clients send that a strict reading would refuse (docs/decisions.md, Wire):
 * doubled slashes, a POST standing for PATCH, other names for CSV in an Accept, offsets
 * written `+0100` whose `+` arrived as a space (`*` as the only coding: tests/unit/compression.test.ts),
 * and query values percent-escaped in Latin-1 (`%C6R%D8` for `ÆRØ`: tests/unit/queryString.test.ts).
 */
describe('requests as real clients send them', () => {
  const { t, w } = useTestWorld();

  it('when the path has doubled slashes (a base URL ending in / joined with /calls), then it is the path with single ones', async () => {
    const res = await request(t.app).get('/api//myaccount').set('Authorization', w.accounts.full.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ username: w.accounts.full.username });
    const calls = await request(t.app)
      .get(`//api//calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT1H&Note=a//b`)
      .set('Authorization', w.accounts.full.auth);
    expect(calls.status).toBe(200);
  });

  it('when a POST names PATCH in X-HTTP-Method-Override (Java’s HttpURLConnection cannot send PATCH), then it is the PATCH', async () => {
    const imported = await request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Override', Telefon: '+45 12 34 56 78', Customer: uniq('C-') } });
    const id = (imported.body as { uniqueId: string }).uniqueId;
    for (const header of ['X-HTTP-Method-Override', 'X-HTTP-Method']) {
      const priority = header.length;
      const res = await request(t.app)
        .post(`/api/leads/${id}`)
        .set('Authorization', w.accounts.full.auth)
        .set(header, 'PATCH')
        .set('Content-Type', 'application/merge-patch+json')
        .send(JSON.stringify({ priority }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ uniqueId: id, priority });
    }
  });

  describe('override headers that name different methods', () => {
    const importLead = async () => {
      const imported = await request(t.app)
        .post('/api/leads')
        .set('Authorization', w.accounts.full.auth)
        .send({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Override', Telefon: '+45 12 34 56 78', Customer: uniq('C-') } });
      return (imported.body as { uniqueId: string }).uniqueId;
    };
    const post = (id: string, headers: Record<string, string>) => {
      const req = request(t.app).post(`/api/leads/${id}`).set('Authorization', w.accounts.full.auth);
      for (const [name, value] of Object.entries(headers)) req.set(name, value);
      return req.set('Content-Type', 'application/merge-patch+json').send(JSON.stringify({ priority: 9 }));
    };

    it('when X-HTTP-Method-Override says PATCH and X-HTTP-Method says DELETE, then 400 naming both, and nothing runs', async () => {
      const id = await importLead();
      const res = await post(id, { 'X-HTTP-Method-Override': 'PATCH', 'X-HTTP-Method': 'DELETE' });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({
        code: 'invalid_parameter',
        detail: 'X-HTTP-Method-Override names PATCH and X-HTTP-Method names DELETE: send one method to stand for the POST',
        errors: [
          { parameter: 'X-HTTP-Method-Override', message: 'names PATCH' },
          { parameter: 'X-HTTP-Method', message: 'names DELETE' },
        ],
      });
      const lead = await request(t.app).get(`/api/leads/${id}`).set('Authorization', w.accounts.full.auth);
      expect((lead.body as { priority: number }).priority).not.toBe(9);
    });

    it('when one header names two methods (sent twice), then 400 naming it', async () => {
      const res = await post(await importLead(), { 'X-Method-Override': 'PATCH, DELETE' });
      expect(res.status).toBe(400);
      expect((res.body as { errors: unknown[] }).errors).toEqual([{ parameter: 'X-Method-Override', message: 'names PATCH and DELETE' }]);
    });

    it('when the headers name one method (in any case), or one names no method at all, then it is that method', async () => {
      const agree = await post(await importLead(), {
        'X-HTTP-Method-Override': 'PATCH',
        'X-HTTP-Method': 'patch',
        'X-Method-Override': 'Nonsense',
      });
      expect(agree.status).toBe(200);
      expect((agree.body as { priority: number }).priority).toBe(9);
    });
  });

  it.each(['text/plain', 'application/csv', 'text/comma-separated-values', 'application/vnd.ms-excel', 'application/octet-stream'])(
    'when a CSV export is asked for with Accept: %s, then it answers its CSV',
    async (accept) => {
      const res = await request(t.app)
        .get(`/api/calls/csv?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=2026-05-06T08:00:00Z&TimeSpan=PT1H`)
        .set('Authorization', w.accounts.full.auth)
        .set('Accept', accept);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    },
  );

  it('when an offset is written +0100 or +01 and its + was not encoded, then it is read as +', async () => {
    for (const start of ['2026-05-06T10:00:00+0200', '2026-05-06T10:00:00+02']) {
      const res = await request(t.app)
        .get(`/api/calls?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=${start}&TimeSpan=PT1H`)
        .set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
    }
  });

  describe('query values percent-escaped in Latin-1 (classic ASP, VB6, PHP without UTF-8)', () => {
    const project = () => `ÆRØ ${w.id}`;
    const campaign = () => `ÆRØ-${w.id}`;
    const lead = () => `aero-${w.id}`;
    /** Percent-escapes of the text's windows-1252 bytes, as those clients send it. */
    const latin1 = (text: string) =>
      [...iconv.encode(text, 'windows-1252')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

    beforeAll(async () => {
      await t.load(
        { type: 'campaign', code: campaign(), name: 'Ærø', project: project(), leadDefinition: w.leadDefinition, campaignType: 'Master' },
        { type: 'lead', campaign: campaign(), uniqueId: lead(), data: { Name: 'Ærø', Phone: '+45 62 52 10 00' } },
      );
    });

    it('when Projects, Project or Campaigns name ÆRØ in Latin-1 escapes, then the lists find it as with UTF-8 escapes', async () => {
      expect(latin1('ÆRØ')).toBe('%C6%52%D8');
      for (const escape of [latin1, encodeURIComponent]) {
        const leads = await request(t.app)
          .get(`/api/simpleleads?Projects=${escape(project())}`)
          .set('Authorization', w.accounts.full.auth);
        const byCampaign = await request(t.app)
          .get(`/api/simpleleads?Campaigns=${escape(campaign())}`)
          .set('Authorization', w.accounts.full.auth);
        const campaigns = await request(t.app)
          .get(`/api/campaigns?Project=${escape(project())}`)
          .set('Authorization', w.accounts.full.auth);
        expect({
          leads: (leads.body as { uniqueId: string }[]).map((l) => l.uniqueId),
          byCampaign: (byCampaign.body as { uniqueId: string }[]).map((l) => l.uniqueId),
          campaigns: (campaigns.body as { code: string }[]).map((c) => c.code),
        }).toEqual({ leads: [lead()], byCampaign: [lead()], campaigns: [campaign()] });
      }
      const short = await request(t.app).get(`/api/campaigns?Project=%C6R%D8+${w.id}`).set('Authorization', w.accounts.full.auth);
      expect((short.body as { code: string }[]).map((c) => c.code)).toEqual([campaign()]);
    });

    it('when a bad value comes in Latin-1 escapes, then the 400 shows it as sent, not as U+FFFD', async () => {
      const res = await request(t.app).get('/api/simpleleads?Statuses=N%E6ste').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      expect(res.text).not.toContain('\uFFFD');
      expect((res.body as { errors: { parameter: string; message: string }[] }).errors[0]).toMatchObject({
        parameter: 'Statuses',
        message: expect.stringContaining('(got "Næste")') as string,
      });
    });

    it('when a path holds escapes that are not UTF-8, then it is still a 400', async () => {
      const res = await request(t.app).get('/api/campaigns/%C6R%D8').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
    });
  });
});
