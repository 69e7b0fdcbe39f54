/**
 * Output buffers reused across chunks and responses: a transcoded export fills a buffer, the
 * response writes it, and once the socket (or the compressor, or the encoder) has taken the
 * bytes the buffer comes back here for the next chunk, instead of a fresh allocation outside
 * the heap per chunk. Only buffers this pool lent out are taken back, each once; whatever is
 * never given back (a response cut short) is left to the garbage collector.
 */
export class BufferPool {
  private readonly free: ArrayBuffer[] = [];
  private readonly lent = new WeakSet<ArrayBuffer>();

  constructor(
    /** Bytes per buffer. */
    readonly size: number,
    /** Free buffers kept at most; more are dropped. */
    private readonly keep: number,
  ) {}

  /** A buffer of at least `minBytes` (the pool's size when that is enough; a one-off otherwise). */
  take(minBytes = 0): Buffer {
    if (minBytes > this.size) return Buffer.allocUnsafe(minBytes);
    const memory = this.free.pop() ?? new ArrayBuffer(this.size);
    this.lent.add(memory);
    return Buffer.from(memory, 0, this.size);
  }

  /** Gives back the buffer a chunk was cut from (a chunk of another origin is ignored). */
  give(chunk: Uint8Array): void {
    const memory = chunk.buffer as ArrayBuffer;
    if (!this.lent.has(memory)) return;
    this.lent.delete(memory);
    if (this.free.length < this.keep) this.free.push(memory);
  }

  /** Free buffers held now (for tests). */
  get available(): number {
    return this.free.length;
  }
}
