import { createHash } from 'node:crypto';
import { requestHash } from '../data/idempotency';
import { addBulkPart, bulkParts, claimBulkKey, finishBulkKey, releaseBulkKey } from '../data/bulkIdempotency';
import { type BatchHook, BulkKeyConflict } from './bulkStoreBatch';
import { BulkImporter, BulkImportRun, BulkPiece, BulkStop, readBulkBody, RowDigest, runBulkImport } from './bulkImport';

/**
 * A bulk import under an `Idempotency-Key` (docs/decisions.md, Bulk import): the key covers
 * the whole request. The rows read (each record as parsed, and how the body ended) go into a
 * running digest, so "the same request" means the same parameters and the same rows.
 *
 * - A new key: the import runs; each stored batch adds its part of the answer under the key in
 *   its own transaction; the end of the body finishes the key with the digest.
 * - A finished key: the body is read to its end (nothing stored) and, when its digest is the
 *   first one's, the kept answer is sent again (`replayed`); otherwise BulkKeyReused.
 * - An unfinished key (the first request was cut short): the body's first rows must be the
 *   rows already stored (checked against the digest kept with the last stored batch); they
 *   are answered from the kept parts and the import goes on after them, so no row is stored
 *   twice. Rows that differ end the request with a key_conflict stop.
 */

/** The key was first used with another request. */
export class BulkKeyReused extends Error {
  constructor() {
    super('the Idempotency-Key was already used with a different request');
    this.name = 'BulkKeyReused';
  }
}

/** A running SHA-256 over the rows read. */
class RowChain implements RowDigest {
  private state: string;

  constructor(seed: string) {
    this.state = seed;
  }

  add(entry: unknown): void {
    this.state = createHash('sha256').update(this.state).update(JSON.stringify(entry)).digest('base64url');
  }

  get digest(): string {
    return this.state;
  }
}

export interface KeyedBulkImport {
  /** The whole answer is the kept answer of an earlier request with this key. */
  replayed: boolean;
  pieces: AsyncIterable<BulkPiece>;
}

/** Why a body's end leaves the key finished: the body was read as far as it can be. */
const BODY_STOPS = new Set<BulkStop['reason']>(['malformed', 'too_large', 'header']);

/** Runs `run` under the Idempotency-Key `key` of the importer's account (see the module's description). */
export async function startKeyedBulkImport(
  run: Omit<BulkImportRun, 'onBatch' | 'tracking'> & { importer: BulkImporter & { accountId: number } },
  key: string,
): Promise<KeyedBulkImport> {
  const { deps, importer, request, signal } = run;
  const { db } = deps;
  const { accountId } = importer;
  const paramsHash = requestHash({
    campaign: request.campaign.code,
    pool: request.pool ?? null,
    // Only when a check runs, so keys taken before the check existed keep their hash.
    ...(request.duplicates ? { duplicates: request.duplicates } : {}),
  });
  const state = await claimBulkKey(db, accountId, key, paramsHash);
  if (state.kind === 'mismatch') throw new BulkKeyReused();
  const chain = new RowChain(paramsHash);

  if (state.kind === 'finished') {
    try {
      await readBulkBody(run, chain);
    } catch (err) {
      // The client left while its body was read: nothing to answer.
      if (signal.aborted) return { replayed: false, pieces: (async function* () {})() };
      throw err;
    }
    if (chain.digest !== state.digest) throw new BulkKeyReused();
    return { replayed: true, pieces: replay(state.stop as BulkStop | null) };
  }

  /** The kept answer: its parts through row `throughRow` (all without it), then how it ended. */
  async function* replay(stop: BulkStop | null, throughRow?: number): AsyncGenerator<BulkPiece> {
    if (throughRow === 0) return;
    for await (const part of bulkParts(db, accountId, key, throughRow)) yield { kind: 'results', text: part.results, rows: part.rows };
    if (stop) yield { kind: 'stopped', stop };
  }

  const skip = state.kind === 'unfinished' ? state.rows : 0;
  let held = skip;
  // Batches may be stored side by side: each checks the rows stored before its own first row.
  const onBatch: BatchHook = async (trx, batch) => {
    const added = await addBulkPart(trx, accountId, key, batch.rowsBefore, {
      lastRow: batch.lastRow,
      digest: batch.digest!,
      results: batch.text,
    });
    if (!added) throw new BulkKeyConflict();
  };
  const conflict = (rows: number): BulkPiece => ({ kind: 'stopped', stop: { reason: 'key_conflict', rows } });

  async function* pieces(): AsyncGenerator<BulkPiece> {
    const inner = runBulkImport({
      ...run,
      onBatch,
      tracking: {
        chain,
        skipRows: skip,
        ...(state.kind === 'unfinished' && state.digest !== undefined ? { prefixDigest: state.digest } : {}),
      },
    });
    let first = true;
    const finish = async (stop: BulkStop | null): Promise<boolean> =>
      finishBulkKey(db, accountId, key, { paramsHash, rows: held, digest: chain.digest, stop });
    for await (const piece of inner) {
      if (first) {
        first = false;
        // The rows stored before go first, once the body proved to start with them.
        if (!(piece.kind === 'stopped' && piece.stop.reason === 'key_conflict')) yield* replay(null, skip);
      }
      if (piece.kind === 'results') {
        held += piece.rows;
        yield piece;
        continue;
      }
      if (BODY_STOPS.has(piece.stop.reason)) {
        if (held === 0) await releaseBulkKey(db, accountId, key);
        else if (!(await finish(piece.stop))) {
          yield conflict(held);
          return;
        }
      }
      yield piece;
      return;
    }
    if (signal.aborted) return;
    if (first) yield* replay(null, skip);
    if (!(await finish(null))) yield conflict(held);
  }

  return { replayed: false, pieces: pieces() };
}
