import type { Knex } from 'knex';

/**
 * What keeps runs apart. Every generated key carries the run prefix `g{seed}` (`g{seed}r{n}` for
 * the n-th run of the same seed in one database); lead and call ids come from blocks reserved
 * up front, so calls can name their leads and recordings their calls before any row exists.
 */

/**
 * Reserves `leads` lead ids and `calls` call ids; returns the first of each block (0 for an
 * empty block). The short transaction's EXCLUSIVE lock keeps other writers (the only other users
 * of these sequences) out between nextval and setval; the block stays ours after commit, and a
 * failed run only leaves a gap in the ids.
 */
export async function reserveIdBlocks(db: Knex, leads: number, calls: number): Promise<{ leadBase: number; callBase: number }> {
  return db.transaction(async (trx) => {
    await trx.raw('LOCK TABLE leads, calls IN EXCLUSIVE MODE');
    const reserve = async (table: string, count: number): Promise<number> => {
      if (count === 0) return 0;
      const { rows } = await trx.raw<{ rows: { first: number }[] }>(
        `select setval(s, nextval(s) + ?::bigint - 1) - ?::bigint + 1 as first
           from (select pg_get_serial_sequence(?, 'id')::regclass as s) q`,
        [count, count, table],
      );
      return Number(rows[0]!.first);
    };
    return { leadBase: await reserve('leads', leads), callBase: await reserve('calls', calls) };
  });
}

/** The first free prefix of the seed, inside the run's transaction. */
export async function claimRunPrefix(trx: Knex.Transaction, seed: number): Promise<string> {
  for (let run = 1; ; run++) {
    const prefix = run === 1 ? `g${seed}` : `g${seed}r${run}`;
    const taken = await trx('org_units')
      .where({ unique_id: `${prefix}-ou0` })
      .first<{ id: number } | undefined>('id');
    if (!taken) return prefix;
  }
}
