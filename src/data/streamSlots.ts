import type { PgListener } from './notifications';

/**
 * How many event streams an account has open, across every process and node
 * (docs/decisions.md, "Live events"): an open stream holds one of the account's EVENTS_MAX_STREAMS
 * slots, a session advisory lock taken on its process's one listening connection
 * (src/data/notifications.ts). Postgres sees every process's locks, and a process that dies or
 * loses its connection gives its locks back with it, so no count outlives its streams. A process
 * holds as many locks as it has streams, not a connection per stream.
 */

/** Slot locks are `LOCK_BASE + account id * SLOTS_PER_ACCOUNT + slot` (single-key form, 'LCE' on top). */
const LOCK_BASE = "x'4c43450000000000'::bigint";
const SLOTS_PER_ACCOUNT = 4096;

/** Gives the slot back; harmless when called twice or after the session was lost. */
export type ReleaseSlot = () => Promise<void>;

export class StreamSlots {
  /** Slots this session holds, by account: a session may take its own lock again, so it must not try those. */
  private readonly held = new Map<number, Set<number>>();
  /** Takes run one at a time: two of one account in flight would both try the same free slot. */
  private turn: Promise<unknown> = Promise.resolve();
  /** Releases of the slots this session holds: a new set when the session is lost, so older ones give nothing back. */
  private current = new WeakSet<ReleaseSlot>();

  constructor(
    private readonly listener: PgListener,
    readonly maxPerAccount: number,
  ) {
    if (maxPerAccount > SLOTS_PER_ACCOUNT) throw new RangeError(`at most ${SLOTS_PER_ACCOUNT} streams per account`);
  }

  /** A free slot of the account, or undefined when all are taken (here or elsewhere). Rejects while the session is down. */
  take(accountId: number): Promise<ReleaseSlot | undefined> {
    const next = this.turn.then(() => this.takeNow(accountId));
    this.turn = next.catch(() => undefined);
    return next;
  }

  private async takeNow(accountId: number): Promise<ReleaseSlot | undefined> {
    const mine = this.held.get(accountId) ?? new Set<number>();
    const rows = await this.listener.query<{ slot: number }>(
      `select s as slot from generate_series(0, $2::int - 1) s
        where s <> all($3::int[]) and pg_try_advisory_lock(${LOCK_BASE} + $1::bigint * ${SLOTS_PER_ACCOUNT} + s)
        limit 1`,
      [accountId, this.maxPerAccount, [...mine]],
    );
    const slot = rows[0]?.slot;
    if (slot === undefined) return undefined;
    mine.add(slot);
    this.held.set(accountId, mine);
    const release: ReleaseSlot = async () => {
      if (!this.current.delete(release)) return;
      mine.delete(slot);
      if (mine.size === 0 && this.held.get(accountId) === mine) this.held.delete(accountId);
      await this.listener
        .query(`select pg_advisory_unlock(${LOCK_BASE} + $1::bigint * ${SLOTS_PER_ACCOUNT} + $2::int)`, [accountId, slot])
        .catch(() => undefined);
    };
    this.current.add(release);
    return release;
  }

  /**
   * Whether a slot is still held: false once released, or once the session it was taken on was
   * lost (a stream that took its slot just before the loss and opens after it would count for
   * nothing).
   */
  holds(release: ReleaseSlot): boolean {
    return this.current.has(release);
  }

  /** The session was lost (and its locks with it): forget every slot; their streams are ended by the caller. */
  sessionLost(): void {
    this.held.clear();
    this.current = new WeakSet();
  }
}
