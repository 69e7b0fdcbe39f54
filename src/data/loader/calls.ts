import type { Knex } from 'knex';
import type { PartitionedKey } from '../uniqueIdRegistry';

/** The loader's reads and upserts of what hangs off calls (calls themselves go through src/data/uniqueIdRegistry.ts). */

/** Whether the call is in progress; undefined when there is no such call. */
export async function findCallInProgress(trx: Knex.Transaction, call: PartitionedKey): Promise<boolean | undefined> {
  const row = await trx('calls').where({ id: call.id, start_time: call.time }).first<{ in_progress: boolean } | undefined>('in_progress');
  return row?.in_progress;
}

/** Adds the recording or updates the call's recording with its file name. */
export async function upsertRecording(
  trx: Knex.Transaction,
  call: PartitionedKey,
  recording: { file_name: string; start_time: Date; end_time: Date | null; recording_type: number },
): Promise<void> {
  const { file_name, ...values } = recording;
  await trx('recordings')
    .insert({ call_id: call.id, call_start_time: call.time, file_name, ...values })
    .onConflict(['call_id', 'call_start_time', 'file_name'])
    .merge(Object.keys(values));
}
