import { performance } from 'node:perf_hooks';

/**
 * Bounds how long bulk stream work (rendering export chunks) runs in one turn of the event
 * loop, so that the rest of the loop's work comes round often.
 *
 * Why: Node's event loop (libuv) accepts one new connection per turn. Rendering is CPU work
 * done as fast as the clients read; with ten exports each rendering a chunk or more per turn,
 * turns took 20-40 ms, and a burst of 50 new connections waited up to a second to be
 * accepted, health checks and small requests among them, although no single callback was
 * slow.
 *
 * How: a piece of work asks `proceed(resume)` before each step. Within the current slice the
 * answer is yes; otherwise `resume` is queued and the caller stops. The queue is run from
 * setImmediate, after the turn's I/O (and its one accept): a slice of `sliceMs` opens, queued
 * work resumes in arrival order while the slice lasts, and what is left (or asks again
 * after the slice) waits for the next turn. The slice is a stretch of time: what the resumed
 * work sets off right after (a chunk written, the next one asked for) goes on while it lasts.
 * Work whose steps are long checks `within()` between smaller steps and, once the slice is
 * over, stops and `defer`s the rest: a step begun just before the slice ends would otherwise
 * run on for milliseconds. So bulk work takes about `sliceMs` per turn, each export in turn,
 * while two or more run.
 */
export class LoopSlices {
  private sliceEnds = 0;
  /** Insertion-ordered and without duplicates: a stream asking twice keeps its place. */
  private waiting = new Set<() => void>();
  private scheduled = false;
  /** Pieces of bulk work running (joined and not yet left). */
  private running = 0;

  constructor(private sliceMs: number) {}

  /**
   * A piece of bulk work starts (an export); `leave` when it ends. Slicing applies only while
   * two or more run: a lone export has no other export to take turns with, and unsliced it
   * renders in larger runs at less cost per row (docs/benchmarks.md).
   */
  join(): () => void {
    this.running++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.running--;
    };
  }

  /** Sets the slice length; 0 lets bulk work run whenever it is ready (no slicing). */
  configure(sliceMs: number): void {
    this.sliceMs = sliceMs;
  }

  /** True: go on now. False: stop; `resume` is called in a later slice. */
  proceed(resume: () => void): boolean {
    if (this.within()) return true;
    this.defer(resume);
    return false;
  }

  /** True while the current slice lasts, or when slicing does not apply now. */
  within(): boolean {
    return this.sliceMs <= 0 || (this.running < 2 && this.waiting.size === 0) || performance.now() < this.sliceEnds;
  }

  /** Queues `resume` for a later slice: work that stopped because its slice was over. */
  defer(resume: () => void): void {
    this.waiting.add(resume);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.runSlice);
    }
  }

  /** Pieces of bulk work joined and not yet left (for tests). */
  get active(): number {
    return this.running;
  }

  /** Work waiting for a slice (for tests). */
  get queued(): number {
    return this.waiting.size;
  }

  private readonly runSlice = (): void => {
    this.scheduled = false;
    const batch = this.waiting;
    this.waiting = new Set();
    this.sliceEnds = performance.now() + this.sliceMs;
    const it = batch.values();
    try {
      for (let next = it.next(); !next.done; next = it.next()) {
        batch.delete(next.value);
        next.value();
        if (performance.now() >= this.sliceEnds) break;
      }
    } finally {
      // Not reached this time: first in line next time, before what asked meanwhile.
      if (batch.size > 0) {
        for (const w of this.waiting) batch.add(w);
        this.waiting = batch;
      }
      if (this.waiting.size > 0 && !this.scheduled) {
        this.scheduled = true;
        setImmediate(this.runSlice);
      }
    }
  };
}
