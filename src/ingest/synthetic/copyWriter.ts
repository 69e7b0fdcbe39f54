import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/**
 * COPY FROM STDIN in text format, fed by a generator of ready-made row lines: rows are joined
 * into chunks of about a megabyte, so the stream sees few, large writes and its backpressure
 * pauses the generator. A row is one line of tab-separated values ending in `\n`; `\N` is NULL.
 */

/** Escapes a value for COPY text format. */
export function copyEscape(value: string): string {
  return /[\\\t\n\r]/.test(value) ? value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : value;
}

/** A timestamp as COPY reads it (ISO 8601, UTC). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A run-local sequence number in unique ids, nine digits so they sort as numbers. */
export function sequenceNumber(n: number): string {
  return n.toString().padStart(9, '0');
}

const CHUNK_CHARS = 1 << 20;

export async function copyRows(
  conn: pg.PoolClient,
  table: string,
  columns: string[],
  rows: () => Generator<string>,
  onRows: (n: number) => void,
): Promise<void> {
  function* chunks(): Generator<string> {
    let buf = '';
    let n = 0;
    for (const row of rows()) {
      buf += row;
      n += 1;
      if (buf.length >= CHUNK_CHARS) {
        yield buf;
        onRows(n);
        buf = '';
        n = 0;
      }
    }
    if (buf.length > 0) {
      yield buf;
      onRows(n);
    }
  }
  const stream = conn.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  await pipeline(Readable.from(chunks(), { objectMode: false }), stream);
}
