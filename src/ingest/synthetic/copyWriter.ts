/** The synthetic data's COPY lines: values as COPY text format reads them (src/data/copyIn.ts copies them). */

/** A timestamp as COPY reads it (ISO 8601, UTC). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A run-local sequence number in unique ids, nine digits so they sort as numbers. */
export function sequenceNumber(n: number): string {
  return n.toString().padStart(9, '0');
}
