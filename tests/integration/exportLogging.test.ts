import http from 'node:http';
import { uniq } from '../harness/testApp';
import { insertCalls } from '../harness/bulkData';
import { abortMidStream } from '../harness/slowClient';
import { useTestWorld } from '../harness/useTestWorld';
import { untilValue } from '../harness/until';

/** pino's numeric levels. */
const INFO = 30;
const ERROR = 50;

interface LogLine {
  level: number;
  msg?: string;
  reqId?: string;
  req?: { id?: string };
  err?: { message?: string };
}

/** Sends a GET and drops the connection after `ms`, whatever has arrived by then. */
function leaveAfter(port: number, path: string, headers: Record<string, string>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers }, (res) => res.resume());
    req.once('error', () => undefined);
    setTimeout(() => {
      req.destroy();
      resolve();
    }, ms);
  });
}

/**
 * A client that leaves in the middle of an export is no server failure: it is logged at `info`,
 * never at `error` (docs/decisions.md, Overload and timeouts), whether it leaves while the rows
 * stream or before the first of them (while the export reads what names them).
 */
describe('the log of an export whose client leaves', () => {
  const { t, w } = useTestWorld({ LOG_LEVEL: 'info', AUTH_CACHE_TTL_MS: '600000' });
  let port: number;
  let paths: string[];

  beforeAll(async () => {
    await insertCalls(t, w, 5_000);
    port = (await t.listen()).port;
    const window = 'StartTime=2026-05-06T08:00:00Z&TimeSpan=PT4H';
    const root = `OrgCode=${encodeURIComponent(w.units.root)}&${window}`;
    paths = [
      `/api/calls?${root}&Include=campaign,user`,
      `/api/calls?${root}`,
      `/api/calls/csv?${root}`,
      `/api/calls/csv?${root}&Encoding=windows-1252`,
      `/api/organizationalunits/${encodeURIComponent(w.units.team)}/calls?${window}`,
      '/api/simpleleads',
      '/api/rawleads',
    ];
  }, 120_000);

  const lines = () => t.logs.map((l) => JSON.parse(l) as LogLine);
  const idOf = (l: LogLine) => l.reqId ?? l.req?.id;

  /**
   * The log lines of these requests, once each has its request line or 20 s have passed: a client
   * that leaves at once may be gone before its request was written, and then no line comes.
   */
  async function linesOf(ids: string[]): Promise<LogLine[]> {
    const wanted = new Set(ids);
    const mine = () => lines().filter((l) => wanted.has(idOf(l) ?? ''));
    const unlogged = () => {
      const logged = new Set(
        mine()
          .filter((l) => l.req !== undefined)
          .map(idOf),
      );
      return ids.filter((id) => !logged.has(id));
    };
    await untilValue('a request line of each request', unlogged, (left) => left.length === 0, { timeoutMs: 20_000 }).catch(() => undefined);
    return mine();
  }

  const errors = (logged: LogLine[]) => logged.filter((l) => l.level >= ERROR).map((l) => `${l.msg ?? ''}: ${l.err?.message ?? ''}`);

  it('when clients leave while the rows stream, then nothing is logged at error and the disconnects at info', async () => {
    const before = t.logs.length;
    const ids: string[] = [];
    for (let round = 0; round < 2; round++) {
      const results = await Promise.all(
        paths.map((p) => {
          const id = uniq('leave-mid-');
          ids.push(id);
          return abortMidStream(port, p, { Authorization: w.accounts.full.auth, 'X-Request-Id': id });
        }),
      );
      expect(results.filter((r) => r.status !== 200)).toEqual([]);
    }
    expect(errors(await linesOf(ids))).toEqual([]);
    const disconnects = lines()
      .slice(before)
      .filter((l) => /client disconnected/.test(l.msg ?? ''));
    expect(disconnects.length).toBeGreaterThan(0);
    expect(disconnects.filter((l) => l.level !== INFO)).toEqual([]);
  });

  it('when clients leave before the first row (while the export reads its lookups), then nothing is logged at error', async () => {
    const ids: string[] = [];
    const leaving: Promise<void>[] = [];
    for (const ms of [0, 5, 10, 20, 40, 80, 160]) {
      for (const p of paths) {
        const id = uniq('leave-early-');
        ids.push(id);
        leaving.push(leaveAfter(port, p, { Authorization: w.accounts.full.auth, 'X-Request-Id': id }, ms));
      }
    }
    await Promise.all(leaving);
    const logged = await linesOf(ids);
    expect(errors(logged)).toEqual([]);
    // Some did leave before their answer began, and those are at info.
    const early = logged.filter((l) => l.msg === 'client disconnected before the answer was sent');
    expect(early.length).toBeGreaterThan(0);
    expect(early.every((l) => l.level === INFO)).toBe(true);
  });
});
