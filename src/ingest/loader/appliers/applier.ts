import type { Knex } from 'knex';
import type { LoadRecord, RecordType } from '../recordSchemas';
import type { LoadReferences } from '../references';

/** What every applier is given: the load's transaction, its cached references, the zone and the clock. */
export interface ApplyContext {
  trx: Knex.Transaction;
  refs: LoadReferences;
  /** The platform zone: local dates of automatic pool names, wall times in lead data. */
  zone: string;
  now: () => Date;
}

/** Upserts one record of kind T (or throws a RecordError saying why it cannot). */
export type Applier<T extends RecordType> = (record: LoadRecord<T>, ctx: ApplyContext) => Promise<void>;
