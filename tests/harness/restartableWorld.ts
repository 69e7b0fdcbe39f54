import { Readable } from 'node:stream';
import { createDb } from '../../src/data/db';
import { loadNdjson } from '../../src/ingest/loader/loadNdjson';
import { createWorld, World } from './world';
import { startRestartablePostgres, RestartablePostgres } from './restartablePostgres';

const ZONE = 'Europe/Copenhagen';

/**
 * A Postgres of the test's own that it can stop and start (restartablePostgres.ts), migrated and
 * holding a World (world.ts): the set-up of the fault tests that restart Postgres under a
 * running server. Destroy `pg` after the test.
 */
export async function startWorldOnRestartablePostgres(): Promise<{ pg: RestartablePostgres; w: World }> {
  const pg = await startRestartablePostgres();
  const db = createDb({ url: pg.url, timezone: ZONE, poolMax: 2 });
  try {
    const w = await createWorld({
      load: (...records) => loadNdjson(db, Readable.from(records.map((r) => JSON.stringify(r) + '\n')), { zone: ZONE }),
    });
    return { pg, w };
  } finally {
    await db.destroy();
  }
}
