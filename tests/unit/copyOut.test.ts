import { EventEmitter } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import type pg from 'pg';
import { CopyOut } from '../../src/data/copyOut';
import type { PgConnection } from '../../src/data/cursorStream';

/**
 * CopyOut's reading of the protocol, on byte streams cut at every position: what it passes on
 * is exactly the CopyData payloads, and what it hands back to pg's parser starts exactly after
 * CopyDone, or at an ErrorResponse. The real server's side is in
 * tests/integration/copyOut.test.ts.
 */

function message(code: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(code, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const payloads = [Buffer.from('first row'), Buffer.alloc(0), Buffer.from('x'.repeat(40)), Buffer.from('last')];
const copyOutResponse = message('H', Buffer.from([1, 0, 1, 0, 1]));
const notice = message('N', Buffer.from('SNOTICE\0Mhello\0\0', 'latin1'));
const afterDone = Buffer.concat([message('C', Buffer.from('COPY 4\0')), message('Z', Buffer.from('I'))]);
const error = Buffer.concat([message('E', Buffer.from('SERROR\0Mdivision by zero\0\0', 'latin1')), message('Z', Buffer.from('I'))]);

/** A connection whose socket delivers `pieces`, with pg's parser replaced by a recorder. */
function run(pieces: Buffer[]) {
  const stream = new PassThrough();
  const handedBack: Buffer[] = [];
  const connection = {
    stream,
    query: () => {
      // Fresh buffers, as a socket delivers them: CopyOut may move bytes within a chunk.
      for (const piece of pieces) stream.write(Buffer.from(piece));
    },
  } as unknown as pg.Connection;
  const conn = Object.assign(new EventEmitter(), {
    readyForQuery: false,
    connection: new EventEmitter(),
    query(submittable: pg.Submittable) {
      submittable.submit(connection);
      return submittable;
    },
  }) as unknown as PgConnection;
  // pg's parser: it records what it is given and is then ready for the next query.
  stream.on('data', (b: Buffer) => {
    handedBack.push(b);
    conn.readyForQuery = true;
    conn.connection.emit('readyForQuery');
  });
  const copy = new CopyOut(conn, 'COPY (select 1) TO STDOUT', () => Promise.resolve());
  return { copy, handedBack };
}

async function dataOf(copy: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of copy) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** `whole` cut into pieces of `size` bytes. */
function cut(whole: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let i = 0; i < whole.length; i += size) pieces.push(whole.subarray(i, i + size));
  return pieces;
}

/** `whole` cut in two at `at`. */
const split = (whole: Buffer, at: number): Buffer[] => [whole.subarray(0, at), whole.subarray(at)];

describe('CopyOut (the protocol, cut at every position)', () => {
  const copyData = payloads.map((p) => message('d', p));
  const body = Buffer.concat([copyOutResponse, copyData[0]!, notice, ...copyData.slice(1), message('c')]);
  const whole = Buffer.concat([body, afterDone]);

  it('when the stream is cut in two anywhere, then the data is the payloads and pg gets everything after CopyDone', async () => {
    for (let at = 0; at <= whole.length; at++) {
      const { copy, handedBack } = run(split(whole, at));
      expect((await dataOf(copy)).toString('latin1')).toBe(Buffer.concat(payloads).toString('latin1'));
      expect(Buffer.concat(handedBack).equals(afterDone)).toBe(true);
    }
  });

  it('when the stream comes in pieces of every size, then the data and the hand-back are the same', async () => {
    for (let size = 1; size <= 16; size++) {
      const { copy, handedBack } = run(cut(whole, size));
      expect((await dataOf(copy)).equals(Buffer.concat(payloads))).toBe(true);
      expect(Buffer.concat(handedBack).equals(afterDone)).toBe(true);
    }
  });

  it('when an ErrorResponse follows some rows, then pg gets it from its first byte wherever the stream is cut', async () => {
    const failing = Buffer.concat([copyOutResponse, copyData[0]!, copyData[2]!, error]);
    for (let at = 0; at <= failing.length; at++) {
      const { copy, handedBack } = run(split(failing, at));
      const chunks: Buffer[] = [];
      copy.on('data', (c: Buffer) => chunks.push(c));
      await new Promise((resolve) => setImmediate(resolve));
      expect(Buffer.concat(handedBack).equals(error)).toBe(true);
      expect(Buffer.concat(chunks).toString()).toBe(`first row${'x'.repeat(40)}`);
      copy.destroy();
    }
  });
});
