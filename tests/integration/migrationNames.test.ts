import fs from 'node:fs';
import knex, { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/data/db';
import { MIGRATIONS_DIR } from '../../src/data/migrations';
import { uniq } from '../harness/testApp';
import { lcmEnv, runLcm } from '../harness/lcmProcess';

/**
 * One database, two builds: the tests run the migrations as .ts files, the compiled build
 * (`npm start`, the image) as .js files. Names are recorded without the extension, and a
 * database that recorded `.ts` names before keeps working with both.
 */
describe('migration names', () => {
  let admin: Knex;
  const databases: string[] = [];
  const migrationNames = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();

  beforeAll(() => {
    admin = createDb({ url: process.env.TEST_DATABASE_URL!, timezone: 'Europe/Copenhagen' });
  });
  afterAll(async () => {
    for (const name of databases) await admin.raw(`drop database if exists ${name} with (force)`);
    await admin.destroy();
  });

  async function freshDatabase(): Promise<string> {
    const name = `mignames_${uniq().replace(/-/g, '')}`;
    await admin.raw(`create database ${name}`);
    databases.push(name);
    return process.env.TEST_DATABASE_URL!.replace(/\/[^/]+$/, `/${name}`);
  }

  const recorded = async (db: Knex) => (await db('knex_migrations').orderBy('name').pluck('name')) as string[];

  it('when the compiled build migrates first, then it records names without extension and the sources find nothing to apply', async () => {
    const url = await freshDatabase();
    const compiled = await runLcm(['migrate'], { env: lcmEnv({ DATABASE_URL: url }) });
    expect(compiled).toMatchObject({
      code: 0,
      stderr: '',
      stdout: `applied ${migrationNames.join(', ')}\npartitions: no partition to create\n`,
    });

    const db = createDb({ url, timezone: 'Europe/Copenhagen' });
    try {
      expect(await recorded(db)).toEqual(migrationNames);
      expect(await migrateLatest(db)).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it("when a database recorded .ts names (knex's default naming), then both the sources and the compiled build see it up to date", async () => {
    const url = await freshDatabase();
    // How databases were migrated before: knex's file-system source, names with the extension.
    const before = knex({ client: 'pg', connection: url, migrations: { directory: MIGRATIONS_DIR, loadExtensions: ['.ts'] } });
    try {
      await before.migrate.latest();
      expect(await recorded(before)).toEqual(migrationNames.map((n) => `${n}.ts`));
    } finally {
      await before.destroy();
    }

    const compiled = await runLcm(['migrate'], { env: lcmEnv({ DATABASE_URL: url }) });
    expect(compiled).toMatchObject({ code: 0, stderr: '', stdout: 'already up to date\npartitions: no partition to create\n' });
    const db = createDb({ url, timezone: 'Europe/Copenhagen' });
    try {
      expect(await recorded(db)).toEqual(migrationNames);
      expect(await migrateLatest(db)).toEqual([]);
      // And down again: rollback finds every recorded migration under its new name.
      await db.migrate.rollback(undefined, true);
      expect(await recorded(db)).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});
