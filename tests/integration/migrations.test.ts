import { Knex } from 'knex';
import { createDb } from '../../src/data/db';

describe('migrations', () => {
  let db: Knex;
  beforeAll(() => {
    db = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen' });
  });
  afterAll(() => db.destroy());

  it('when the harness started, then every table of the data model exists', async () => {
    const { rows } = await db.raw(`select table_name from information_schema.tables where table_schema = 'public'`);
    const names = rows.map((r: { table_name: string }) => r.table_name);
    expect(names).toEqual(expect.arrayContaining(['calls', 'leads', 'accounts', 'org_codes']));
  });
});
