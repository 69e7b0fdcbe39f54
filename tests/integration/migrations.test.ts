import { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/data/db';
import { uniq } from '../harness/testApp';

describe('migrations', () => {
  let admin: Knex;
  let db: Knex;
  const database = `mig_${uniq().replace(/-/g, '')}`;

  beforeAll(async () => {
    admin = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen' });
    await admin.raw(`create database ${database}`);
    const url = process.env.TEST_DATABASE_URL!.replace(/\/[^/]+$/, `/${database}`);
    db = createDb({ url, timezone: 'Europe/Copenhagen' });
  });
  afterAll(async () => {
    await db.destroy();
    await admin.raw(`drop database if exists ${database} with (force)`);
    await admin.destroy();
  });

  const tables = async () =>
    (
      await db.raw<{ rows: { table_name: string }[] }>(
        `select table_name from information_schema.tables where table_schema = 'public' and table_name not like 'knex%'`,
      )
    ).rows
      .map((r) => r.table_name)
      .sort();

  it('when migrated up, down and up again, then the data model is created, removed and recreated', async () => {
    await migrateLatest(db);
    const created = await tables();
    expect(created).toEqual(
      expect.arrayContaining([
        'accounts',
        'calendar_events',
        'calendars',
        'calls',
        'campaigns',
        'idempotency_keys',
        'lead_definition_fields',
        'lead_definitions',
        'lead_pools',
        'leads',
        'org_codes',
        'org_units',
        'ready_periods',
        'recordings',
        'request_limits',
        'saved_searches',
        'user_campaigns',
        'users',
      ]),
    );
    await db.migrate.rollback(undefined, true);
    expect(await tables()).toEqual([]);
    await migrateLatest(db);
    expect(await tables()).toEqual(created);
  });

  it('when the calls of one org unit are searched by time, then the plan uses an index', async () => {
    await migrateLatest(db);
    await db.raw('set enable_seqscan = off');
    const plan = (
      await db.raw<{ rows: Record<string, string>[] }>(
        `explain select * from calls where ou2_id = 1 and start_time >= now() - interval '2 hours' and start_time < now() order by start_time, unique_id`,
      )
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).toMatch(/Index Scan using calls_ou2_time/);
  });
});
