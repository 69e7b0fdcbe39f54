import { HttpProblem } from './problem';

/**
 * Admission control for bulk exports (docs/operations.md, "Limits"): at most `global` exports
 * run at once in this process, at most `perAccount` of them for one account. One more is
 * refused at once, never queued: a 429 (this account's share is used) or a 503 (the process
 * is full), both with Retry-After, so a client backs off instead of holding a socket open
 * while it waits. Each running export holds one connection of the export pool, so `global`
 * near EXPORT_POOL_MAX means an admitted export finds a connection without waiting.
 *
 * Counted per process: a node that dies takes its slots with it, and nothing in Redis could
 * be left holding a slot for an export that no longer runs.
 */
export type AdmissionRefusal = 'account' | 'global';

/** Seconds a refused export is told to wait: exports of a few seconds free slots quickly. */
const EXPORT_RETRY_AFTER_SECONDS = 5;

export class ExportAdmission {
  private runningTotal = 0;
  private readonly byAccount = new Map<number, number>();

  constructor(
    private readonly global: number,
    private readonly perAccount: number,
    private readonly onRefused: (reason: AdmissionRefusal) => void = () => undefined,
  ) {}

  get running(): number {
    return this.runningTotal;
  }

  /**
   * Takes a slot for one export of `accountId`, or throws the 429/503 problem. The returned
   * function gives the slot back; calling it more than once is harmless.
   */
  admit(accountId: number): () => void {
    const mine = this.byAccount.get(accountId) ?? 0;
    if (mine >= this.perAccount) {
      this.onRefused('account');
      throw new HttpProblem(
        'rate_limited',
        `this account already runs ${mine} exports at once, the most allowed; retry in ${EXPORT_RETRY_AFTER_SECONDS} s`,
        undefined,
        { 'Retry-After': String(EXPORT_RETRY_AFTER_SECONDS) },
      );
    }
    if (this.runningTotal >= this.global) {
      this.onRefused('global');
      throw new HttpProblem(
        'service_unavailable',
        `the server runs as many exports as it may at once; retry in ${EXPORT_RETRY_AFTER_SECONDS} s`,
        undefined,
        { 'Retry-After': String(EXPORT_RETRY_AFTER_SECONDS) },
      );
    }
    this.runningTotal++;
    this.byAccount.set(accountId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.runningTotal--;
      const left = (this.byAccount.get(accountId) ?? 1) - 1;
      if (left <= 0) this.byAccount.delete(accountId);
      else this.byAccount.set(accountId, left);
    };
  }
}
