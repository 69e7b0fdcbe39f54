import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Spool } from '../../src/streams/spool';

/** Writes a chunk and settles when the spool has taken it (its write callback). */
const taken = (spool: Spool, chunk: Buffer | string) =>
  new Promise<void>((resolve, reject) => spool.write(chunk, (err) => (err ? reject(err) : resolve())));

async function readAll(spool: Spool): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of spool) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

describe('Spool', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'spool-test-'));
  });
  afterEach(() => rm(directory, { recursive: true, force: true }));

  it('when the reader reads nothing until the writer is done, then every write is taken at once (memory, then the file) and read back in order', async () => {
    const spool = new Spool({ memoryBytes: 256 * 1024, fileBytes: 64 * 1024 * 1024, directory });
    const chunks = Array.from({ length: 80 }, () => randomBytes(64 * 1024));
    for (const chunk of chunks) await taken(spool, chunk);
    expect(spool.held).toBe(80 * 64 * 1024);
    // The file was removed as soon as it was open: nothing is left in the folder, even now.
    expect(await readdir(directory)).toEqual([]);
    spool.end();
    expect((await readAll(spool)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('when writes and reads interleave at random, then the bytes come out in the order written, across memory and file', async () => {
    const spool = new Spool({ memoryBytes: 10_000, fileBytes: 1024 * 1024 * 1024, directory });
    const chunks = Array.from({ length: 400 }, (_, i) => randomBytes(1 + ((i * 7919) % 30_000)));
    const reading = (async () => {
      const parts: Buffer[] = [];
      for await (const part of spool) {
        parts.push(part as Buffer);
        if (parts.length % 5 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      return Buffer.concat(parts);
    })();
    for (const [i, chunk] of chunks.entries()) {
      await taken(spool, chunk);
      if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    spool.end();
    expect((await reading).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('when the file holds its limit, then a write waits until the reader has taken bytes', async () => {
    const spool = new Spool({ memoryBytes: 64 * 1024, fileBytes: 512 * 1024, directory });
    let takenChunks = 0;
    const chunks = Array.from({ length: 40 }, () => randomBytes(64 * 1024));
    const writing = (async () => {
      for (const chunk of chunks) {
        await taken(spool, chunk);
        takenChunks += 1;
      }
      spool.end();
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // One chunk in memory, the file up to its limit, and the write that went past it waiting.
    expect(takenChunks).toBeLessThan(12);
    expect(spool.held).toBeLessThanOrEqual(64 * 1024 + 512 * 1024 + 64 * 1024);
    const read = await readAll(spool);
    await writing;
    expect(takenChunks).toBe(40);
    expect(read.equals(Buffer.concat(chunks))).toBe(true);
  });

  it('when strings are written, then they are read as their UTF-8 bytes', async () => {
    const spool = new Spool({ memoryBytes: 4, fileBytes: 1024, directory });
    for (const text of ['[\n', '{"name":"Ærø"}', ',\n', '{"name":"😀"}', '\n]\n']) await taken(spool, text);
    spool.end();
    expect((await readAll(spool)).toString('utf8')).toBe('[\n{"name":"Ærø"},\n{"name":"😀"}\n]\n');
  });

  it('when it is destroyed while bytes wait in its file, then it closes without an error and leaves no file', async () => {
    const spool = new Spool({ memoryBytes: 1024, fileBytes: 1024 * 1024, directory });
    for (let i = 0; i < 10; i++) await taken(spool, randomBytes(10_000));
    const errors: unknown[] = [];
    spool.on('error', (err) => errors.push(err));
    const closed = new Promise((resolve) => spool.once('close', resolve));
    spool.destroy();
    await closed;
    expect(errors).toEqual([]);
    expect(await readdir(directory)).toEqual([]);
  });
});
