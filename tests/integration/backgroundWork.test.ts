import { startBackgroundWork } from '../../src/app/backgroundWork';
import { createLogger } from '../../src/config/logger';
import { loadSettings } from '../../src/config/settings';
import { createDb } from '../../src/data/db';
import { createOwnDatabase } from '../harness/testApp';
import { until } from '../harness/until';

jest.setTimeout(120_000);

/**
 * The background work of `lcm serve`'s jobs process and `lcm jobs work` (src/app/backgroundWork.ts),
 * on a database of this file's own so that its periodic jobs are not shared with other files.
 */
describe('background work', () => {
  it('when hook delivery runs elsewhere (HOOKS_WORKER=false, lcm hooks work), then the finished hook queue jobs are still pruned here', async () => {
    const own = await createOwnDatabase('background_work');
    const db = createDb({ url: own.url, timezone: 'Europe/Copenhagen', poolMax: 10 });
    const settings = loadSettings({
      HOOKS_WORKER: 'false',
      SWEEP_INTERVAL_MS: '0',
      MAINTENANCE_INTERVAL_MS: '0',
      EVENTS_PRUNE_INTERVAL_MS: '0',
      HOOKS_PRUNE_INTERVAL_MS: '1000',
    });
    const work = await startBackgroundWork({ db, settings }, createLogger('silent'));
    try {
      // Each pruning run is recorded as the scheduled job `hook-queue-pruning` (src/data/scheduledJobs.ts).
      // Stopped just after a run finished: stopping does not wait for a run in flight, the next is a second away.
      await until(
        'a hook queue pruning run',
        async () =>
          (await db('scheduled_jobs').where({ job: 'hook-queue-pruning' }).whereNotNull('last_finished_at').first('runs')) !== undefined,
        { timeoutMs: 30_000, intervalMs: 50 },
      );
    } finally {
      await work.stop();
      await db.destroy();
      await own.drop();
    }
  });
});
