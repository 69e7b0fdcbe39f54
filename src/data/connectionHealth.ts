import type pg from 'pg';

/**
 * Which pooled connections must not be used again: one that reported an error or ended (pg's
 * public 'error' and 'end' events), and one a stream gave up on (a COPY or cursor not closed
 * cleanly, so what the server still sends on it is unknown). The pool's `validate` hook
 * (createDb) refuses them, so the pool closes them instead of handing them out.
 */
const unusable = new WeakSet<pg.Client>();

/** Watches a new connection from its creation (the pool's afterCreate). */
export function watchConnection(conn: pg.Client): void {
  const mark = () => unusable.add(conn);
  conn.on('error', mark);
  conn.on('end', mark);
}

export function isUnusable(conn: pg.Client): boolean {
  return unusable.has(conn);
}

/** Gives up on a connection: marked for the pool to drop, and closed. */
export function discardConnection(conn: pg.Client): void {
  unusable.add(conn);
  conn.end().catch(() => undefined);
}
