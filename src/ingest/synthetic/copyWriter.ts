/** The synthetic data's COPY lines (src/data/copyIn.ts escapes, formats times and copies them). */

/** A run-local sequence number in unique ids, nine digits so they sort as numbers. */
export function sequenceNumber(n: number): string {
  return n.toString().padStart(9, '0');
}
