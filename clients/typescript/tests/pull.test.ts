import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, promises as fs, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { parseList } from 'structured-headers';
import { useTestWorld } from '../../../tests/harness/useTestWorld';
import type { ListeningApp } from '../../../tests/harness/testApp';
import { uniq } from '../../../tests/harness/testApp';
import { ALL_RIGHTS } from '../../../tests/harness/world';
import { EXIT, pull, PullError, type PullOptions } from '../src/pull/pull';

/**
 * lcm-pull against the real API (real Postgres and Redis, over loopback): a month of calls in
 * windows, a quota that forces waiting, windows split because they hit Limit, a 429 whose
 * Retry-After is obeyed, a crash (SIGKILL) and a resume that writes the same file as an
 * uninterrupted run, responses the server compressed, and the one-line reasons it gives up with.
 *
 * In process, `sleep` is injected: it moves the server's clock instead of waiting, so a day of
 * quota passes at once and the server agrees that it has.
 */
const CLI = path.resolve(__dirname, '../dist/cli/lcm-pull.js');
const DAY_MS = 86_400_000;
const MONTH = { from: '2026-01-01', to: '2026-02-01' };
/** 15 January: ten calls within an hour, so a one-day window with Limit 5 must be split. */
const BURST_DAY_UTC_START = '2026-01-14T23:00:00.000Z';

describe('lcm-pull', () => {
  const { t, w } = useTestWorld({ AUTH_CACHE_TTL_MS: '600000', COMPRESSION_MIN_BYTES: '0' });
  let api: ListeningApp;
  let dir: string;
  let oracle: string[];

  /** A fresh account with every right and daily limit overrides per service. */
  async function account(limits: Record<string, number> = {}): Promise<{ username: string; password: string }> {
    const username = uniq('pull-');
    await t.load(
      { type: 'account', username, password: 'pull-pass', user: w.users.agent, projects: ['*'], rights: ALL_RIGHTS, entryAccess: 'Full' },
      ...Object.entries(limits).map(([service, dailyLimit]) => ({ type: 'requestLimit', account: username, service, dailyLimit })),
    );
    return { username, password: 'pull-pass' };
  }

  beforeAll(async () => {
    const call = (id: string, startTime: string) => ({
      type: 'call',
      uniqueId: `${w.id}-${id}`,
      campaign: w.campaigns.b2b,
      user: w.users.agent,
      uniqueLeadId: `lead-${w.id}-${id}`,
      leadPhoneNumber: '+4512345678',
      endCause: 'NoResponse',
      inProgress: false,
      connected: false,
      incoming: false,
      previewDuration: 'PT5S',
      startTime,
    });
    const calls = [];
    for (let day = 1; day <= 31; day++) {
      const d = String(day).padStart(2, '0');
      calls.push(call(`${d}-a`, `2026-01-${d}T09:15:00+01:00`), call(`${d}-b`, `2026-01-${d}T14:40:30.250+01:00`));
    }
    for (let i = 0; i < 10; i++) calls.push(call(`15-burst-${i}`, `2026-01-15T10:${String(i * 5).padStart(2, '0')}:00+01:00`));
    // Outside the month on both sides: never pulled.
    calls.push(call('before', '2025-12-31T23:59:59.999+01:00'), call('after', '2026-02-01T00:00:00+01:00'));
    await t.load(...calls);
    api = await t.listen();
    dir = mkdtempSync(path.join(os.tmpdir(), 'lcm-pull-'));
    // The oracle: the whole month in one request, as the API orders it (start time, unique id).
    const all = await request(t.app)
      .get('/api/calls')
      .query({ OrgCode: w.units.team, StartTime: MONTH.from, TimeSpan: 'P31D' })
      .set('Authorization', w.accounts.full.auth)
      .set('Prefer', 'datetime=offset')
      .expect(200);
    oracle = (all.body as object[]).map((c) => JSON.stringify(c));
    expect(oracle).toHaveLength(72);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A fetch that records what went out and what came back. */
  function recordingFetch(before?: (n: number, req: Request) => Promise<void>) {
    const log: { url: URL; startTime: string | null; timeSpan: string | null; status: number; headers: Headers; sent: Headers }[] = [];
    const fetcher = async (req: Request): Promise<Response> => {
      const url = new URL(req.url);
      await before?.(log.length + 1, req);
      const res = await fetch(req);
      log.push({
        url,
        startTime: url.searchParams.get('StartTime'),
        timeSpan: url.searchParams.get('TimeSpan'),
        status: res.status,
        headers: res.headers,
        sent: req.headers,
      });
      return res;
    };
    return { fetcher, log };
  }

  /** A sleep that moves the server's clock by the time asked for, from a fixed start. */
  function serverClock(start: string) {
    let now = Date.parse(start);
    const sleeps: number[] = [];
    t.setNow(new Date(now));
    return {
      sleeps,
      now: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
        t.setNow(new Date(now));
      },
    };
  }

  const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const callsOptions = (acc: { username: string; password: string }, out: string): PullOptions => ({
    kind: 'calls',
    baseUrl: api.url,
    ...acc,
    org: w.units.team,
    ...MONTH,
    window: 'P1D',
    limit: 5,
    out,
    maxWaitSeconds: 2 * 86_400,
  });

  it('when a month is pulled in one-day windows on a quota of 12 requests a day, then it waits out each used-up day and writes every call once, in order', async () => {
    const acc = await account({ calls: 12 });
    const clock = serverClock('2030-03-04T10:00:00Z');
    const { fetcher, log } = recordingFetch();
    const out = path.join(dir, 'month.ndjson');

    const summary = await pull(callsOptions(acc, out), { fetch: fetcher, sleep: clock.sleep, now: clock.now });

    expect(lines(out)).toEqual(oracle);
    expect(summary).toMatchObject({ rows: 72, windows: 31 + summary.splits, resumed: false });
    // It never ran into a 429: after every 12th request the quota showed 0 left, so it waited the day out.
    expect(log.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    expect(log.length).toBe(summary.requests);
    expect(clock.sleeps).toEqual(Array.from({ length: Math.floor((log.length - 1) / 12) }, () => DAY_MS));
    expect(clock.sleeps.length).toBeGreaterThanOrEqual(3);
    // Fair use and compression asked for on every request; the standard fields parse as Structured Fields.
    for (const r of log) {
      expect(r.sent.get('X-Rate-Limit-Fair-Use-Policy')).toBe('Minute rated');
      expect(r.sent.get('Accept-Encoding')).toBe('br, gzip');
      expect(parseList(r.headers.get('RateLimit')!).map(([name]) => name)).toEqual(['daily', 'minute']);
    }
    expect(existsSync(`${out}.state.json`)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
  });

  it('when a one-day window returns Limit calls, then it is split in halves until every window is complete', async () => {
    const acc = await account();
    const { fetcher, log } = recordingFetch();
    const out = path.join(dir, 'split.ndjson');

    const summary = await pull({ ...callsOptions(acc, out), from: '2026-01-15', to: '2026-01-16' }, { fetch: fetcher });

    expect(lines(out)).toEqual(oracle.filter((c) => JSON.parse(c).startTime.startsWith('2026-01-15')));
    expect(lines(out)).toHaveLength(12);
    const asked = log.map((r) => `${r.startTime} ${r.timeSpan}`);
    // The day hit Limit 5, so did its first half (00:00–12:00, holding all twelve) and so on down.
    expect(asked.slice(0, 3)).toEqual([
      `${BURST_DAY_UTC_START} PT86400S`,
      `${BURST_DAY_UTC_START} PT43200S`,
      `${BURST_DAY_UTC_START} PT21600S`,
    ]);
    expect(asked).toContain('2026-01-15T11:00:00.000Z PT43200S');
    expect(summary.splits).toBeGreaterThanOrEqual(3);
    expect(summary.windows).toBe(summary.splits + 1);
  });

  it('when another client spends the quota and a request answers 429, then the pull waits Retry-After and fetches that window again', async () => {
    const acc = await account({ calls: 4 });
    const clock = serverClock('2030-03-05T10:00:00Z');
    const auth = 'Basic ' + Buffer.from(`${acc.username}:${acc.password}`).toString('base64');
    const { fetcher, log } = recordingFetch(async (n) => {
      if (n !== 2) return;
      // Someone else with the same account takes the three requests that were left.
      for (let i = 0; i < 3; i++) {
        await request(t.app)
          .get('/api/calls')
          .query({ OrgCode: w.units.team, StartTime: '2026-01-01', TimeSpan: 'PT1H' })
          .set('Authorization', auth)
          .set('X-Rate-Limit-Fair-Use-Policy', 'Minute rated')
          .expect(200);
      }
    });
    const out = path.join(dir, 'retry.ndjson');

    await pull(
      { ...callsOptions(acc, out), from: '2026-01-01', to: '2026-01-04', limit: 100 },
      { fetch: fetcher, sleep: clock.sleep, now: clock.now },
    );

    expect(log.map((r) => r.status)).toEqual([200, 429, 200, 200]);
    const retryAfter = Number(log[1].headers.get('Retry-After'));
    expect(retryAfter).toBe(86_400);
    expect(clock.sleeps).toEqual([retryAfter * 1000]);
    expect(log[2].startTime).toBe(log[1].startTime);
    expect(lines(out)).toEqual(oracle.filter((c) => /^2026-01-0[123]/.test(JSON.parse(c).startTime)));
  });

  it('when the API compresses the exports (br, or gzip where only that is accepted), then lcm-pull decodes them and the file is the same', async () => {
    const acc = await account();
    // Every other request narrows Accept-Encoding to gzip, so the server answers with both codings.
    const seen: { asked: string | null; sent: string | null }[] = [];
    const fetcher = async (req: Request): Promise<Response> => {
      const asked = seen.length % 2 === 0 ? req.headers.get('accept-encoding') : 'gzip';
      const headers = new Headers(req.headers);
      if (asked) headers.set('accept-encoding', asked);
      const res = await fetch(new Request(req, { headers }));
      seen.push({ asked, sent: res.headers.get('content-encoding') });
      return res;
    };
    const out = path.join(dir, 'compressed.ndjson');
    await pull({ ...callsOptions(acc, out), from: '2026-01-01', to: '2026-01-08', limit: 100 }, { fetch: fetcher });
    expect(lines(out)).toEqual(oracle.filter((c) => /^2026-01-0[1-7]/.test(JSON.parse(c).startTime)));
    expect(seen).toHaveLength(7);
    expect(seen.filter((_, i) => i % 2 === 0)).toEqual(Array(4).fill({ asked: 'br, gzip', sent: 'br' }));
    expect(seen.filter((_, i) => i % 2 === 1)).toEqual(Array(3).fill({ asked: 'gzip', sent: 'gzip' }));
  });

  it('when leads are pulled in windows over ModifiedFrom/ModifiedTo as CSV, then every lead of the range is one row, in order', async () => {
    const leads = Array.from({ length: 20 }, (_, i) => ({
      type: 'lead',
      campaign: w.campaigns.b2b,
      uniqueId: `${w.id}-lead-${String(i).padStart(2, '0')}`,
      data: { Name: `Lead ${i}`, Telefon: `+45 1234 56${String(i).padStart(2, '0')}` },
      lastModifiedTime: `2026-01-${String(1 + i).padStart(2, '0')}T12:00:00+01:00`,
    }));
    await t.load(...leads);
    const acc = await account();
    const out = path.join(dir, 'leads.csv');
    const { fetcher, log } = recordingFetch();

    const summary = await pull(
      {
        kind: 'leads',
        baseUrl: api.url,
        ...acc,
        projects: [w.projects.b2b],
        from: '2026-01-01',
        to: '2026-02-01',
        window: 'P3D',
        format: 'csv',
        out,
      },
      { fetch: fetcher },
    );

    const expected = await request(t.app)
      .get('/api/simpleleads')
      .query({ Projects: w.projects.b2b, ModifiedFrom: '2026-01-01', ModifiedTo: '2026-02-01' })
      .set('Authorization', w.accounts.full.auth)
      .expect(200);
    expect(expected.body).toHaveLength(20);
    const rows = readFileSync(out, 'utf8').split('\r\n').filter(Boolean);
    expect(rows).toHaveLength(21);
    const header = rows[0].split(',');
    const idColumn = header.indexOf('uniqueId');
    expect(idColumn).toBeGreaterThanOrEqual(0);
    expect(rows.slice(1).map((r) => r.split(',')[idColumn])).toEqual(expected.body.map((l: { uniqueId: string }) => l.uniqueId));
    expect(summary).toMatchObject({ rows: 20, windows: 11, splits: 0 });
    const first = log[0].url.searchParams;
    expect([log[0].url.pathname, first.get('Projects'), first.get('ModifiedFrom'), first.get('ModifiedTo')]).toEqual([
      '/api/simpleleads',
      w.projects.b2b,
      '2025-12-31T23:00:00.000Z',
      '2026-01-03T23:00:00.000Z',
    ]);
  });

  it('when the server keeps failing with 503, then it retries with growing pauses and gives up with exit code 6 and the reason', async () => {
    const acc = await account();
    const sleeps: number[] = [];
    const failing = async () =>
      new Response(JSON.stringify({ title: 'Service unavailable', detail: 'the database is down' }), {
        status: 503,
        headers: { 'Content-Type': 'application/problem+json' },
      });
    const out = path.join(dir, 'failing.ndjson');
    const error = await pull(
      { ...callsOptions(acc, out), from: '2026-01-01', to: '2026-01-02' },
      { fetch: failing, sleep: async (ms) => void sleeps.push(ms) },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PullError);
    expect((error as PullError).exitCode).toBe(EXIT.server);
    expect((error as PullError).message).toBe(
      'the API failed: 503 Service unavailable: the database is down (5 attempts for the window from 2025-12-31T23:00:00.000Z)',
    );
    expect(sleeps).toEqual([1000, 2000, 4000, 8000]);
  });

  describe('the lcm-pull command', () => {
    function run(
      args: string[],
      env: Record<string, string>,
    ): { child: ReturnType<typeof spawn>; done: Promise<{ code: number | null; stderr: string }> } {
      const child = spawn(process.execPath, [CLI, ...args], {
        env: { PATH: process.env.PATH, LCM_BASE_URL: api.url, ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      const done = new Promise<{ code: number | null; stderr: string }>((resolve) =>
        child.on('close', (code) => resolve({ code, stderr })),
      );
      return { child, done };
    }
    const credentials = (acc: { username: string; password: string }) => ({ LCM_USERNAME: acc.username, LCM_PASSWORD: acc.password });
    const monthArgs = (out: string) => [
      'calls',
      '--org',
      w.units.team,
      '--from',
      MONTH.from,
      '--to',
      MONTH.to,
      '--window',
      'PT4H',
      '--limit',
      '5',
      '--format',
      'csv',
      '--out',
      out,
    ];

    beforeAll(() => {
      if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build in clients/typescript first`);
      t.setNow(undefined);
    });

    it('when a pull is killed halfway and run again, then it resumes and the file is byte for byte the one an uninterrupted run writes', async () => {
      // A generous daily limit keeps the fair use minute limit out of the way (no real waits).
      const acc = await account({ calls: 2_000_000 });
      const whole = path.join(dir, 'whole.csv');
      const first = await run(monthArgs(whole), credentials(acc)).done;
      expect(first).toMatchObject({ code: 0 });
      expect(first.stderr).toMatch(/^lcm-pull: 72 calls in \d+ windows/);

      const crashed = path.join(dir, 'crashed.csv');
      const state = `${crashed}.state.json`;
      const { child, done } = run(monthArgs(crashed), credentials(acc));
      let progress: { windowsDone: number; pending: unknown[] } | undefined;
      for (;;) {
        try {
          progress = JSON.parse(await fs.readFile(state, 'utf8'));
          if (progress!.windowsDone >= 40) break;
        } catch {
          // not written yet
        }
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      child.kill('SIGKILL');
      expect((await done).code).toBeNull();
      expect(progress!.pending.length).toBeGreaterThan(0);
      expect(existsSync(`${crashed}.part`)).toBe(true);
      expect(existsSync(crashed)).toBe(false);

      const resumed = await run(monthArgs(crashed), credentials(acc)).done;
      expect(resumed.code).toBe(0);
      expect(resumed.stderr).toContain('resumed');
      expect(readFileSync(crashed)).toEqual(readFileSync(whole));
      const csv = readFileSync(whole, 'utf8').split('\r\n');
      expect(csv[0].split(',').slice(0, 4)).toEqual(['campaign', 'user', 'organizationalUnits', 'uniqueId']);
      expect(csv.filter(Boolean)).toHaveLength(73);
      expect(existsSync(`${crashed}.state.json`)).toBe(false);
    });

    it('when the password is wrong, then it exits 3 with one line naming the 401', async () => {
      const acc = await account();
      const { code, stderr } = await run(monthArgs(path.join(dir, 'denied.csv')), { LCM_USERNAME: acc.username, LCM_PASSWORD: 'wrong' })
        .done;
      expect(code).toBe(EXIT.auth);
      expect(stderr).toBe(
        'lcm-pull: 401 Authentication required: valid HTTP Basic credentials are required (check LCM_USERNAME and LCM_PASSWORD)\n',
      );
    });

    it('when the quota is used up for longer than --max-wait, then it exits 5 and a later run resumes', async () => {
      const acc = await account({ calls: 1 });
      const out = path.join(dir, 'quota.csv');
      const { code, stderr } = await run([...monthArgs(out), '--max-wait', '60'], credentials(acc)).done;
      expect(code).toBe(EXIT.quota);
      expect(stderr).toMatch(
        /^lcm-pull: request quota used up \(daily\): the next request is allowed in \d+ s, more than --max-wait 60 s; rerun later to resume\n$/,
      );
      expect(JSON.parse(readFileSync(`${out}.state.json`, 'utf8')).windowsDone).toBe(1);
    });

    it('when the base URL leads nowhere, then it exits 4 with the 404', async () => {
      const acc = await account();
      const { code, stderr } = await run(
        [...monthArgs(path.join(dir, 'nowhere.csv')), '--base-url', `${api.url}/nothing`],
        credentials(acc),
      ).done;
      expect(code).toBe(EXIT.notFound);
      expect(stderr).toMatch(/^lcm-pull: 404 Not found: no resource at GET /);
    });

    it('when an argument is missing, then it exits 2', async () => {
      const { code, stderr } = await run(['calls', '--from', '2026-01-01', '--out', path.join(dir, 'x.csv')], {
        LCM_USERNAME: 'a',
        LCM_PASSWORD: 'b',
      }).done;
      expect(code).toBe(EXIT.usage);
      expect(stderr).toContain("required option '--org <orgCode>' not specified");
    });
  });
});
