import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { main } from '../../src/app/main';
import { addDoNotCallNumbers, removeDoNotCallNumber } from '../../src/data/doNotCallRepository';
import type { ProblemFieldError } from '../../src/http/problem';

const run = promisify(execFile);
const LCM = path.resolve(__dirname, '../../bin/lcm.js');

/**
 * Numbers no other test uses (other files share the database, and an entry for every project
 * reaches their imports): Faroese six-digit numbers and Danish ones starting with 1, drawn at random.
 */
const digits = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 10)).join('');
const faroese = () => `+298 ${digits(6)}`;
const danish = () => `1${digits(7)}`;
const e164 = (n: string) => (n.startsWith('+') ? '+' + n.replace(/\D/g, '') : `+45${n}`);

/** The answer to POST /leads. */
interface ImportAnswer {
  success: boolean;
  uniqueId: string;
  status?: string;
}
const importedOf = (res: request.Response) => res.body as ImportAnswer;
const errorsOf = (res: request.Response) => (res.body as { errors: ProblemFieldError[] }).errors;
const anyString = expect.any(String) as jest.AsymmetricMatcher;

describe('do-not-call list', () => {
  const { t, w } = useTestWorld();

  const auth = () => w.accounts.full.auth;
  const post = (body: unknown, authorization = auth()) =>
    request(t.app)
      .post('/api/donotcallnumbers')
      .set('Authorization', authorization)
      .send(body as object);
  const importLead = (campaign: string, phone: string, authorization = auth()) =>
    request(t.app)
      .post('/api/leads')
      .set('Authorization', authorization)
      .send({ CampaignCode: campaign, Data: { Name: 'Nanna Dahl', Telefon: phone, Customer: uniq('C-') } });
  const statusOf = async (uniqueId: string) => {
    const row = await t.db<{ unique_id: string; status: number }>('leads').where({ unique_id: uniqueId }).first('status');
    return row?.status;
  };
  const loadLead = async (campaign: string, phone: string, status?: string) => {
    const uniqueId = uniq('dnc-lead-');
    await t.load({ type: 'lead', campaign, uniqueId, data: { Name: 'Loaded', Phone: phone }, ...(status ? { status } : {}) });
    return uniqueId;
  };

  describe('listing a number', () => {
    it('when a number is listed without a project, then open leads with it in any form move to DoNotCall and closed ones keep their status', async () => {
      const national = danish();
      const open = await loadLead(
        w.campaigns.b2b,
        `+45 ${national.slice(0, 2)} ${national.slice(2, 4)} ${national.slice(4, 6)} ${national.slice(6)}`,
      );
      const openNational = await loadLead(w.campaigns.retail, national);
      const redial = await loadLead(w.campaigns.b2b, `0045${national}`, 'RedialManualCommon');
      const closed = await loadLead(w.campaigns.b2b, national, 'UserProcessed');
      const other = await loadLead(w.campaigns.b2b, danish());

      const res = await post({ phoneNumber: `(+45) ${national}`, note: 'asked by phone' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        phoneNumber: e164(national),
        note: 'asked by phone',
        createdTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/) as jest.AsymmetricMatcher,
        modifiedTime: anyString,
        movedLeads: 3,
      });
      expect(await statusOf(open)).toBe(700);
      expect(await statusOf(openNational)).toBe(700);
      expect(await statusOf(redial)).toBe(700);
      expect(await statusOf(closed)).toBe(200);
      expect(await statusOf(other)).toBe(0);
      const lead = await request(t.app).get(`/api/leads/${open}`).set('Authorization', auth());
      expect((lead.body as { status: string }).status).toBe('DoNotCall');
    });

    it('when the B2B account lists a number without a project, then only leads of its projects move', async () => {
      const number = faroese();
      const b2b = await loadLead(w.campaigns.b2b, number);
      const retail = await loadLead(w.campaigns.retail, number);
      const res = await post({ PhoneNumber: number }, w.accounts.b2b.auth);
      expect(res.status).toBe(200);
      expect((res.body as { movedLeads: number }).movedLeads).toBe(1);
      expect(await statusOf(b2b)).toBe(700);
      expect(await statusOf(retail)).toBe(0);
    });

    it("when a number is listed for one project , then only that project's leads move and imports elsewhere stay New", async () => {
      const [a, b] = [faroese(), faroese()];
      const leads = await Promise.all([
        loadLead(w.campaigns.b2b, a),
        loadLead(w.campaigns.retail, a),
        loadLead(w.campaigns.b2b, b),
        loadLead(w.campaigns.retail, b),
      ]);
      const res = await post([
        { phoneNumber: a, project: w.projects.b2b.toUpperCase() },
        { phoneNumber: b, project: w.projects.retail },
      ]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([
        expect.objectContaining({ phoneNumber: e164(a), project: w.projects.b2b, projectUniqueId: anyString, movedLeads: 1 }),
        expect.objectContaining({ phoneNumber: e164(b), project: w.projects.retail, movedLeads: 1 }),
      ]);
      expect(await Promise.all(leads.map(statusOf))).toEqual([700, 0, 0, 700]);

      const inB2b = await importLead(w.campaigns.b2b, a);
      const inRetail = await importLead(w.campaigns.retail, a);
      expect(inB2b.body).toMatchObject({ success: true, status: 'DoNotCall' });
      expect(inRetail.body).toEqual({ success: true, uniqueId: anyString, pool: anyString });
      expect(await statusOf(importedOf(inB2b).uniqueId)).toBe(700);
      expect(await statusOf(importedOf(inRetail).uniqueId)).toBe(0);
    });

    it('when the same number is listed again, then the entry is updated, not doubled', async () => {
      const number = faroese();
      await post({ phoneNumber: number, note: 'first' });
      const again = await post({ phoneNumber: number, note: 'second' });
      expect(again.status).toBe(200);
      expect(
        await t
          .db('do_not_call_numbers')
          .where({ phone_number: e164(number) })
          .select('note'),
      ).toEqual([{ note: 'second' }]);
    });
  });

  describe('imports of listed numbers', () => {
    it('when a listed number is imported in another notation, then the lead arrives as DoNotCall and the answer says so', async () => {
      const national = danish();
      await post({ phoneNumber: `+45${national}` });
      const res = await importLead(w.campaigns.retail, `${national.slice(0, 4)} ${national.slice(4)}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, uniqueId: anyString, pool: anyString, status: 'DoNotCall' });
      expect(await statusOf(importedOf(res).uniqueId)).toBe(700);
    });

    it('when a number is imported while a listing of it is not yet committed, then the import waits for it and arrives listed', async () => {
      const national = danish();
      const listing = await t.db.transaction();
      let answered = false;
      try {
        await addDoNotCallNumbers(listing, { global: true }, [{ phoneNumber: `+45${national}` }], { now: new Date() });
        const pending = importLead(w.campaigns.retail, national).then((res) => {
          answered = true;
          return res;
        });
        // The import waits for the listing's lock (it would otherwise check before the listing commits).
        await new Promise((r) => setTimeout(r, 300));
        expect(answered).toBe(false);
        await listing.commit();
        const res = await pending;
        expect(res.status).toBe(200);
        expect(importedOf(res).status).toBe('GlobalDoNotCall');
        expect(await statusOf(importedOf(res).uniqueId)).toBe(750);
      } finally {
        if (!listing.isCompleted()) await listing.rollback();
        await removeDoNotCallNumber(t.db, { global: true }, `+45${national}`);
      }
    });

    it('when a bulk import holds a listed number among others, then that row arrives as DoNotCall and its result says so', async () => {
      const listed = danish();
      const free = danish();
      await post({ phoneNumber: `+45${listed}` });
      const res = await request(t.app)
        .post(`/api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)}`)
        .set('Authorization', auth())
        .set('Content-Type', 'application/json')
        .send(
          JSON.stringify([
            { Name: 'Free', Telefon: free },
            { Name: 'Listed', Telefon: `0045 ${listed}` },
          ]),
        );
      expect(res.status).toBe(200);
      const results = JSON.parse(res.text) as { row: number; success: boolean; uniqueId: string; status: string }[];
      expect(results.map((r) => [r.row, r.success, r.status])).toEqual([
        [1, true, 'New'],
        [2, true, 'DoNotCall'],
      ]);
      expect(await statusOf(results[0]!.uniqueId)).toBe(0);
      expect(await statusOf(results[1]!.uniqueId)).toBe(700);
    });

    it('when an entry has expired, then imports arrive New and the list leaves it out', async () => {
      const number = faroese();
      const now = new Date();
      t.setNow(now);
      const res = await post({ phoneNumber: number, expiresTime: new Date(now.getTime() + 60_000).toISOString() });
      expect(res.status).toBe(200);
      expect(importedOf(await importLead(w.campaigns.b2b, number)).status).toBe('DoNotCall');
      t.setNow(new Date(now.getTime() + 120_000));
      const later = await importLead(w.campaigns.b2b, number);
      expect(later.body).toEqual({ success: true, uniqueId: anyString, pool: anyString });
      const list = await request(t.app).get('/api/donotcallnumbers').set('Authorization', auth());
      expect((list.body as { phoneNumber: string }[]).map((e) => e.phoneNumber)).not.toContain(e164(number));
    });

    it('when a number is removed (+ percent-encoded), then later imports arrive New and listed leads keep DoNotCall', async () => {
      const number = faroese();
      const lead = await loadLead(w.campaigns.b2b, number);
      await post({ phoneNumber: number });
      const removed = await request(t.app)
        .delete(`/api/donotcallnumbers/${encodeURIComponent(e164(number))}`)
        .set('Authorization', auth());
      expect(removed.status).toBe(204);
      expect(await statusOf(lead)).toBe(700);
      expect(importedOf(await importLead(w.campaigns.b2b, number)).status).toBeUndefined();
      const again = await request(t.app)
        .delete(`/api/donotcallnumbers/${encodeURIComponent(e164(number))}`)
        .set('Authorization', auth());
      expect(again.status).toBe(404);
    });
  });

  describe('reading the list', () => {
    it('when listed, then GET streams the entries the account can see, filtered by Project (name pattern or unique id) and ModifiedFrom', async () => {
      const [everywhere, b2bOnly, retailOnly] = [faroese(), faroese(), faroese()];
      // Entries carry the app's clock (the same as this one): a bound taken just now leaves out what
      // other tests of this file listed a moment earlier, which a second of slack let in.
      const before = new Date();
      await post([
        { phoneNumber: everywhere },
        { phoneNumber: b2bOnly, project: w.projects.b2b },
        { phoneNumber: retailOnly, project: w.projects.retail },
      ]);
      const get = (query: string, authorization = auth()) =>
        request(t.app).get(`/api/donotcallnumbers${query}`).set('Authorization', authorization);
      const numbers = (res: request.Response) => (res.body as { phoneNumber: string }[]).map((e) => e.phoneNumber);

      const all = await get(`?ModifiedFrom=${encodeURIComponent(before.toISOString())}`);
      expect(all.status).toBe(200);
      expect(all.headers['content-type']).toMatch(/^application\/json/);
      expect(numbers(all)).toEqual(expect.arrayContaining([everywhere, b2bOnly, retailOnly].map(e164)));

      const b2bView = await get(`?modifiedfrom=${encodeURIComponent(before.toISOString())}`, w.accounts.b2b.auth);
      expect(numbers(b2bView)).toEqual(expect.arrayContaining([everywhere, b2bOnly].map(e164)));
      expect(numbers(b2bView)).not.toContain(e164(retailOnly));

      const since = `&ModifiedFrom=${encodeURIComponent(before.toISOString())}`;
      const byPattern = await get(`?Project=${encodeURIComponent(`retail-${w.id}*`)}${since}`);
      expect(numbers(byPattern)).toEqual([e164(retailOnly)]);

      const future = await get(`?ModifiedFrom=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`);
      expect(future.body).toEqual([]);
    });

    it('when a client asks for gzip, then a list larger than the compression threshold comes compressed, as the exports do', async () => {
      const before = new Date();
      await post(Array.from({ length: 20 }, () => ({ phoneNumber: faroese(), note: 'a note long enough to pass the threshold' })));
      const res = await request(t.app)
        .get(`/api/donotcallnumbers?ModifiedFrom=${encodeURIComponent(before.toISOString())}`)
        .set('Authorization', auth())
        .set('Accept-Encoding', 'gzip');
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe('gzip');
      expect(res.headers.vary).toMatch(/Accept-Encoding/);
      expect((res.body as unknown[]).length).toBeGreaterThanOrEqual(20);
    });
  });

  describe('bad input', () => {
    it('when one number of an array cannot be read, then it is a 400 naming it and nothing is stored', async () => {
      const good = faroese();
      const lead = await loadLead(w.campaigns.b2b, good);
      const res = await post([{ phoneNumber: good }, { phoneNumber: 'call me maybe' }]);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(errorsOf(res)).toEqual([{ field: '[1].phoneNumber', message: 'is not a phone number' }]);
      expect(
        await t
          .db('do_not_call_numbers')
          .where({ phone_number: e164(good) })
          .first(),
      ).toBeUndefined();
      expect(await statusOf(lead)).toBe(0);
    });

    it('when a single entry (not an array) is refused, then the errors name its fields without an index', async () => {
      const unreadable = await post({ phoneNumber: 'call me maybe' });
      expect(unreadable.status).toBe(400);
      expect(errorsOf(unreadable)).toEqual([{ field: 'phoneNumber', message: 'is not a phone number' }]);
      expect((unreadable.body as { detail: string }).detail).toBe('phoneNumber: is not a phone number');
      const mistyped = await post({ phoneNumber: 4512345678 });
      expect(errorsOf(mistyped).map((e) => e.field)).toEqual(['phoneNumber']);
      const foreign = await post({ phoneNumber: faroese(), project: w.projects.retail }, w.accounts.b2b.auth);
      expect(foreign.status).toBe(403);
      expect((foreign.body as { detail: string }).detail).toBe("project: the project is outside this account's project rights");
    });

    it('when numbers are too short, of the wrong type, or the body is empty, then each is a 400', async () => {
      expect((await post({ phoneNumber: '12' })).status).toBe(400);
      expect((await post({ phoneNumber: 4512345678 })).status).toBe(400);
      expect((await post([])).status).toBe(400);
      expect((await post({})).status).toBe(400);
      expect(errorsOf(await post({ phoneNumber: faroese(), expiresTime: '2001-01-01T00:00:00Z' }))).toEqual([
        { field: 'expiresTime', message: 'must lie in the future' },
      ]);
      expect(errorsOf(await post([{ phoneNumber: faroese(), expiresTime: '2001-01-01T00:00:00Z' }]))).toEqual([
        { field: '[0].expiresTime', message: 'must lie in the future' },
      ]);
      expect((await request(t.app).delete('/api/donotcallnumbers/abc').set('Authorization', auth())).status).toBe(400);
    });

    it("when the project is unknown, then it is a 400; when it is outside the account's projects, a 403; nothing is stored", async () => {
      const number = faroese();
      const unknown = await post({ phoneNumber: number, project: `Nope-${w.id}` });
      expect(unknown.status).toBe(400);
      const foreign = await post({ phoneNumber: number, project: w.projects.retail }, w.accounts.b2b.auth);
      expect(foreign.status).toBe(403);
      expect(
        await t
          .db('do_not_call_numbers')
          .where({ phone_number: e164(number) })
          .first(),
      ).toBeUndefined();
    });

    it('when the account lacks the DoNoCallNumbers rights, then each verb is a 403', async () => {
      const none = w.accounts.none.auth;
      expect((await request(t.app).get('/api/donotcallnumbers').set('Authorization', none)).status).toBe(403);
      expect((await post({ phoneNumber: faroese() }, none)).status).toBe(403);
      expect((await request(t.app).delete('/api/donotcallnumbers/%2B298123456').set('Authorization', none)).status).toBe(403);
    });
  });

  describe('the global list (lcm dnc --global)', () => {
    const env = { ...process.env, DATABASE_URL: process.env.TEST_DATABASE_URL, REDIS_URL: '', LOG_LEVEL: 'silent' };
    let realDatabaseUrl: string | undefined;
    beforeAll(() => {
      realDatabaseUrl = process.env.DATABASE_URL;
      process.env.DATABASE_URL = process.env.TEST_DATABASE_URL;
    });
    afterAll(() => {
      if (realDatabaseUrl === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = realDatabaseUrl;
    });
    /** `lcm dnc ...` in this process (the command's own code, on the test database), its output captured. */
    const lcmHere = async (...args: string[]): Promise<string> => {
      const out: string[] = [];
      const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out.push(String(chunk));
        return true;
      });
      try {
        expect(await main(['node', 'lcm', 'dnc', ...args])).toBe(0);
      } finally {
        write.mockRestore();
      }
      return out.join('');
    };

    it('when a number is listed globally (lcm as a child process), then open leads of every project move to GlobalDoNotCall and imports arrive so', async () => {
      const number = faroese();
      const leads = [await loadLead(w.campaigns.b2b, number), await loadLead(w.campaigns.retail, number)];
      const added = await run('node', [LCM, 'dnc', 'add', '--global', number, '--note', 'national register'], { env, timeout: 60_000 });
      expect(added.stdout).toBe(`listed ${e164(number)}: 2 open leads moved\n`);
      expect(await Promise.all(leads.map(statusOf))).toEqual([750, 750]);

      const imported = await importLead(w.campaigns.retail, number);
      expect(importedOf(imported).status).toBe('GlobalDoNotCall');
      expect(await statusOf(importedOf(imported).uniqueId)).toBe(750);
    }, 120_000);

    it('when listed, then `dnc list --global` prints it, the API does not show it, and `dnc remove --global` takes it off', async () => {
      const number = faroese();
      await lcmHere('add', '--global', number, '--note', 'national register');
      expect(await lcmHere('list', '--global')).toContain(`${e164(number)}\t*\t\tnational register\n`);
      const api = await request(t.app).get('/api/donotcallnumbers').set('Authorization', auth());
      expect((api.body as { phoneNumber: string }[]).map((e) => e.phoneNumber)).not.toContain(e164(number));

      expect(await lcmHere('remove', '--global', number)).toBe('removed 1 entry\n');
      expect(importedOf(await importLead(w.campaigns.retail, number)).status).toBeUndefined();
    });

    it('when the number cannot be read or a global entry names a project, then the command fails naming it', async () => {
      await expect(main(['node', 'lcm', 'dnc', 'add', '--global', 'not-a-number'])).rejects.toThrow('not-a-number: is not a phone number');
      await expect(main(['node', 'lcm', 'dnc', 'add', '--global', '--project', w.projects.b2b, faroese()])).rejects.toThrow(
        /global list has no projects/,
      );
    });

    it('when an option is refused for several numbers, then the reason names the option (not the API field) once', async () => {
      // Each reason applies to every number: said once, in the command's terms.
      const numbers = [faroese(), faroese(), faroese()];
      await expect(main(['node', 'lcm', 'dnc', 'add', '--project', 'No such project', ...numbers])).rejects.toThrow(
        /^--project "No such project": is not the name or unique id of a project$/,
      );
      await expect(main(['node', 'lcm', 'dnc', 'add', '--expires', '2020-01-01', ...numbers])).rejects.toThrow(
        /^--expires: must lie in the future$/,
      );
      await expect(
        main(['node', 'lcm', 'dnc', 'add', '--global', '--project', w.projects.b2b, 'not-a-number', ...numbers]),
      ).rejects.toThrow(
        new RegExp(
          `^not-a-number: is not a phone number; --project "${w.projects.b2b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}": the global list has no projects$`,
        ),
      );
      await expect(main(['node', 'lcm', 'dnc', 'remove', '--project', 'No such project', numbers[0]!])).rejects.toThrow(
        /^--project "No such project": is not the name or unique id of a project$/,
      );
    });
  });
});
