import { Knex } from 'knex';
import { useTestDb } from '../harness/useTestWorld';
import { seedDemo, DEMO_CREDENTIALS } from '../../src/ingest/demoData';
import { findAccountByUsername } from '../../src/data/accountRepository';
import { verifyPassword } from '../../src/domain/password';
import { RESOURCE_TYPES, VERBS } from '../../src/domain/enums';

const ZONE = 'Europe/Copenhagen';

describe('lcm seed-demo (seedDemo)', () => {
  const db = useTestDb({ timezone: ZONE });
  const count = async (sql: string, bindings: Knex.RawBinding[] = []) =>
    Number((await db.raw<{ rows: { n: string }[] }>(sql, bindings)).rows[0]!.n);

  beforeAll(async () => {
    await seedDemo(db, ZONE);
  }, 60_000);

  it('when seeded, then the org tree has three levels including TRYG Forsikring A/S', async () => {
    const { rows } = await db.raw<{ rows: { org_code: string; level: number }[] }>(
      `select org_code, level from org_units where unique_id like 'demo-ou-%' order by level, org_code`,
    );
    expect(rows).toHaveLength(7);
    expect(new Set(rows.map((r) => r.level))).toEqual(new Set([0, 1, 2]));
    expect(rows).toEqual(
      expect.arrayContaining([
        { org_code: 'TRYG Forsikring A/S', level: 1 },
        { org_code: 'Kundeservice Århus', level: 2 },
      ]),
    );
  });

  it('when seeded, then both demo accounts log in with their printed credentials and have their rights', async () => {
    for (const c of DEMO_CREDENTIALS) {
      const account = await findAccountByUsername(db, c.username);
      expect(account?.enabled).toBe(true);
      expect(await verifyPassword(c.password, account!.passwordHash)).toBe(true);
    }
    const demo = await findAccountByUsername(db, 'demo');
    expect(demo).toMatchObject({ projectPatterns: ['*'], entryAccess: 'Full', userOrgCode: 'maria.sorensen@demo.example' });
    for (const type of RESOURCE_TYPES) expect(demo!.rights[type]).toEqual([...VERBS]);
    const b2b = await findAccountByUsername(db, 'b2b');
    expect(b2b).toMatchObject({
      projectPatterns: ['B2B*'],
      entryAccess: 'Partner',
      rights: { Calls: ['Get'], Leads: ['Get'], SimpleLeads: ['Get'], Organization: ['Get'] },
    });
  });

  it('when seeded, then calls lie on 2026-11-16..20 in the three projects and carry their users’ unit chains', async () => {
    expect(await count(`select count(*) n from calls where unique_id like 'demo-call-%'`)).toBe(200);
    const range = (
      await db.raw<{ rows: { lo: Date; hi: Date }[] }>(
        `select min(start_time) lo, max(start_time) hi from calls where unique_id like 'demo-call-%'`,
      )
    ).rows[0]!;
    expect(range.lo.getTime()).toBeGreaterThanOrEqual(Date.parse('2026-11-16T00:00:00+01:00'));
    expect(range.hi.getTime()).toBeLessThan(Date.parse('2026-11-21T00:00:00+01:00'));
    const projects = await db.raw<{ rows: { project: string }[] }>(
      `select distinct c.project from calls k join campaigns c on c.id = k.campaign_id where k.unique_id like 'demo-call-%' order by 1`,
    );
    expect(projects.rows.map((r) => r.project)).toEqual(['B2B Sales', 'B2B Support', 'Retail']);
    expect(
      await count(`
        select count(*) n from calls k join users u on u.id = k.user_id
         where k.unique_id like 'demo-call-%'
           and u.parent_id <> coalesce(k.ou4_id, k.ou3_id, k.ou2_id, k.ou1_id, k.ou0_id)`),
    ).toBe(0);
    expect(
      await count(`select count(*) n from calls where unique_id like 'demo-call-%' and (
          (connect_time is not null and not connected) or ((end_time is null) <> in_progress)
          or (conversation_ms is not null and not (connected and not in_progress))
          or (lead_closure is not null and lead_status <> 200))`),
    ).toBe(0);
  });

  it('when seeded, then leads show various statuses that agree with their last call', async () => {
    expect(await count(`select count(*) n from leads where unique_id like 'demo-lead-%'`)).toBe(50);
    expect(await count(`select count(distinct status) n from leads where unique_id like 'demo-lead-%'`)).toBeGreaterThanOrEqual(6);
    expect(
      await count(`
        select count(*) n from leads l
          join lateral (select * from calls k where k.lead_id = l.id order by start_time desc limit 1) k on true
         where l.unique_id like 'demo-lead-%' and not k.in_progress and not (
               (k.lead_status = 200 and l.status = 200 and l.closure = k.lead_closure)
            or (k.lead_status = 300 and l.status in (150, 300))
            or (k.lead_status in (1, 2, 3, 10, 210, 400) and l.status = k.lead_status))`),
    ).toBe(0);
  });

  it('when seeded, then recordings, ready periods, calendar events and saved searches are there', async () => {
    expect(await count(`select count(*) n from recordings r join calls k on k.id = r.call_id where k.unique_id like 'demo-call-%'`)).toBe(
      105,
    );
    expect(await count(`select count(*) n from ready_periods where unique_id like 'demo-ready-%'`)).toBe(66);
    expect(await count(`select count(*) n from calendar_events where unique_id like 'demo-event-%'`)).toBe(8);
    expect(
      await count(
        `select count(*) n from saved_searches s join users u on u.id = s.user_id where u.org_code = 'maria.sorensen@demo.example'`,
      ),
    ).toBe(2);
  });

  it('when seeded again, then nothing is duplicated', async () => {
    const before = (await findAccountByUsername(db, 'demo'))!.version;
    await seedDemo(db, ZONE);
    expect(await count(`select count(*) n from calls where unique_id like 'demo-call-%'`)).toBe(200);
    expect(await count(`select count(*) n from leads where unique_id like 'demo-lead-%'`)).toBe(50);
    expect(await count(`select count(*) n from recordings r join calls k on k.id = r.call_id where k.unique_id like 'demo-call-%'`)).toBe(
      105,
    );
    // The account was replaced, so cached credentials must go stale.
    expect((await findAccountByUsername(db, 'demo'))!.version).toBeGreaterThan(before);
  }, 60_000);
});
