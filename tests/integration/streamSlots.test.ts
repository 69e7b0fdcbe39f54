import { PgListener } from '../../src/data/notifications';
import { StreamSlots } from '../../src/data/streamSlots';
import { testDatabaseUrl } from '../harness/testApp';

/**
 * The EVENTS_MAX_STREAMS count (docs/decisions.md, "Live events"): session advisory locks on a
 * process's listening connection, so every process and node sees them, and a lost session gives
 * them back.
 */
describe('event stream slots', () => {
  const listeners: PgListener[] = [];
  const listener = () => {
    const l = new PgListener(testDatabaseUrl());
    listeners.push(l);
    return l;
  };
  afterAll(async () => {
    for (const l of listeners) await l.close();
  });
  /** An account id no other test uses: slot locks are per account across the shared database. */
  const account = () => 900_000 + Math.floor(Math.random() * 90_000);

  it('when an account holds its slots in two processes, then one more is refused anywhere, and a release frees one', async () => {
    const id = account();
    const a = new StreamSlots(listener(), 2);
    const b = new StreamSlots(listener(), 2);
    const first = await a.take(id);
    const second = await b.take(id);
    expect([first, second].every((r) => r !== undefined)).toBe(true);
    expect(await a.take(id)).toBeUndefined();
    expect(await b.take(id)).toBeUndefined();
    await first!();
    const third = await b.take(id);
    expect(third).toBeDefined();
    expect([a.holds(first!), b.holds(second!), b.holds(third!)]).toEqual([false, true, true]);
    await second!();
    await third!();
  });

  it('when the session is lost, then its slots are no longer held, and releasing them gives nothing back', async () => {
    const id = account();
    const l = listener();
    const slots = new StreamSlots(l, 1);
    const before = await slots.take(id);
    expect(slots.holds(before!)).toBe(true);
    // The lock goes with the connection; the feed is told through onGap and calls sessionLost.
    await l.query('select pg_advisory_unlock_all()');
    slots.sessionLost();
    expect(slots.holds(before!)).toBe(false);
    const after = await slots.take(id);
    expect(after).toBeDefined();
    expect(slots.holds(after!)).toBe(true);
    // The old release must not unlock the new slot (the same lock, taken again).
    await before!();
    expect(await new StreamSlots(listener(), 1).take(id)).toBeUndefined();
    await after!();
  });
});
