/**
 * Finds the members of a flat JSON object in its UTF-8 text without parsing it into an object:
 * where each key and each string value lies, and whether it holds escapes. The lead exports
 * read the data fields of a lead this way from the jsonb text Postgres sends. Anything else (a
 * value that is not a string, text that is not an object) makes `scan` answer false, and the
 * caller takes its JSON.parse path.
 */
export class FlatJsonObject {
  count = 0;
  keyStart = new Int32Array(32);
  keyEnd = new Int32Array(32);
  keyEscaped = new Uint8Array(32);
  valueStart = new Int32Array(32);
  valueEnd = new Int32Array(32);
  valueEscaped = new Uint8Array(32);

  /** Scans `b[from .. to)`; ranges exclude the quotes. */
  scan(b: Buffer, from: number, to: number): boolean {
    this.count = 0;
    let i = skipSpace(b, from, to);
    if (b[i] !== 0x7b) return false;
    i = skipSpace(b, i + 1, to);
    if (b[i] === 0x7d) return skipSpace(b, i + 1, to) === to;
    for (;;) {
      if (b[i] !== 0x22) return false;
      const n = this.count;
      if (n === this.keyStart.length) this.grow();
      this.keyStart[n] = i + 1;
      i = this.stringEnd(b, i + 1, to, this.keyEscaped, n);
      if (i < 0) return false;
      this.keyEnd[n] = i;
      i = skipSpace(b, i + 1, to);
      if (b[i] !== 0x3a) return false;
      i = skipSpace(b, i + 1, to);
      if (b[i] !== 0x22) return false;
      this.valueStart[n] = i + 1;
      i = this.stringEnd(b, i + 1, to, this.valueEscaped, n);
      if (i < 0) return false;
      this.valueEnd[n] = i;
      this.count = n + 1;
      i = skipSpace(b, i + 1, to);
      if (b[i] === 0x2c) {
        i = skipSpace(b, i + 1, to);
        continue;
      }
      if (b[i] === 0x7d) return skipSpace(b, i + 1, to) === to;
      return false;
    }
  }

  /** Whether key n is `name` (given as its UTF-8 bytes and as a string, for keys with escapes). */
  keyIs(b: Buffer, n: number, name: Buffer, nameText: string): boolean {
    const start = this.keyStart[n]!;
    const len = this.keyEnd[n]! - start;
    if (this.keyEscaped[n]) return JSON.parse(b.toString('utf8', start - 1, this.keyEnd[n]! + 1)) === nameText;
    if (len !== name.length) return false;
    for (let k = 0; k < len; k++) if (b[start + k] !== name[k]) return false;
    return true;
  }

  /** The position of the closing quote of a string starting at `i`, or -1. */
  private stringEnd(b: Buffer, i: number, to: number, escaped: Uint8Array, n: number): number {
    escaped[n] = 0;
    while (i < to) {
      const c = b[i]!;
      if (c === 0x22) return i;
      if (c === 0x5c) {
        escaped[n] = 1;
        i += 2;
      } else i++;
    }
    return -1;
  }

  private grow(): void {
    const size = this.keyStart.length * 2;
    const ints = (a: Int32Array) => {
      const x = new Int32Array(size);
      x.set(a);
      return x;
    };
    const bytes = (a: Uint8Array) => {
      const x = new Uint8Array(size);
      x.set(a);
      return x;
    };
    this.keyStart = ints(this.keyStart);
    this.keyEnd = ints(this.keyEnd);
    this.valueStart = ints(this.valueStart);
    this.valueEnd = ints(this.valueEnd);
    this.keyEscaped = bytes(this.keyEscaped);
    this.valueEscaped = bytes(this.valueEscaped);
  }
}

function skipSpace(b: Buffer, i: number, to: number): number {
  while (i < to) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}
