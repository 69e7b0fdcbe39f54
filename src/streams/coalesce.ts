import { Transform, TransformCallback } from 'node:stream';

export interface CoalesceOptions {
  /** Emit a chunk once about this many bytes are pending. Default 64 KiB. */
  chunkSize?: number;
  /** Longest time pending data waits for more before it is emitted. Default 20 ms. */
  maxDelayMs?: number;
}

const DEFAULT_CHUNK_SIZE = 64 * 1024;
const DEFAULT_MAX_DELAY_MS = 20;

/**
 * Gathers many small writes (one per row) into few large chunks: a socket write per row is a
 * throughput trap. Accepts strings (kept as strings and encoded as UTF-8 once per chunk) and
 * Buffers; emits Buffers of about `chunkSize` bytes, and whatever is pending after
 * `maxDelayMs` (so a slow query still shows its rows soon) and at the end. The very first
 * bytes are not held for the delay: they leave once the burst that brought them is written.
 */
export class Coalescer extends Transform {
  private readonly chunkSize: number;
  private readonly maxDelayMs: number;
  // Pending text: V8 concatenates strings as ropes, so += is cheap and Buffer.from flattens once.
  private text = '';
  private buffers: Buffer[] = [];
  private bufferedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private emittedAny = false;
  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.immediate = undefined;
    this.emitPending();
  };

  constructor(options: CoalesceOptions = {}) {
    const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
    super({ decodeStrings: false, writableHighWaterMark: chunkSize, readableHighWaterMark: chunkSize });
    this.chunkSize = chunkSize;
    this.maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  }

  override _transform(chunk: string | Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (typeof chunk === 'string') {
      this.text += chunk;
    } else {
      if (chunk.length >= this.chunkSize && this.text.length === 0 && this.bufferedBytes === 0) {
        // Already large: pass it on without copying.
        this.emittedAny = true;
        this.push(chunk);
        callback();
        return;
      }
      this.moveTextToBuffers();
      this.buffers.push(chunk);
      this.bufferedBytes += chunk.length;
    }
    // String length counts UTF-16 units, not bytes: close enough for a chunk size.
    if (this.text.length + this.bufferedBytes >= this.chunkSize) this.emitPending();
    else if (!this.emittedAny) {
      // The first bytes go out as soon as the current burst (a cursor batch arrives in one
      // turn of the event loop) is written, not after the delay: time to first byte matters.
      this.immediate ??= setImmediate(this.onTimer);
    } else if (this.timer === undefined) {
      this.timer = setTimeout(this.onTimer, this.maxDelayMs);
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.emitPending();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.clearTimer();
    this.text = '';
    this.buffers = [];
    this.bufferedBytes = 0;
    callback(error);
  }

  private moveTextToBuffers(): void {
    if (this.text.length === 0) return;
    const bytes = Buffer.from(this.text, 'utf8');
    this.text = '';
    this.buffers.push(bytes);
    this.bufferedBytes += bytes.length;
  }

  private emitPending(): void {
    this.clearTimer();
    if (this.destroyed) return;
    let out: Buffer | undefined;
    if (this.bufferedBytes === 0) {
      if (this.text.length > 0) out = Buffer.from(this.text, 'utf8');
    } else {
      this.moveTextToBuffers();
      out = this.buffers.length === 1 ? this.buffers[0] : Buffer.concat(this.buffers, this.bufferedBytes);
    }
    this.text = '';
    this.buffers = [];
    this.bufferedBytes = 0;
    if (out !== undefined && out.length > 0) {
      this.emittedAny = true;
      this.push(out);
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.immediate !== undefined) {
      clearImmediate(this.immediate);
      this.immediate = undefined;
    }
  }
}

export function coalesce(options?: CoalesceOptions): Coalescer {
  return new Coalescer(options);
}
