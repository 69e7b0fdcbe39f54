import { randomUUID } from 'node:crypto';
import { open, unlink, FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';

export interface SpoolOptions {
  /** Bytes held in memory for a reader that does not keep up; more goes to a file. */
  memoryBytes: number;
  /** Bytes the file holds at most for the reader; past that, writes wait for it (backpressure). */
  fileBytes: number;
  /** Where the file is made (the OS's temporary folder by default). */
  directory?: string;
}

/** Bytes read back from the file at a time. */
const READ_SIZE = 256 * 1024;

/**
 * A pass-through that takes what is written at once, whether or not its reader reads: up to
 * `memoryBytes` in memory, then in a file, and only past `fileBytes` waiting in the file does a
 * write wait. Its reader gets the bytes in the order written, at its own pace.
 *
 * It decouples a producer from a reader that cannot read yet: an HTTP client that sends its
 * whole request body before it reads any of the answer, while the server answers as it reads.
 * With backpressure all the way, the server would stop reading the body once the socket
 * buffers are full of answer, and both sides would wait on each other.
 *
 * The file is removed as soon as it is open: it lives as long as its handle, and nothing is
 * left behind should the process die. Written strings are taken as UTF-8; the reader gets Buffers.
 */
export class Spool extends Duplex {
  private readonly memory: Buffer[] = [];
  private memoryHeld = 0;
  private file: FileHandle | undefined;
  private opening: Promise<FileHandle> | undefined;
  /** Bytes written to the file and read back from it; the file is used from offset 0 again once read. */
  private fileWritten = 0;
  private fileRead = 0;
  /** A write to the file is under way (at offset fileWritten): the file is not started again meanwhile. */
  private writingFile = false;
  /** A write waiting for the reader to take bytes from a full file. */
  private waitingWrite: (() => void) | undefined;
  private reading = false;
  private wanted = false;
  private ended = false;

  constructor(private readonly options: SpoolOptions) {
    super({ writableObjectMode: true, decodeStrings: false });
  }

  /** Bytes held for the reader, in memory and in the file. */
  get held(): number {
    return this.memoryHeld + this.fileWritten - this.fileRead;
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    // Into memory only while nothing waits in the file: what is read must come out in order.
    if (this.fileWritten === this.fileRead && this.memoryHeld + bytes.length <= this.options.memoryBytes) {
      this.memory.push(bytes);
      this.memoryHeld += bytes.length;
      this.pump();
      callback();
      return;
    }
    this.toFile(bytes).then(() => {
      this.pump();
      if (this.fileWritten - this.fileRead <= this.options.fileBytes) callback();
      else this.waitingWrite = () => callback();
    }, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.ended = true;
    this.pump();
    callback();
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.memory.length = 0;
    const file = this.file ?? this.opening;
    this.file = undefined;
    this.opening = undefined;
    if (file === undefined) {
      callback(error);
      return;
    }
    void Promise.resolve(file)
      .then((handle) => handle.close())
      .then(
        () => callback(error),
        () => callback(error),
      );
  }

  private async toFile(bytes: Buffer): Promise<void> {
    this.writingFile = true;
    try {
      const file = this.file ?? (await this.openFile());
      let offset = 0;
      while (offset < bytes.length) {
        const { bytesWritten } = await file.write(bytes, offset, bytes.length - offset, this.fileWritten + offset);
        offset += bytesWritten;
      }
      this.fileWritten += bytes.length;
    } finally {
      this.writingFile = false;
    }
  }

  private openFile(): Promise<FileHandle> {
    this.opening ??= (async () => {
      const name = path.join(this.options.directory ?? tmpdir(), `lcm-spool-${randomUUID()}`);
      const handle = await open(name, 'w+', 0o600);
      await unlink(name);
      if (this.destroyed) {
        await handle.close();
        throw new Error('the spool was destroyed while its file was opened');
      }
      this.file = handle;
      return handle;
    })();
    return this.opening;
  }

  /** Hands the reader what it wants: memory first (it is older than anything in the file), then the file. */
  private pump(): void {
    while (this.wanted && this.memory.length > 0) {
      const bytes = this.memory.shift()!;
      this.memoryHeld -= bytes.length;
      this.wanted = this.push(bytes);
    }
    if (!this.wanted || this.reading || this.destroyed) return;
    if (this.fileRead < this.fileWritten) {
      this.readFile();
    } else if (this.ended && this.memory.length === 0) {
      this.push(null);
    }
  }

  private readFile(): void {
    const file = this.file!;
    const length = Math.min(READ_SIZE, this.fileWritten - this.fileRead);
    this.reading = true;
    file.read(Buffer.allocUnsafe(length), 0, length, this.fileRead).then(
      ({ bytesRead, buffer }) => {
        this.reading = false;
        if (this.destroyed) return;
        this.fileRead += bytesRead;
        // All read back: the next bytes spilled start the file again from its start.
        if (this.fileRead === this.fileWritten && !this.writingFile) this.fileRead = this.fileWritten = 0;
        this.wanted = this.push(buffer.subarray(0, bytesRead));
        const waiting = this.waitingWrite;
        if (waiting !== undefined && this.fileWritten - this.fileRead <= this.options.fileBytes) {
          this.waitingWrite = undefined;
          waiting();
        }
        this.pump();
      },
      (err: unknown) => {
        this.reading = false;
        this.destroy(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }
}
