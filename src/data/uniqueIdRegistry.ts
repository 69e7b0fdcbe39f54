import type { Knex } from 'knex';

/**
 * Writes and lookups by unique id on the month-partitioned tables. A partitioned table cannot
 * hold a unique index on the unique id alone (it would have to include the month), so each
 * keeps a registry, unique id → (row id, time), maintained by triggers on the table
 * (db/migrations/20261123300001_partition_calls_by_month.ts). The registry's primary key is
 * what makes a unique id unique across all months, and its time column is what prunes a lookup
 * to one partition.
 */

/** How a month-partitioned row is addressed: its id and its partition key. */
export interface PartitionedKey {
  id: number;
  time: Date;
}

interface RegistrySpec {
  table: string;
  registry: string;
  idColumn: string;
  timeColumn: string;
  sequence: string;
}

export const CALLS: RegistrySpec = {
  table: 'calls',
  registry: 'call_keys',
  idColumn: 'call_id',
  timeColumn: 'start_time',
  sequence: 'calls_id_seq',
};

export const READY_PERIODS: RegistrySpec = {
  table: 'ready_periods',
  registry: 'ready_period_keys',
  idColumn: 'ready_period_id',
  timeColumn: 'end_time',
  sequence: 'ready_periods_id_seq',
};

/** The registered key of a unique id, or undefined. */
export async function findKey(db: Knex | Knex.Transaction, spec: RegistrySpec, uniqueId: string): Promise<PartitionedKey | undefined> {
  const row = await db(spec.registry)
    .where({ unique_id: uniqueId })
    .first<PartitionedKey | undefined>(`${spec.idColumn} as id`, `${spec.timeColumn} as time`);
  return row ? { id: row.id, time: row.time } : undefined;
}

/**
 * Inserts the row with this unique id, or updates the one that has it (moving it to another
 * month's partition when its time changes). The unique id is claimed in the registry first:
 * of two transactions loading the same new id at once, the second waits for the first and then
 * updates what the first inserted, as an upsert on a unique index would.
 */
export async function upsertByUniqueId(
  trx: Knex.Transaction,
  spec: RegistrySpec,
  uniqueId: string,
  values: Record<string, unknown>,
): Promise<PartitionedKey> {
  const time = values[spec.timeColumn] as Date;
  const { rows } = await trx.raw<{ rows: { id: number }[] }>(
    `insert into ${spec.registry} (unique_id, ${spec.idColumn}, ${spec.timeColumn}) values (?, nextval('${spec.sequence}'), ?)
     on conflict (unique_id) do nothing returning ${spec.idColumn} as id`,
    [uniqueId, time],
  );
  if (rows.length > 0) {
    const id = Number(rows[0]!.id);
    await trx(spec.table).insert({ id, unique_id: uniqueId, ...values });
    return { id, time };
  }
  const locked = await trx.raw<{ rows: PartitionedKey[] }>(
    `select ${spec.idColumn} as id, ${spec.timeColumn} as time from ${spec.registry} where unique_id = ? for update`,
    [uniqueId],
  );
  const key = locked.rows[0]!;
  await trx(spec.table)
    .where({ id: key.id, [spec.timeColumn]: key.time })
    .update(values);
  return { id: key.id, time };
}
