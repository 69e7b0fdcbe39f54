import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadSettings, Settings } from '../config/settings';
import { configurePhoneRegion, configurePlatformZone } from '../config/platform';
import { createDb, migrateLatest } from '../data/db';
import { startEmbeddedPostgres, EmbeddedCluster } from './embeddedPostgres';
import type { CliContext } from '../cli/context';

/** Opens the context of an `lcm` command: DATABASE_URL, or the embedded default cluster (started here, stopped by `close`). */
export async function openCliContext(options: { migrate?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<CliContext> {
  const settings = loadSettings(options.env ?? process.env);
  configurePlatformZone(settings.PLATFORM_TIMEZONE);
  configurePhoneRegion(settings.DEFAULT_PHONE_REGION);
  let cluster: EmbeddedCluster | undefined;
  let url = settings.DATABASE_URL;
  let freshCluster = false;
  if (url === undefined) {
    freshCluster = !fs.existsSync(path.resolve(settings.EMBEDDED_DATA_DIR, 'PG_VERSION'));
    cluster = await startEmbeddedPostgres({
      dataDir: settings.EMBEDDED_DATA_DIR,
      port: settings.EMBEDDED_PG_PORT,
      database: 'lcm',
      persistent: true,
    });
    url = cluster.url;
  }
  const db = createDb({ url, timezone: settings.PLATFORM_TIMEZONE, poolMax: settings.DB_POOL_MAX });
  try {
    if (options.migrate !== false && cluster) await migrateLatest(db);
  } catch (err) {
    await db.destroy();
    await cluster?.stop();
    throw err;
  }
  return {
    settings,
    db,
    embedded: cluster !== undefined,
    freshCluster,
    async close() {
      await db.destroy();
      await cluster?.stop();
    },
  };
}
