import type { Knex } from 'knex';
import { COMMIT_NUMBERING, EVENT_POSITIONS_LOCK } from './20261221000001_live_events';

/**
 * Live events numbered by a sequencer instead of at each commit (docs/decisions.md, "Live
 * events"). A transaction that writes events only lists them in `event_pending` (no lock, no
 * notification: its commit runs in parallel with every other). `lcm_sequence_events` moves what
 * has committed from that list into `event_stream`, numbered in event id order, and notifies
 * `lcm_events` once for the round. Rounds hold one exclusive transaction-level advisory lock until
 * they have committed, so positions still become visible in increasing order: a reader that has
 * seen position p never sees a smaller one appear later.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Events written and not numbered yet. A queue read whole by each round: no index to keep up.
    CREATE TABLE event_pending (
      event_id bigint NOT NULL
    );

    -- Writers in flight keep their locks on these tables: the drops wait for them to commit.
    DROP TABLE event_commits;
    DROP FUNCTION lcm_position_events();
    DROP INDEX hook_events_txid;
    ALTER TABLE hook_events DROP COLUMN txid;

    CREATE OR REPLACE FUNCTION lcm_event_written() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO event_pending (event_id) SELECT id FROM written;
      RETURN NULL;
    END $$;

    -- One round: numbers every listed event whose transaction has committed, and answers the last
    -- position committed (null when p_wait is false and another round is running).
    CREATE FUNCTION lcm_sequence_events(p_wait boolean) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
      ids bigint[];
      n integer;
      first_position bigint;
    BEGIN
      -- Held until this round has committed: the next round numbers after it.
      IF p_wait THEN
        PERFORM pg_advisory_xact_lock(${EVENT_POSITIONS_LOCK.join(', ')});
      ELSIF NOT pg_try_advisory_xact_lock(${EVENT_POSITIONS_LOCK.join(', ')}) THEN
        RETURN NULL;
      END IF;
      -- A statement taken after the lock: it sees every round and every write committed before.
      WITH moved AS (DELETE FROM event_pending RETURNING event_id)
      SELECT array_agg(event_id ORDER BY event_id) INTO ids FROM moved;
      n := coalesce(cardinality(ids), 0);
      IF n > 0 THEN
        first_position := nextval('event_stream_positions');
        IF n > 1 THEN
          PERFORM setval('event_stream_positions', first_position + n - 1);
        END IF;
        INSERT INTO event_stream (position, event_id)
          SELECT first_position + u.k - 1, u.id FROM unnest(ids) WITH ORDINALITY AS u(id, k);
        PERFORM pg_notify('lcm_events', (first_position + n - 1)::text);
        RETURN first_position + n - 1;
      END IF;
      RETURN coalesce((SELECT max(position) FROM event_stream), 0);
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    SELECT lcm_sequence_events(true);
    DROP FUNCTION lcm_sequence_events(boolean);
    DROP TRIGGER hook_events_written ON hook_events;
    DROP FUNCTION lcm_event_written();
    DROP TABLE event_pending;
    ${COMMIT_NUMBERING}
  `);
}
