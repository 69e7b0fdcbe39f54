import { loadSettings } from '../../src/config/settings';
import { backgroundWorkEnabled } from '../../src/app/jobsWorker';

/** When `lcm serve` forks its jobs process (docs/operations.md, "Running the API and lcm"). */
describe('the jobs process of lcm serve', () => {
  const off = { HOOKS_WORKER: 'false', SWEEP_INTERVAL_MS: '0', MAINTENANCE_INTERVAL_MS: '0' };

  it('when hook delivery, the sweep and maintenance are off but event retention is on (its default), then it still runs, since nothing else prunes events', () => {
    expect(backgroundWorkEnabled(loadSettings(off))).toBe(true);
  });

  it('when every kind of background work is off, event retention and hook queue pruning included, then it does not run', () => {
    expect(backgroundWorkEnabled(loadSettings({ ...off, EVENTS_PRUNE_INTERVAL_MS: '0', HOOKS_PRUNE_INTERVAL_MS: '0' }))).toBe(false);
  });

  it('when any one kind is on, then it runs', () => {
    const none = { ...off, EVENTS_PRUNE_INTERVAL_MS: '0', HOOKS_PRUNE_INTERVAL_MS: '0' };
    for (const on of [
      { HOOKS_WORKER: 'true' },
      { SWEEP_INTERVAL_MS: '60000' },
      { MAINTENANCE_INTERVAL_MS: '3600000' },
      { EVENTS_PRUNE_INTERVAL_MS: '600000' },
      // The deliveries may be sent by `lcm hooks work` elsewhere; their finished jobs are removed here.
      { HOOKS_PRUNE_INTERVAL_MS: '600000' },
    ]) {
      expect({ on, runs: backgroundWorkEnabled(loadSettings({ ...none, ...on })) }).toEqual({ on, runs: true });
    }
  });
});
