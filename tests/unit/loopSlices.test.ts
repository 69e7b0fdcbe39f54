import { PassThrough } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import { LoopSlices } from '../../src/streams/loopSlices';
import { sliceCopyParsing } from '../../src/data/exportSession';
import { transcodeCopy } from '../../src/data/copyTranscode';
import { BufferPool } from '../../src/streams/bufferPool';

/** Burns the CPU for `ms` (a step of rendering). */
const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/**
 * Counts the event loop's turns: an immediate that re-arms itself runs once in each turn's
 * check phase (before the slices' own immediate, which is armed after it), whatever the
 * turn's length. A timer would miss a turn shorter than its 1 ms on a loaded machine.
 */
function turnCounter() {
  let stopped = false;
  const counter = { turn: 0, stop: () => (stopped = true) };
  const tick = () => {
    if (stopped) return;
    counter.turn++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return counter;
}

interface Step {
  id: string;
  turn: number;
  /** Two or more pieces were running when it was taken (slicing applied). */
  together: boolean;
}

/** A piece of bulk work: `steps` steps of `stepMs` each, asking for a slice before each. */
function worker(slices: LoopSlices, id: string, steps: number, stepMs: number, log: Step[], turns: { turn: number }) {
  let left = steps;
  const leave = slices.join();
  return new Promise<void>((done) => {
    const run = (): void => {
      while (left > 0) {
        if (!slices.proceed(run)) return;
        const together = slices.active >= 2;
        busy(stepMs);
        left--;
        log.push({ id, turn: turns.turn, together });
      }
      leave();
      done();
    };
    // Started once the caller has set off every piece (they run side by side, as exports do).
    queueMicrotask(run);
  });
}

describe('LoopSlices', () => {
  it('when bulk work asks outside a slice, then it waits for a later turn and resumes in order, once however often it asked', async () => {
    const slices = new LoopSlices(50);
    slices.join();
    slices.join();
    const ran: string[] = [];
    const a = () => ran.push('a');
    const b = () => ran.push('b');
    expect(slices.proceed(a)).toBe(false);
    expect(slices.proceed(b)).toBe(false);
    expect(slices.proceed(a)).toBe(false);
    expect(slices.queued).toBe(2);
    expect(ran).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(ran).toEqual(['a', 'b']);
    expect(slices.queued).toBe(0);
  });

  it('when several pieces of work each want more than a slice, then each turn runs about one slice of them, taking turns', async () => {
    const slices = new LoopSlices(4);
    const turns = turnCounter();
    const log: Step[] = [];
    await Promise.all(['a', 'b', 'c'].map((id) => worker(slices, id, 8, 3, log, turns)));
    turns.stop();
    // The steps taken while others ran (the last piece left alone is not sliced, by design).
    const perTurn = new Map<number, number>();
    for (const s of log.filter((x) => x.together)) perTurn.set(s.turn, (perTurn.get(s.turn) ?? 0) + 1);
    // A slice of 4 ms ends after the step that passes it: at most two steps of 3 ms per turn.
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(2);
    expect(log).toHaveLength(24);
    // Each piece got going within the first turns instead of waiting for the others to finish.
    const firstTurn = (id: string) => log.find((s) => s.id === id)!.turn;
    const start = log[0]!.turn;
    expect(['a', 'b', 'c'].map((id) => firstTurn(id) - start)).toEqual(expect.arrayContaining([0]));
    expect(Math.max(...['a', 'b', 'c'].map((id) => firstTurn(id) - start))).toBeLessThanOrEqual(2);
  });

  it('when one piece of work runs alone, then it is not sliced: it runs whenever it asks', async () => {
    const slices = new LoopSlices(4);
    const turns = turnCounter();
    const log: Step[] = [];
    await worker(slices, 'a', 4, 3, log, turns);
    turns.stop();
    expect(new Set(log.map((s) => s.turn)).size).toBe(1);
  });

  it('when slicing is off (0), then work runs whenever it asks, all in one turn', async () => {
    const slices = new LoopSlices(0);
    const turns = turnCounter();
    const log: Step[] = [];
    await Promise.all(['a', 'b'].map((id) => worker(slices, id, 4, 1, log, turns)));
    turns.stop();
    expect(new Set(log.map((s) => s.turn)).size).toBe(1);
  });
});

/** Binary COPY data of `rows` one-column tuples (an int4 each), cut into chunks of `perChunk` tuples. */
function binaryCopyChunks(rows: number, perChunk: number): Buffer[] {
  const tuple = (n: number) => {
    const b = Buffer.alloc(10);
    b.writeInt16BE(1, 0);
    b.writeInt32BE(4, 2);
    b.writeInt32BE(n, 6);
    return b;
  };
  const head = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
  const chunks: Buffer[] = [];
  for (let i = 0; i < rows; i += perChunk) {
    const part = Array.from({ length: Math.min(perChunk, rows - i) }, (_, k) => tuple(i + k));
    chunks.push(Buffer.concat(i === 0 ? [head, ...part] : part));
  }
  chunks.push(Buffer.from([0xff, 0xff]));
  return chunks;
}

describe('transcodeCopy in slices', () => {
  it('when rendering runs past its slice, then it stops after the socket read at hand and goes on in a later turn, the rows whole and in order', async () => {
    const slices = new LoopSlices(2);
    const other = slices.join(); // a second export: slicing applies
    const turns = turnCounter();
    const rowTurns: number[] = [];
    const seen: number[] = [];
    // 1 ms a row, 3 rows a socket read: a read takes 3 ms, more than the 2 ms slice.
    const renderer = {
      head: () => undefined,
      row: (t: { buf: Buffer; pos: Int32Array }, w: { ascii(s: string): void }) => {
        busy(1);
        const n = t.buf.readInt32BE(t.pos[0]);
        seen.push(n);
        rowTurns.push(turns.turn);
        w.ascii(`${n}\n`);
      },
      tail: () => undefined,
    };
    // Object mode, one socket read a chunk, as the export's COPY stream hands them on.
    const source = new PassThrough({ objectMode: true });
    for (const c of binaryCopyChunks(30, 3)) source.write(c);
    source.end();
    const out = transcodeCopy(source, renderer, new BufferPool(1024 * 1024, 4), slices);
    let text = '';
    for await (const chunk of out) text += Buffer.from(chunk as Uint8Array).toString();
    turns.stop();
    other();
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(text).toBe(seen.map((n) => `${n}\n`).join(''));
    const perTurn = new Map<number, number>();
    for (const t of rowTurns) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    // At most one read (3 rows) begun within a slice, and the next one left for a later turn.
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(3);
    expect(perTurn.size).toBeGreaterThanOrEqual(10);
  });
});

describe('sliceCopyParsing', () => {
  it('when given a COPY TO stream of the installed pg-copy-streams, then it finds the socket listener it slices', () => {
    // A library version that keeps its listener elsewhere would leave COPY parsing unsliced.
    expect(sliceCopyParsing(copyTo('COPY (SELECT 1) TO STDOUT'), new PassThrough())).toBe(true);
  });
});
