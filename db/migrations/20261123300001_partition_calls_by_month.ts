import type { Knex } from 'knex';

/**
 * Calls, recordings and ready periods become range-partitioned by month (UTC months) on their
 * time column: calls on start_time, recordings on their call's start time (a new column,
 * call_start_time, so a call's recordings live in its call's month), ready periods on end_time
 * (the column their window searches). Existing rows move into the new tables.
 *
 * A partitioned table's unique indexes must contain the partition key, so a unique id alone
 * can no longer be unique in the table itself. Two small registries keep it unique across all
 * partitions: call_keys and ready_period_keys (unique id → row id and time). Statement
 * triggers with transition tables keep them in step with every INSERT (COPY included),
 * UPDATE and DELETE on the parent tables, set-based, so a bulk COPY pays one insert into the
 * registry, not one trigger call per row. A registry row is also how a call is found by its
 * unique id in one index probe plus one probe into one partition.
 *
 * Partitions: one per month that has rows, plus the month before the current one up to three
 * months ahead; a DEFAULT partition takes rows outside them until maintenance moves those into
 * months of their own (src/data/partitions.ts, `lcm maintain`). docs/decisions.md (Scale-out)
 * has the reasons.
 *
 * down() converts back to the plain tables of before, data included.
 */

const CALL_COLUMNS = `
  id bigint NOT NULL DEFAULT nextval('calls_id_seq'),
  unique_id text NOT NULL,
  campaign_id bigint NOT NULL,
  lead_id bigint,
  unique_lead_id text NOT NULL,
  user_id bigint NOT NULL,
  ou0_id bigint NOT NULL,
  ou1_id bigint,
  ou2_id bigint,
  ou3_id bigint,
  ou4_id bigint,
  lead_phone_number text NOT NULL,
  lead_external_key text,
  end_cause smallint NOT NULL DEFAULT 0,
  in_progress boolean NOT NULL DEFAULT false,
  connected boolean NOT NULL DEFAULT false,
  incoming boolean NOT NULL DEFAULT false,
  start_time timestamptz NOT NULL,
  connect_time timestamptz,
  end_time timestamptz,
  preview_ms integer NOT NULL DEFAULT 0,
  dialing_ms integer,
  conversation_ms integer,
  wrap_up_ms integer,
  lead_status smallint,
  pre_call_lead_status smallint,
  lead_closure smallint,
  campaign_type smallint,
  applied_outcome jsonb`;

const CALL_INDEXES = `
  ALTER TABLE calls ADD CONSTRAINT calls_pkey PRIMARY KEY (id, start_time);
  ALTER TABLE calls ADD CONSTRAINT calls_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id);
  ALTER TABLE calls ADD CONSTRAINT calls_lead_id_fkey FOREIGN KEY (lead_id) REFERENCES leads(id);
  ALTER TABLE calls ADD CONSTRAINT calls_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);
  ALTER TABLE calls ADD CONSTRAINT calls_ou0_id_fkey FOREIGN KEY (ou0_id) REFERENCES org_units(id);
  ALTER TABLE calls ADD CONSTRAINT calls_ou1_id_fkey FOREIGN KEY (ou1_id) REFERENCES org_units(id);
  ALTER TABLE calls ADD CONSTRAINT calls_ou2_id_fkey FOREIGN KEY (ou2_id) REFERENCES org_units(id);
  ALTER TABLE calls ADD CONSTRAINT calls_ou3_id_fkey FOREIGN KEY (ou3_id) REFERENCES org_units(id);
  ALTER TABLE calls ADD CONSTRAINT calls_ou4_id_fkey FOREIGN KEY (ou4_id) REFERENCES org_units(id);
  CREATE INDEX calls_user_time ON calls (user_id, start_time, unique_id);
  CREATE INDEX calls_ou0_time ON calls (ou0_id, start_time, unique_id);
  CREATE INDEX calls_ou1_time ON calls (ou1_id, start_time, unique_id) WHERE ou1_id IS NOT NULL;
  CREATE INDEX calls_ou2_time ON calls (ou2_id, start_time, unique_id) WHERE ou2_id IS NOT NULL;
  CREATE INDEX calls_ou3_time ON calls (ou3_id, start_time, unique_id) WHERE ou3_id IS NOT NULL;
  CREATE INDEX calls_ou4_time ON calls (ou4_id, start_time, unique_id) WHERE ou4_id IS NOT NULL;
  CREATE INDEX calls_lead ON calls (lead_id);`;

const RECORDING_COLUMNS = `
  id bigint NOT NULL DEFAULT nextval('recordings_id_seq'),
  call_id bigint NOT NULL,
  start_time timestamptz NOT NULL,
  end_time timestamptz,
  recording_type smallint NOT NULL,
  file_name text NOT NULL,
  call_start_time timestamptz NOT NULL`;

const RECORDING_INDEXES = `
  ALTER TABLE recordings ADD CONSTRAINT recordings_pkey PRIMARY KEY (id, call_start_time);
  ALTER TABLE recordings ADD CONSTRAINT recordings_call_file UNIQUE (call_id, call_start_time, file_name);
  ALTER TABLE recordings ADD CONSTRAINT recordings_call_fkey FOREIGN KEY (call_id, call_start_time)
    REFERENCES calls (id, start_time) ON DELETE CASCADE ON UPDATE CASCADE;`;

const READY_PERIOD_COLUMNS = `
  id bigint NOT NULL DEFAULT nextval('ready_periods_id_seq'),
  unique_id text NOT NULL,
  user_id bigint NOT NULL,
  campaign_id bigint NOT NULL,
  start_time timestamptz NOT NULL,
  seconds integer NOT NULL CHECK (seconds >= 0),
  end_time timestamptz NOT NULL,
  CHECK (end_time = start_time + seconds * interval '1 second')`;

const READY_PERIOD_INDEXES = `
  ALTER TABLE ready_periods ADD CONSTRAINT ready_periods_pkey PRIMARY KEY (id, end_time);
  ALTER TABLE ready_periods ADD CONSTRAINT ready_periods_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id);
  ALTER TABLE ready_periods ADD CONSTRAINT ready_periods_campaign_id_fkey FOREIGN KEY (campaign_id) REFERENCES campaigns(id);
  CREATE INDEX ready_periods_end ON ready_periods (end_time, unique_id);`;

/**
 * The registry of one partitioned table and the three statement triggers that keep it in step.
 * A registry row may exist before its table row (the loader claims the id first, then inserts
 * with that id); an insert whose unique id is registered for another row is a unique violation.
 */
function registrySql(table: string, registry: string, idColumn: string, time: string): string {
  return `
  CREATE TABLE ${registry} (
    unique_id text PRIMARY KEY,
    ${idColumn} bigint NOT NULL,
    ${time} timestamptz NOT NULL
  );
  -- Retention deletes a dropped month's keys by time; rows arrive roughly in time order.
  CREATE INDEX ${registry}_time ON ${registry} USING brin (${time});

  CREATE FUNCTION ${registry}_insert() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    registered bigint;
  BEGIN
    INSERT INTO ${registry} (unique_id, ${idColumn}, ${time})
      SELECT unique_id, id, ${time} FROM added
      ON CONFLICT (unique_id) DO UPDATE SET ${time} = EXCLUDED.${time}
        WHERE ${registry}.${idColumn} = EXCLUDED.${idColumn};
    GET DIAGNOSTICS registered = ROW_COUNT;
    IF registered < (SELECT count(*) FROM added) THEN
      RAISE EXCEPTION 'duplicate key value violates unique constraint "${registry}_pkey"'
        USING ERRCODE = 'unique_violation', DETAIL = 'a unique_id of the new rows is already used by another row of ${table}',
              CONSTRAINT = '${registry}_pkey', TABLE = '${registry}';
    END IF;
    RETURN NULL;
  EXCEPTION WHEN cardinality_violation THEN
    -- One statement inserting a unique id twice: the same violation as a unique index's.
    RAISE EXCEPTION 'duplicate key value violates unique constraint "${registry}_pkey"'
      USING ERRCODE = 'unique_violation', DETAIL = 'the new rows of ${table} repeat a unique_id',
            CONSTRAINT = '${registry}_pkey', TABLE = '${registry}';
  END $$;

  CREATE FUNCTION ${registry}_update() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    -- Rows whose unique id changed give up the old one and claim the new one.
    DELETE FROM ${registry} k USING removed o JOIN added n ON n.id = o.id
      WHERE k.unique_id = o.unique_id AND n.unique_id <> o.unique_id AND k.${idColumn} = o.id;
    INSERT INTO ${registry} (unique_id, ${idColumn}, ${time})
      SELECT n.unique_id, n.id, n.${time} FROM removed o JOIN added n ON n.id = o.id WHERE n.unique_id <> o.unique_id;
    UPDATE ${registry} k SET ${time} = n.${time}
      FROM removed o JOIN added n ON n.id = o.id
      WHERE k.unique_id = n.unique_id AND n.unique_id = o.unique_id AND n.${time} <> o.${time};
    RETURN NULL;
  END $$;

  CREATE FUNCTION ${registry}_delete() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    DELETE FROM ${registry} k USING removed o WHERE k.unique_id = o.unique_id AND k.${idColumn} = o.id;
    RETURN NULL;
  END $$;

  CREATE TRIGGER ${registry}_insert AFTER INSERT ON ${table}
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ${registry}_insert();
  CREATE TRIGGER ${registry}_update AFTER UPDATE ON ${table}
    REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ${registry}_update();
  CREATE TRIGGER ${registry}_delete AFTER DELETE ON ${table}
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION ${registry}_delete();`;
}

/**
 * Partition indexes are named after their parent index and the partition's suffix
 * (`calls_ou2_time_p2026_11`), so a plan reads like the index it comes from. Maintenance calls
 * this for every partition it attaches.
 */
const NAME_PARTITION_INDEXES = `
  CREATE FUNCTION name_partition_indexes(part regclass) RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    r record;
  BEGIN
    FOR r IN
      SELECT ci.relname AS child, pi.relname AS parent, ct.relname AS partition, pt.relname AS tbl
        FROM pg_index x
        JOIN pg_class ci ON ci.oid = x.indexrelid
        JOIN pg_class ct ON ct.oid = x.indrelid
        JOIN pg_inherits i ON i.inhrelid = ci.oid
        JOIN pg_class pi ON pi.oid = i.inhparent
        JOIN pg_index px ON px.indexrelid = pi.oid
        JOIN pg_class pt ON pt.oid = px.indrelid
       WHERE x.indrelid = part AND left(ct.relname, length(pt.relname) + 1) = pt.relname || '_'
    LOOP
      IF r.child <> r.parent || substr(r.partition, length(r.tbl) + 1) THEN
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.child, r.parent || substr(r.partition, length(r.tbl) + 1));
      END IF;
    END LOOP;
  END $$;`;

/** Creates `<table>_pYYYY_MM` for every UTC month in `months` (text 'YYYY-MM-01'), and `<table>_default`. */
async function createPartitions(knex: Knex, table: string, months: string[]): Promise<void> {
  for (const m of months) {
    const [y, mo] = m.split('-').map(Number) as [number, number];
    const next = mo === 12 ? `${y + 1}-01-01` : `${y}-${String(mo + 1).padStart(2, '0')}-01`;
    const name = `${table}_p${y}_${String(mo).padStart(2, '0')}`;
    await knex.raw(`CREATE TABLE ${name} PARTITION OF ${table} FOR VALUES FROM ('${m} 00:00:00+00') TO ('${next} 00:00:00+00')`);
  }
  await knex.raw(`CREATE TABLE ${table}_default PARTITION OF ${table} DEFAULT`);
}

/** UTC months with rows in `source.column`, plus last month to three months ahead. */
async function monthsToCreate(knex: Knex, source: string, column: string): Promise<string[]> {
  const { rows } = await knex.raw<{ rows: { m: string }[] }>(
    `SELECT to_char(m, 'YYYY-MM-DD') AS m FROM (
       SELECT DISTINCT date_trunc('month', ${column} AT TIME ZONE 'UTC') AS m FROM ${source}
       UNION
       SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month',
                              date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months', interval '1 month')
     ) q WHERE m BETWEEN '0001-01-01' AND '9999-11-01' ORDER BY m`,
  );
  return rows.map((r) => r.m);
}

export async function up(knex: Knex): Promise<void> {
  // The old tables give up their sequences, names and data to the new ones.
  await knex.raw(`
    ALTER SEQUENCE calls_id_seq OWNED BY NONE;
    ALTER SEQUENCE recordings_id_seq OWNED BY NONE;
    ALTER SEQUENCE ready_periods_id_seq OWNED BY NONE;
    ALTER TABLE calls RENAME TO calls_flat;
    ALTER TABLE recordings RENAME TO recordings_flat;
    ALTER TABLE ready_periods RENAME TO ready_periods_flat;
    CREATE TABLE calls (${CALL_COLUMNS}) PARTITION BY RANGE (start_time);
    CREATE TABLE recordings (${RECORDING_COLUMNS}) PARTITION BY RANGE (call_start_time);
    CREATE TABLE ready_periods (${READY_PERIOD_COLUMNS}) PARTITION BY RANGE (end_time);
  `);
  const callMonths = await monthsToCreate(knex, 'calls_flat', 'start_time');
  await createPartitions(knex, 'calls', callMonths);
  await createPartitions(knex, 'recordings', callMonths);
  await createPartitions(knex, 'ready_periods', await monthsToCreate(knex, 'ready_periods_flat', 'end_time'));

  // The registries and their triggers come before the data, so moving the rows fills them
  // (set-based) and proves the unique ids unique.
  await knex.raw(registrySql('calls', 'call_keys', 'call_id', 'start_time'));
  await knex.raw(registrySql('ready_periods', 'ready_period_keys', 'ready_period_id', 'end_time'));

  // Data first, indexes and constraints after: one sort per index instead of row-by-row upkeep.
  await knex.raw(`
    INSERT INTO calls SELECT * FROM calls_flat;
    INSERT INTO recordings (id, call_id, start_time, end_time, recording_type, file_name, call_start_time)
      SELECT r.id, r.call_id, r.start_time, r.end_time, r.recording_type, r.file_name, c.start_time
        FROM recordings_flat r JOIN calls_flat c ON c.id = r.call_id;
    INSERT INTO ready_periods SELECT * FROM ready_periods_flat;
    DROP TABLE recordings_flat, calls_flat, ready_periods_flat;
    ALTER SEQUENCE calls_id_seq OWNED BY calls.id;
    ALTER SEQUENCE recordings_id_seq OWNED BY recordings.id;
    ALTER SEQUENCE ready_periods_id_seq OWNED BY ready_periods.id;
    ${CALL_INDEXES}
    ${RECORDING_INDEXES}
    ${READY_PERIOD_INDEXES}
    ${NAME_PARTITION_INDEXES}
    SELECT name_partition_indexes(i.inhrelid::regclass) FROM pg_inherits i
     WHERE i.inhparent IN ('calls'::regclass, 'recordings'::regclass, 'ready_periods'::regclass);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS call_keys, ready_period_keys;
    -- CASCADE: the functions' triggers on calls and ready_periods go with them.
    DROP FUNCTION IF EXISTS call_keys_insert(), call_keys_update(), call_keys_delete(),
      ready_period_keys_insert(), ready_period_keys_update(), ready_period_keys_delete() CASCADE;
    DROP FUNCTION IF EXISTS name_partition_indexes(regclass);
    ALTER SEQUENCE calls_id_seq OWNED BY NONE;
    ALTER SEQUENCE recordings_id_seq OWNED BY NONE;
    ALTER SEQUENCE ready_periods_id_seq OWNED BY NONE;
    ALTER TABLE recordings RENAME TO recordings_part;
    ALTER TABLE calls RENAME TO calls_part;
    ALTER TABLE ready_periods RENAME TO ready_periods_part;
    ALTER TABLE recordings_part RENAME CONSTRAINT recordings_call_file TO recordings_part_call_file;
    ALTER INDEX calls_pkey RENAME TO calls_part_pkey;
    ALTER INDEX recordings_pkey RENAME TO recordings_part_pkey;
    ALTER INDEX ready_periods_pkey RENAME TO ready_periods_part_pkey;
    ALTER INDEX calls_user_time RENAME TO calls_part_user_time;
    ALTER INDEX calls_ou0_time RENAME TO calls_part_ou0_time;
    ALTER INDEX calls_ou1_time RENAME TO calls_part_ou1_time;
    ALTER INDEX calls_ou2_time RENAME TO calls_part_ou2_time;
    ALTER INDEX calls_ou3_time RENAME TO calls_part_ou3_time;
    ALTER INDEX calls_ou4_time RENAME TO calls_part_ou4_time;
    ALTER INDEX calls_lead RENAME TO calls_part_lead;
    ALTER INDEX ready_periods_end RENAME TO ready_periods_part_end;

    CREATE TABLE calls (
      id bigint PRIMARY KEY DEFAULT nextval('calls_id_seq'),
      unique_id text NOT NULL UNIQUE,
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      lead_id bigint REFERENCES leads(id),
      unique_lead_id text NOT NULL,
      user_id bigint NOT NULL REFERENCES users(id),
      ou0_id bigint NOT NULL REFERENCES org_units(id),
      ou1_id bigint REFERENCES org_units(id),
      ou2_id bigint REFERENCES org_units(id),
      ou3_id bigint REFERENCES org_units(id),
      ou4_id bigint REFERENCES org_units(id),
      lead_phone_number text NOT NULL,
      lead_external_key text,
      end_cause smallint NOT NULL DEFAULT 0,
      in_progress boolean NOT NULL DEFAULT false,
      connected boolean NOT NULL DEFAULT false,
      incoming boolean NOT NULL DEFAULT false,
      start_time timestamptz NOT NULL,
      connect_time timestamptz,
      end_time timestamptz,
      preview_ms integer NOT NULL DEFAULT 0,
      dialing_ms integer,
      conversation_ms integer,
      wrap_up_ms integer,
      lead_status smallint,
      pre_call_lead_status smallint,
      lead_closure smallint,
      campaign_type smallint,
      applied_outcome jsonb
    );
    INSERT INTO calls SELECT * FROM calls_part;
    CREATE INDEX calls_user_time ON calls (user_id, start_time, unique_id);
    CREATE INDEX calls_ou0_time ON calls (ou0_id, start_time, unique_id);
    CREATE INDEX calls_ou1_time ON calls (ou1_id, start_time, unique_id) WHERE ou1_id IS NOT NULL;
    CREATE INDEX calls_ou2_time ON calls (ou2_id, start_time, unique_id) WHERE ou2_id IS NOT NULL;
    CREATE INDEX calls_ou3_time ON calls (ou3_id, start_time, unique_id) WHERE ou3_id IS NOT NULL;
    CREATE INDEX calls_ou4_time ON calls (ou4_id, start_time, unique_id) WHERE ou4_id IS NOT NULL;
    CREATE INDEX calls_lead ON calls (lead_id);

    CREATE TABLE recordings (
      id bigint PRIMARY KEY DEFAULT nextval('recordings_id_seq'),
      call_id bigint NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
      start_time timestamptz NOT NULL,
      end_time timestamptz,
      recording_type smallint NOT NULL,
      file_name text NOT NULL
    );
    INSERT INTO recordings SELECT id, call_id, start_time, end_time, recording_type, file_name FROM recordings_part;
    CREATE INDEX recordings_call_time ON recordings (call_id, start_time);
    CREATE UNIQUE INDEX recordings_call_file ON recordings (call_id, file_name);

    CREATE TABLE ready_periods (
      id bigint PRIMARY KEY DEFAULT nextval('ready_periods_id_seq'),
      unique_id text NOT NULL UNIQUE,
      user_id bigint NOT NULL REFERENCES users(id),
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      start_time timestamptz NOT NULL,
      seconds integer NOT NULL CHECK (seconds >= 0),
      end_time timestamptz NOT NULL,
      CHECK (end_time = start_time + seconds * interval '1 second')
    );
    INSERT INTO ready_periods SELECT * FROM ready_periods_part;
    CREATE INDEX ready_periods_end ON ready_periods (end_time, unique_id);

    DROP TABLE recordings_part, calls_part, ready_periods_part;
    ALTER SEQUENCE calls_id_seq OWNED BY calls.id;
    ALTER SEQUENCE recordings_id_seq OWNED BY recordings.id;
    ALTER SEQUENCE ready_periods_id_seq OWNED BY ready_periods.id;
  `);
}
