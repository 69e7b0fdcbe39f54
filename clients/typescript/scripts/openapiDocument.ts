import type { AddressInfo } from 'node:net';
import { composeApp } from '../../../src/app/compose';
import { loadSettings } from '../../../src/config/settings';
import { createLogger } from '../../../src/config/logger';
import { createDb } from '../../../src/data/db';

/**
 * The OpenAPI document exactly as the API serves it at GET /api/openapi.json: the app of this
 * checkout is composed in process with default settings (no database is ever reached: the pool
 * opens connections only for queries) and asked once over loopback.
 */
export async function currentDocument(): Promise<Record<string, unknown>> {
  const settings = loadSettings({ LOG_LEVEL: 'silent' });
  const db = createDb({ url: 'postgres://unused@127.0.0.1:1/unused', timezone: settings.PLATFORM_TIMEZONE });
  const composed = await composeApp({ settings, db, logger: createLogger('silent') });
  const server = composed.app.express.listen(0, '127.0.0.1');
  try {
    await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/api/openapi.json`);
    if (!res.ok) throw new Error(`GET /api/openapi.json answered ${res.status}`);
    return (await res.json()) as Record<string, unknown>;
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await composed.close();
    await db.destroy();
  }
}
