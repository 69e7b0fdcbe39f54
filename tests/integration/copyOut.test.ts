import type { Readable } from 'node:stream';
import pg from 'pg';
import { databaseUrlNamed, uniq } from '../harness/testApp';
import { CopyOut } from '../../src/data/copyOut';
import type { PgConnection } from '../../src/data/cursorStream';

/**
 * CopyOut against the real server: the data comes whole and unchanged (many rows, rows larger
 * than a socket read, notices between rows), a slow reader holds Postgres back, and after an
 * end, an error or a cancel the connection answers its next query. The framing cut at every
 * position is in tests/unit/copyOut.test.ts.
 */

let client: PgConnection;
let done: boolean[];

beforeEach(async () => {
  client = new pg.Client({ connectionString: databaseUrlNamed(uniq('lcm-copyout-')) }) as PgConnection;
  await client.connect();
  done = [];
});
afterEach(() => client.end());

function copyOut(sql: string): CopyOut {
  return new CopyOut(client, `COPY (${sql}) TO STDOUT`, (clean) => {
    done.push(clean);
    return Promise.resolve();
  });
}

async function text(copy: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of copy) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const nextQueryAnswers = async () => expect((await client.query<{ one: number }>('select 1 as one')).rows[0]!.one).toBe(1);

describe('CopyOut', () => {
  it('when 200,000 rows of many lengths are copied, then the data is every row unchanged and the connection answers next', async () => {
    const copy = copyOut(`select g, repeat('é', g % 700) from generate_series(1, 200000) g`);
    await copy.ready;
    const got = await text(copy);
    let expected = '';
    for (let g = 1; g <= 200_000; g++) expected += `${g}\t${'é'.repeat(g % 700)}\n`;
    expect(got.length).toBe(expected.length);
    expect(got === expected).toBe(true);
    await nextQueryAnswers();
    expect(done).toEqual([true]);
  });

  it('when a row is larger than many socket reads, then it comes whole', async () => {
    const got = await text(copyOut(`select repeat('z', 3000000) union all select 'end'`));
    expect(got).toBe(`${'z'.repeat(3_000_000)}\nend\n`);
    await nextQueryAnswers();
  });

  it('when Postgres sends notices between the rows, then the data has the rows only', async () => {
    await client.query(
      `create function pg_temp.noisy(i int) returns int language plpgsql as $$ begin raise notice 'row %', i; return i; end $$`,
    );
    const got = await text(copyOut(`select pg_temp.noisy(g) from generate_series(1, 2000) g`));
    expect(got).toBe(Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join(''));
    await nextQueryAnswers();
  });

  it('when the COPY fails after many rows, then the stream fails with the error and the connection answers next', async () => {
    const copy = copyOut(`select 1 / (g - 150000) from generate_series(1, 200000) g`);
    await copy.ready;
    await expect(text(copy)).rejects.toThrow(/division by zero/);
    await nextQueryAnswers();
    expect(done).toEqual([true]);
  });

  it('when the stream is destroyed mid-COPY, then the COPY is cancelled and the connection answers next', async () => {
    const copy = copyOut(`select g, repeat('x', 500) from generate_series(1, 2000000) g`);
    await copy.ready;
    expect(copy.read()).not.toBeNull();
    const closed = new Promise((resolve) => copy.once('close', resolve));
    const started = Date.now();
    copy.destroy();
    await closed;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(done).toEqual([true]);
    await nextQueryAnswers();
  });

  it('when nobody reads, then at most one chunk waits in the stream (the socket is paused) and nothing is lost', async () => {
    const copy = copyOut(`select g, repeat('y', 200) from generate_series(1, 300000) g`);
    await copy.ready;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(copy.readableLength).toBeLessThanOrEqual(1);
    const got = await text(copy);
    expect(got.split('\n').length - 1).toBe(300_000);
    expect(got.endsWith(`300000\t${'y'.repeat(200)}\n`)).toBe(true);
    await nextQueryAnswers();
  });
});
