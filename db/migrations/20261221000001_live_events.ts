import type { Knex } from 'knex';

/**
 * The order of live events (docs/decisions.md, "Live events"). Every hook event gets a position
 * in `event_stream` when its transaction commits: the first event written by a transaction
 * leaves one marker row in `event_commits`; the marker's constraint trigger, deferred to the
 * commit, takes one exclusive transaction-level advisory lock, numbers the transaction's events
 * from the sequence `event_stream_positions` (in the order they were written), removes the
 * marker and notifies `lcm_events` with the last position. The lock is held until the commit has
 * ended and is visible, so positions become visible in increasing order: a reader that sees
 * position p will never later see a smaller one appear. Ids from a sequence taken earlier in a
 * transaction (hook_events.id) could commit out of order; these cannot.
 */
/** The two-key advisory lock that orders the commits of events ('LCM', 'event positions'). */
export const EVENT_POSITIONS_LOCK = [0x4c434d, 0x45564e54] as const;

/**
 * The numbering at commit: each event remembers its transaction, the first event of a transaction
 * leaves its marker, and the marker's deferred trigger numbers the transaction's events.
 */
export const COMMIT_NUMBERING = `
    -- The transaction that wrote each event (rows written before this migration have none).
    ALTER TABLE hook_events ADD COLUMN txid xid8;
    ALTER TABLE hook_events ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
    CREATE INDEX hook_events_txid ON hook_events (txid);

    -- One row per transaction that wrote events and has not committed yet.
    CREATE TABLE event_commits (
      txid xid8 PRIMARY KEY
    );

    CREATE FUNCTION lcm_event_written() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM written) THEN
        INSERT INTO event_commits (txid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING;
      END IF;
      RETURN NULL;
    END $$;

    CREATE FUNCTION lcm_position_events() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      n bigint;
      first_position bigint;
    BEGIN
      -- Held until this transaction has committed: the next committer numbers after it.
      PERFORM pg_advisory_xact_lock(${EVENT_POSITIONS_LOCK.join(', ')});
      SELECT count(*) INTO n FROM hook_events WHERE txid = NEW.txid;
      IF n > 0 THEN
        first_position := nextval('event_stream_positions');
        IF n > 1 THEN
          PERFORM setval('event_stream_positions', first_position + n - 1);
        END IF;
        INSERT INTO event_stream (position, event_id)
          SELECT first_position + row_number() OVER (ORDER BY id) - 1, id FROM hook_events WHERE txid = NEW.txid;
        PERFORM pg_notify('lcm_events', (first_position + n - 1)::text);
      END IF;
      -- A later statement of this transaction that writes events leaves a new marker.
      DELETE FROM event_commits WHERE txid = NEW.txid;
      RETURN NULL;
    END $$;

    CREATE TRIGGER hook_events_written AFTER INSERT ON hook_events
      REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION lcm_event_written();
    CREATE CONSTRAINT TRIGGER event_commits_position AFTER INSERT ON event_commits
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lcm_position_events();
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Retention (EVENTS_RETENTION) removes the oldest.
    CREATE INDEX hook_events_created ON hook_events (created_time);

    CREATE SEQUENCE event_stream_positions AS bigint;

    -- An event's place in the live stream: the id a client resumes after (Last-Event-ID).
    CREATE TABLE event_stream (
      position bigint PRIMARY KEY,
      event_id bigint NOT NULL
    );
    ${COMMIT_NUMBERING}
    -- Events written before: positioned now, in the order of their ids.
    INSERT INTO event_stream (position, event_id)
      SELECT nextval('event_stream_positions'), id FROM (SELECT id FROM hook_events ORDER BY id) e;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS hook_events_written ON hook_events;
    DROP TABLE IF EXISTS event_commits, event_stream;
    DROP FUNCTION IF EXISTS lcm_position_events();
    DROP FUNCTION IF EXISTS lcm_event_written();
    DROP SEQUENCE IF EXISTS event_stream_positions;
    DROP INDEX IF EXISTS hook_events_txid, hook_events_created;
    ALTER TABLE hook_events DROP COLUMN IF EXISTS txid;
  `);
}
