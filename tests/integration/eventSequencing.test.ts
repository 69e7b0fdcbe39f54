import type { Knex } from 'knex';
import { useTestWorld } from '../harness/useTestWorld';
import { worldCalendarEvent } from '../harness/world';
import { testDatabaseUrl, uniq } from '../harness/testApp';
import { until } from '../harness/until';
import { recordCalendarEvent } from '../../src/data/hookEvents';
import { sequenceEvents, streamPositions } from '../../src/data/liveEvents';
import { EventSequencer } from '../../src/data/eventSequencer';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/config/logger';
import { createDb } from '../../src/data/db';

/**
 * The numbering of live events (docs/decisions.md, "Live events"): writers only list their
 * events; a sequencing round numbers what has committed, one round at a time, so positions become
 * visible in increasing order and every committed event gets exactly one.
 */
describe('live event sequencing', () => {
  const { t, w } = useTestWorld();

  /** One calendar event's hook event, in `trx` or in a transaction of its own. */
  const write = (trx: Knex.Transaction | undefined, title: string): Promise<unknown> =>
    trx ? writeIn(trx, title) : t.db.transaction((own) => writeIn(own, title));
  const writeIn = (trx: Knex.Transaction, title: string) =>
    recordCalendarEvent(trx, {
      type: 'calendarEvent.created',
      event: worldCalendarEvent(w, title),
      project: w.projects.b2b,
      time: new Date(),
    });
  /** The positions of the events with these titles, by title (absent: not numbered). */
  const positionsOf = async (titles: string[]): Promise<Map<string, number>> => {
    const rows = await t
      .db('event_stream as s')
      .join('hook_events as e', 'e.id', 's.event_id')
      .whereRaw(`e.snapshot->>'title' = any(?::text[])`, [titles])
      .select<{ title: string; position: number }[]>(t.db.raw(`e.snapshot->>'title' as title`), 's.position');
    return new Map(rows.map((r) => [r.title, r.position]));
  };

  it('when a transaction that wrote an event is still open, then a round leaves it out, and the first round after its commit numbers it after every earlier position', async () => {
    const [open, committed] = [uniq('open-'), uniq('committed-')];
    const writer = await t.db.transaction();
    try {
      await write(writer, open);
      await write(undefined, committed);
      const head = await sequenceEvents(t.db, true);
      const first = await positionsOf([open, committed]);
      expect(first.get(committed)).toBeLessThanOrEqual(head!);
      expect(first.has(open)).toBe(false);
      await writer.commit();
    } catch (err) {
      await writer.rollback();
      throw err;
    }
    const head = await sequenceEvents(t.db, true);
    const after = await positionsOf([open, committed]);
    expect(after.get(open)).toBeLessThanOrEqual(head!);
    expect(after.get(open)!).toBeGreaterThan(after.get(committed)!);
  });

  it('when a round is in progress, then a round that does not wait gives way, and one that waits numbers after it what committed meanwhile', async () => {
    const round = await t.db.transaction();
    let waited: Promise<number | undefined> | undefined;
    try {
      const held = (await round.raw<{ rows: { head: number }[] }>('select lcm_sequence_events(true) as head')).rows[0]!.head;
      expect(await sequenceEvents(t.db, false)).toBeUndefined();
      let settled = false;
      waited = sequenceEvents(t.db, true).finally(() => {
        settled = true;
      });
      const meanwhile = uniq('meanwhile-');
      await write(undefined, meanwhile);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
      await round.commit();
      const head = await waited;
      const position = (await positionsOf([meanwhile])).get(meanwhile);
      expect(position).toBeGreaterThan(held);
      expect(position).toBeLessThanOrEqual(head!);
    } catch (err) {
      await round.rollback().catch(() => undefined);
      await waited?.catch(() => undefined);
      throw err;
    }
  });

  it('when the round of streamPositions numbers new events, then committed covers them and issued is not below committed', async () => {
    const titles = [uniq('positions-'), uniq('positions-')];
    await t.db.transaction(async (trx) => {
      for (const title of titles) await write(trx, title);
    });
    const positions = await streamPositions(t.db);
    const numbered = [...(await positionsOf(titles)).values()];
    expect(numbered).toHaveLength(2);
    expect(Math.max(...numbered)).toBeLessThanOrEqual(positions.committed);
    // The sequence is read after the round: what the round handed out counts as issued.
    expect(positions.issued).toBeGreaterThanOrEqual(positions.committed);
  });

  it('when writers commit concurrently while rounds run, then every committed event gets exactly one position, a rolled-back one none', async () => {
    const sequencer = new EventSequencer({ db: t.db, intervalMs: 2, logger: createLogger('silent') });
    sequencer.start();
    const tag = uniq('w');
    const titles: string[] = [];
    try {
      await Promise.all(
        Array.from({ length: 6 }, async (_, k) => {
          for (let i = 0; i < 20; i++) {
            const title = `${tag}-${k}-${i}`;
            titles.push(title);
            // Two events per transaction now and then: both are numbered, in the order they were written.
            await t.db.transaction(async (trx) => {
              await write(trx, title);
              if (i % 5 === 0) await write(trx, `${title}-second`);
            });
          }
        }),
      );
      await t.db
        .transaction(async (trx) => {
          await write(trx, `${tag}-rolled-back`);
          throw new Error('rolled back');
        })
        .catch(() => undefined);
    } finally {
      sequencer.stop();
    }
    await sequenceEvents(t.db, true);
    const doubled = titles.filter((x) => Number(x.split('-').at(-1)) % 5 === 0);
    const positions = await positionsOf([...titles, ...doubled.map((x) => `${x}-second`), `${tag}-rolled-back`]);
    expect(positions.size).toBe(titles.length + doubled.length);
    expect(positions.has(`${tag}-rolled-back`)).toBe(false);
    const all = [...positions.values()];
    expect(new Set(all).size).toBe(all.length);
    for (const title of doubled) expect(positions.get(`${title}-second`)).toBeGreaterThan(positions.get(title)!);
  });

  it('when a sequencer is started, then events written without any request are numbered by its rounds', async () => {
    const sequencer = new EventSequencer({ db: t.db, intervalMs: 5, logger: createLogger('silent') });
    sequencer.start();
    const title = uniq('by-a-round-');
    try {
      await write(undefined, title);
      await until('a round to number the event', async () => (await positionsOf([title])).has(title), {
        timeoutMs: 30_000,
        intervalMs: 20,
      });
    } finally {
      sequencer.stop();
    }
  });

  it('when rounds fail, then they go on failing with one warning, not one per round', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)) as { level: number; msg: string });
          done();
        },
      }),
    );
    // A session whose search path has no schema: every round's function call fails.
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('options', '-c search_path=nowhere');
    const failing = createDb({ url: url.toString(), timezone: 'UTC', poolMax: 1 });
    let rounds = 0;
    failing.on('query-error', () => (rounds += 1));
    const sequencer = new EventSequencer({ db: failing, intervalMs: 5, logger });
    sequencer.start();
    try {
      await until('five failed rounds', () => rounds >= 5, { timeoutMs: 30_000, intervalMs: 20 });
    } finally {
      sequencer.stop();
      await failing.destroy();
    }
    expect(lines.map((l) => l.msg)).toEqual(['live events could not be numbered; trying again']);
  });
});
