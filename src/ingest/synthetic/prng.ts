/**
 * The pseudo-random source of `lcm generate`: sfc32 seeded through splitmix32 — small, fast,
 * good enough for synthetic data. Each phase draws from its own stream of the seed, so a phase
 * can change without shifting the numbers of the others.
 */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    let s = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
    const splitmix = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = splitmix();
    this.b = splitmix();
    this.c = splitmix();
    this.d = splitmix();
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** [0, 1) */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Integer in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** Index chosen by weight. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i]!;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** Roughly log-normal duration in ms between lo and hi seconds, most mass near lo. */
  duration(loSec: number, hiSec: number): number {
    const u = this.next();
    return Math.round((loSec + (hiSec - loSec) * u * u * u) * 1000) + this.int(1000);
  }
}

/** The streams of one seed, one per phase that draws numbers. */
export const STREAMS = {
  /** User names and numbers, then the days of the lead pools. */
  organization: 1,
  /** Lead placement, call counts and call outcomes. */
  plan: 2,
  /** Lead data (names, phones, fields). */
  leadData: 3,
  /** Ready-period lengths. */
  readyPeriods: 4,
} as const;
