import { spawn } from 'node:child_process';
import net from 'node:net';
import iconv from 'iconv-lite';
import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import { LCM_BIN, PROJECT_ROOT, lcmEnv, runLcm } from '../harness/lcmProcess';
import { uniq, TestApp } from '../harness/testApp';
import { untilValue } from '../harness/until';
import { createDb } from '../../src/data/db';
import { RequestLogWriter, RequestLogEntry } from '../../src/data/requestLog';
import { maintainRequestLog, listDayPartitions } from '../../src/data/partitions';
import { listen } from '../../src/app/server';

interface LoggedRequest {
  time: string;
  requestId: string;
  method: string;
  path: string;
  service: string;
  status: number;
  weight: number;
  durationMs: number;
  bytesSent: number;
  clientAddress: string | null;
}

const FORWARDED_FOR = '203.0.113.9';
/** GET /api/myaccount as a proxy passes it on: with X-Forwarded-For naming a client, and a request id. */
const readForwarded = (app: TestApp['app'], auth: string, requestId: string) =>
  request(app).get('/api/myaccount').set('Authorization', auth).set('X-Forwarded-For', FORWARDED_FOR).set('X-Request-Id', requestId);

/** A pool on a port nothing listens on: every connection is refused at once. */
const unreachableDb = () =>
  createDb({ url: 'postgres://nobody:nothing@127.0.0.1:1/none', timezone: 'UTC', connectTimeoutMs: 500, quiet: true });

/**
 * The account's request log: what is written for each authenticated request, what an account
 * reads of it (its own requests only, JSON or CSV), what `lcm requests` prints, and what the
 * writer does when Postgres cannot take its batches.
 */
describe('the account request log', () => {
  const { t, w } = useTestWorld({ REQUEST_LOG_FLUSH_MS: '50' });
  const started = new Date(Date.now() - 60_000);
  const window = () => ({ FromTime: started.toISOString(), TimeSpan: 'PT1H' });

  /** The path the log holds for a request id, once its entry is written. */
  const loggedPath = async (id: string) => {
    const { rows } = await untilValue(
      'the entry written',
      () => t.db.raw<{ rows: { path: string }[] }>('select path from request_log where request_id = ?', [id]),
      (r) => r.rows.length > 0,
      { timeoutMs: 20_000 },
    );
    return rows[0]!.path;
  };
  const logOf = (auth: string, query: Record<string, string> = {}) =>
    request(t.app)
      .get('/api/myaccount/requests')
      .query({ ...window(), ...query })
      .set('Authorization', auth);

  /** The entry of the request with this id, once the writer has written it. */
  async function entryOf(auth: string, requestId: string): Promise<LoggedRequest> {
    const found = await untilValue(
      `request ${requestId} in the log`,
      async () => {
        const res = await logOf(auth);
        expect(res.status).toBe(200);
        return (res.body as LoggedRequest[]).find((e) => e.requestId === requestId);
      },
      (entry) => entry !== undefined,
      { timeoutMs: 20_000 },
    );
    return found!;
  }

  it('when an account reads /myaccount, then it says the requests are logged', async () => {
    const res = await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth);
    expect(res.body).toMatchObject({ logRequestData: true });
  });

  it('when an authenticated request is answered, then its entry has time, id, method, path and query, service, status, weight, duration, bytes and address', async () => {
    const id = uniq('log-');
    const before = Date.now();
    const res = await request(t.app)
      .get('/api/myaccount/request/limits?Extra=1&other=%C3%A6')
      .set('Authorization', w.accounts.full.auth)
      .set('X-Request-Id', id);
    expect(res.status).toBe(200);
    const entry = await entryOf(w.accounts.full.auth, id);
    expect(entry).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/) as unknown,
      requestId: id,
      method: 'GET',
      path: '/api/myaccount/request/limits?Extra=1&other=%C3%A6',
      service: 'myaccount.limits',
      status: 200,
      weight: expect.any(Number) as unknown,
      durationMs: expect.any(Number) as unknown,
      bytesSent: expect.any(Number) as unknown,
      clientAddress: expect.stringContaining('127.0.0.1') as unknown,
    });
    expect(entry.weight).toBeGreaterThanOrEqual(1);
    expect(entry.durationMs).toBeGreaterThanOrEqual(0);
    // Headers and body on the wire: more than the body alone (as sent: compressed, since supertest accepts gzip).
    expect(Number(res.headers['content-length'])).toBeGreaterThan(0);
    expect(entry.bytesSent).toBeGreaterThan(Number(res.headers['content-length']));
    expect(Math.abs(new Date(entry.time).getTime() - before)).toBeLessThan(10_000);
  });

  it('when a client sends X-Forwarded-For and no proxy is trusted, then the address logged is the connection’s', async () => {
    const id = uniq('log-xff-');
    expect((await readForwarded(t.app, w.accounts.full.auth, id)).status).toBe(200);
    expect((await entryOf(w.accounts.full.auth, id)).clientAddress).toContain('127.0.0.1');
  });

  it('when a request is refused for a missing right, then it is logged with its status and no weight', async () => {
    const id = uniq('log-403-');
    const res = await request(t.app).get('/api/campaigns').set('Authorization', w.accounts.none.auth).set('X-Request-Id', id);
    expect(res.status).toBe(403);
    expect(await entryOf(w.accounts.none.auth, id)).toMatchObject({ status: 403, weight: 0, service: 'campaigns.list' });
  });

  it('when a request carries credentials, then neither the Authorization header nor a password-like query value is logged', async () => {
    const id = uniq('log-secret-');
    await request(t.app)
      .get('/api/myaccount?password=hunter2&Token=abc123&keep=1')
      .set('Authorization', w.accounts.full.auth)
      .set('X-Request-Id', id)
      .expect(200);
    const entry = await entryOf(w.accounts.full.auth, id);
    expect(entry.path).toBe('/api/myaccount?password=[redacted]&Token=[redacted]&keep=1');
    const { rows } = await t.db.raw<{ rows: unknown[] }>('select * from request_log where request_id = ?', [id]);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain('hunter2');
    expect(stored).not.toContain('abc123');
    expect(stored).not.toContain(w.accounts.full.password);
    expect(stored).not.toContain(w.accounts.full.auth.slice('Basic '.length));
  });

  it('when a query value holds the request’s own password or Basic token under any name, then that value is not logged', async () => {
    const id = uniq('log-own-');
    const token = w.accounts.full.auth.slice('Basic '.length);
    await request(t.app)
      .get(
        `/api/myaccount?q=${encodeURIComponent(w.accounts.full.password)}&x=${encodeURIComponent(token)}&note=${encodeURIComponent(`pw ${w.accounts.full.password}`)}&keep=1`,
      )
      .set('Authorization', w.accounts.full.auth)
      .set('X-Request-Id', id)
      .expect(200);
    expect((await entryOf(w.accounts.full.auth, id)).path).toBe('/api/myaccount?q=[redacted]&x=[redacted]&note=[redacted]&keep=1');
  });

  it('when a path segment, a parameter name or the request id holds the request’s own password or token, then it is not logged', async () => {
    const password = w.accounts.full.password;
    const token = w.accounts.full.auth.slice('Basic '.length);
    const id = uniq(`log-${password}-`);
    await request(t.app)
      .get(`/api/leads/${encodeURIComponent(password)}?${encodeURIComponent(token)}=1&keep=1`)
      .set('Authorization', w.accounts.full.auth)
      .set('X-Request-Id', id)
      .expect(404);
    const { rows } = await untilValue(
      'the entry written',
      () =>
        t.db.raw<{ rows: { request_id: string; path: string }[] }>(
          `select request_id, path from request_log where time >= ? and path like '/api/leads/%keep=1'`,
          [started],
        ),
      (r) => r.rows.length > 0,
      { timeoutMs: 20_000 },
    );
    expect(rows).toEqual([{ request_id: '[redacted]', path: '/api/leads/[redacted]?[redacted]=1&keep=1' }]);
  });

  it('when the client leaves before its answer begins, then the entry has status 499 and the client’s address', async () => {
    const server = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
    try {
      const id = uniq('log-left-');
      const socket = net.connect((server.server.address() as net.AddressInfo).port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      // A body announced but never sent: the import waits for it, and the client goes.
      socket.write(
        `POST /api/leads HTTP/1.1\r\nHost: x\r\nAuthorization: ${w.accounts.full.auth}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.destroy();
      const entry = await entryOf(w.accounts.full.auth, id);
      expect(entry.status).toBe(499);
      expect(entry.clientAddress).toContain('127.0.0.1');
    } finally {
      await server.close();
    }
  });

  it('when a query value holds the password percent-escaped as Latin-1 (not UTF-8), then it is not logged either', async () => {
    const username = uniq('log-latin-');
    await t.load({
      type: 'account',
      username,
      password: 'blåbær-grød',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    const id = uniq('log-latin-');
    await request(t.app)
      .get('/api/myaccount?q=bl%E5b%E6r-gr%F8d&keep=1')
      .set('Authorization', `Basic ${Buffer.from(`${username}:blåbær-grød`).toString('base64')}`)
      .set('X-Request-Id', id)
      .expect(200);
    expect(await loggedPath(id)).toBe('/api/myaccount?q=[redacted]&keep=1');
  });

  it('when the password has a windows-1252 character beyond Latin-1 (€) and a query value holds it escaped so, then it is not logged', async () => {
    const username = uniq('log-1252-');
    await t.load({
      type: 'account',
      username,
      password: 'bær€kage',
      user: w.users.agent,
      projects: ['*'],
      rights: {},
      entryAccess: 'None',
    });
    const id = uniq('log-1252-');
    // The header in windows-1252 too, as a client that escapes so encodes its credentials.
    const token = Buffer.concat([Buffer.from(`${username}:`), iconv.encode('bær€kage', 'windows-1252')]).toString('base64');
    await request(t.app)
      .get('/api/myaccount?q=b%E6r%80kage&keep=1')
      .set('Authorization', `Basic ${token}`)
      .set('X-Request-Id', id)
      .expect(200);
    expect(await loggedPath(id)).toBe('/api/myaccount?q=[redacted]&keep=1');
  });

  it('when a password-like parameter name is escaped in Latin-1, then its value is not logged, as the name the app reads is password-like', async () => {
    const id = uniq('log-name-');
    await request(t.app)
      .get('/api/myaccount?%70assw%F8rd=hemmelig&keep=1')
      .set('Authorization', w.accounts.full.auth)
      .set('X-Request-Id', id)
      .expect(200);
    expect((await entryOf(w.accounts.full.auth, id)).path).toBe('/api/myaccount?%70assw%F8rd=[redacted]&keep=1');
  });

  it('when a request has no valid credentials, then nothing is logged for it', async () => {
    const id = uniq('log-401-');
    await request(t.app).get('/api/myaccount').set('Authorization', 'Basic bm9ib2R5Om5vcGU=').set('X-Request-Id', id).expect(401);
    // A later request of a real account has reached the table: the 401 would have been written by then.
    const marker = uniq('log-marker-');
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).set('X-Request-Id', marker).expect(200);
    await entryOf(w.accounts.full.auth, marker);
    expect(await t.db('request_log').where({ request_id: id }).first()).toBeUndefined();
  });

  it('when two accounts make requests, then each reads only its own', async () => {
    const mine = uniq('log-mine-');
    const theirs = uniq('log-theirs-');
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).set('X-Request-Id', mine).expect(200);
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.b2b.auth).set('X-Request-Id', theirs).expect(200);
    await entryOf(w.accounts.b2b.auth, theirs);
    await entryOf(w.accounts.full.auth, mine);
    const full = (await logOf(w.accounts.full.auth)).body as LoggedRequest[];
    const b2b = (await logOf(w.accounts.b2b.auth)).body as LoggedRequest[];
    expect(full.map((e) => e.requestId)).not.toContain(theirs);
    expect(b2b.map((e) => e.requestId)).not.toContain(mine);
    expect(b2b.every((e) => e.requestId !== mine)).toBe(true);
  });

  it('when Status and Service are given, then only matching entries come back', async () => {
    const ok = uniq('log-ok-');
    const missing = uniq('log-404-');
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.full.auth).set('X-Request-Id', ok).expect(200);
    await request(t.app).get('/api/leads/no-such-lead').set('Authorization', w.accounts.full.auth).set('X-Request-Id', missing).expect(404);
    await entryOf(w.accounts.full.auth, missing);
    const notFound = (await logOf(w.accounts.full.auth, { Status: '404' })).body as LoggedRequest[];
    expect(notFound.map((e) => e.requestId)).toContain(missing);
    expect(notFound.every((e) => e.status === 404)).toBe(true);
    const myaccount = (await logOf(w.accounts.full.auth, { Service: 'MyAccount' })).body as LoggedRequest[];
    expect(myaccount.map((e) => e.requestId)).toContain(ok);
    expect(myaccount.every((e) => e.service === 'myaccount')).toBe(true);
  });

  it('when Service names no service, then it is a 400 naming the parameter and the services it may have meant, not an empty log', async () => {
    const res = await logOf(w.accounts.full.auth, { Service: 'myaccount,campaigns' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    const errors = (res.body as { errors: { parameter: string; message: string }[] }).errors;
    expect(errors).toHaveLength(1);
    expect(errors[0]!.parameter).toBe('Service');
    expect(errors[0]!.message).toContain('"campaigns"');
    expect(errors[0]!.message).toContain('campaigns.list');
    expect((await logOf(w.accounts.full.auth, { Service: 'CAMPAIGNS.LIST' })).status).toBe(200);
  });

  it('when the log is asked for as CSV, then it streams a header row and one quoted row per entry', async () => {
    const id = uniq('log-csv-');
    await request(t.app).get('/api/myaccount?a=1;b="2"').set('Authorization', w.accounts.full.auth).set('X-Request-Id', id).expect(200);
    await entryOf(w.accounts.full.auth, id);
    const res = await logOf(w.accounts.full.auth, { Service: 'myaccount' }).set('Accept', 'text/csv');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    const lines = res.text.split('\r\n');
    expect(lines[0]).toBe('time;requestId;method;path;service;status;weight;durationMs;bytesSent;clientAddress');
    const row = lines.find((l) => l.includes(id));
    // The separator inside the path makes the field quoted.
    expect(row).toContain(`;${id};GET;"/api/myaccount?a=1;b=%222%22";myaccount;200;`);
  });

  it('when the log is answered as JSON or as CSV, then both answers say they vary by Accept', async () => {
    for (const accept of ['application/json', 'text/csv']) {
      const res = await logOf(w.accounts.full.auth, { Service: 'myaccount' }).set('Accept', accept);
      expect(res.status).toBe(200);
      expect(String(res.headers['vary']).split(/\s*,\s*/)).toContain('Accept');
    }
  });

  it('when the log is asked for as HTML or with a bad window, then it is a 406 or a 400', async () => {
    expect((await logOf(w.accounts.full.auth).set('Accept', 'text/html')).status).toBe(406);
    const bad = await request(t.app)
      .get('/api/myaccount/requests')
      .query({ FromTime: 'yesterday', TimeSpan: 'PT1H' })
      .set('Authorization', w.accounts.full.auth);
    expect(bad.status).toBe(400);
    expect((await request(t.app).get('/api/myaccount/requests').set('Authorization', w.accounts.full.auth)).status).toBe(400);
  });

  it('when lcm requests reads an account, then it prints that account’s entries as JSON lines or CSV', async () => {
    const id = uniq('log-cli-');
    await request(t.app).get('/api/myaccount').set('Authorization', w.accounts.b2b.auth).set('X-Request-Id', id).expect(200);
    await entryOf(w.accounts.b2b.auth, id);
    const env = lcmEnv({ DATABASE_URL: process.env.TEST_DATABASE_URL });
    const args = ['requests', '--account', w.accounts.b2b.username, '--from-time', started.toISOString(), '--time-span', 'PT1H'];
    const json = await runLcm(args, { env });
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const entries = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LoggedRequest);
    expect(entries.find((e) => e.requestId === id)).toMatchObject({
      method: 'GET',
      path: '/api/myaccount',
      service: 'myaccount',
      status: 200,
    });
    const csv = await runLcm([...args, '--format', 'csv', '--status', '200', '--service', 'myaccount'], { env });
    expect(csv.code).toBe(0);
    expect(csv.stdout.split('\r\n')[0]).toBe('time;requestId;method;path;service;status;weight;durationMs;bytesSent;clientAddress');
    expect(csv.stdout).toContain(`;${id};GET;/api/myaccount;myaccount;200;`);
    const unknown = await runLcm(['requests', '--account', 'no-such-account', '--from-time', '2026-01-01', '--time-span', 'P1D'], { env });
    // Named as the account commands name an unknown account.
    expect(unknown).toMatchObject({ code: 1, stdout: '', stderr: 'lcm: no account "no-such-account"\n' });
  });

  it('when the reader of lcm requests leaves early (| head), then lcm stops writing and exits 0 without a word', async () => {
    // Far more than a pipe holds, in a window of its own: lcm is still writing when the reader goes.
    const { id: accountId } = (await t
      .db<{ id: number; username: string }>('accounts')
      .where({ username: w.accounts.none.username })
      .first('id'))!;
    const from = new Date(Date.now() - 3 * 3_600_000);
    await t.db.raw(
      `insert into request_log (account_id, time, request_id, method, path, service, status, weight, duration_ms, bytes_sent, client_address)
       select ?, ?::timestamptz + g * interval '100 milliseconds', 'many-' || g, 'GET', '/api/myaccount', 'myaccount', 200, 1, 1.5, 100, '127.0.0.1'
       from generate_series(1, 20000) g`,
      [accountId, from.toISOString()],
    );
    const args = ['requests', '--account', w.accounts.none.username, '--from-time', from.toISOString(), '--time-span', 'PT1H'];
    const child = spawn(process.execPath, [LCM_BIN, ...args], {
      env: lcmEnv({ DATABASE_URL: process.env.TEST_DATABASE_URL }),
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    // The first chunk read, the reader closes its end, as head does after its line.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });

  /** An entry as the writer takes it, numbered `n`. */
  const entry = (n: number): RequestLogEntry => ({
    accountId: 1,
    time: Date.now(),
    requestId: `writer-${n}`,
    method: 'GET',
    path: '/api/x',
    service: 'x',
    status: 200,
    weight: 1,
    durationMs: 1,
    bytesSent: 10,
    clientAddress: undefined,
  });

  describe('the writer', () => {
    it('when Postgres cannot be reached, then entries wait up to the cap, newer ones are dropped and counted, and nothing throws', async () => {
      const unreachable = unreachableDb();
      const writer = new RequestLogWriter(unreachable, { flushMs: 60_000, maxPending: 5 });
      const dropped: [string, number][] = [];
      const states: boolean[] = [];
      writer.on('dropped', (reason, n) => dropped.push([reason, n]));
      writer.on('unreachable', (down) => states.push(down));
      try {
        for (let i = 0; i < 8; i++) writer.record(entry(i));
        await writer.flush();
        expect(writer.size).toBe(5);
        expect(dropped).toEqual([
          ['overflow', 1],
          ['overflow', 1],
          ['overflow', 1],
        ]);
        expect(states).toEqual([true]);
        await writer.flush(); // still down: told once
        expect(states).toEqual([true]);
      } finally {
        await writer.close();
        await unreachable.destroy();
      }
    });

    it('when Postgres stays unreachable over many flushes, then the buffers hold about the entries’ own bytes, not a buffer per flush', async () => {
      const unreachable = unreachableDb();
      const writer = new RequestLogWriter(unreachable, { flushMs: 60_000, maxPending: 100_000 });
      try {
        for (let flush = 0; flush < 100; flush++) {
          for (let i = 0; i < 5; i++) writer.record(entry(flush * 5 + i));
          await writer.flush();
        }
        expect(writer.size).toBe(500);
        // 500 entries of about 70 bytes: what part-filled buffers add stays within a few of the smallest.
        expect(writer.heldBytes).toBeLessThan(128 * 1024);
      } finally {
        await writer.close();
        await unreachable.destroy();
      }
    });

    it('when entries hold quotes, backslashes, separators and non-ASCII text, and no address, then they are stored exactly as given', async () => {
      const writer = new RequestLogWriter(t.db, { flushMs: 60_000, maxPending: 100 });
      const odd = {
        ...entry(3),
        accountId: 2 ** 40 + 1,
        time: 1_767_225_600_123.5,
        requestId: `writer-odd-${Date.now()}`,
        path: '/api/users/TRYG%20Forsikring%20A%2FS/calls?q="a,b"&x=\\{1}&n=Ærø’s',
        durationMs: 0.25,
        bytesSent: 2 ** 33,
      };
      try {
        writer.record(odd);
        await writer.flush();
        const row = await t
          .db('request_log')
          .where({ request_id: odd.requestId })
          .first<{ account_id: number; t: number; path: string; duration_ms: number; bytes_sent: number; client_address: string | null }>(
            'account_id',
            t.db.raw('(extract(epoch from time) * 1000)::float8 as t'),
            'path',
            'duration_ms',
            'bytes_sent',
            'client_address',
          );
        expect(row).toEqual({
          account_id: odd.accountId,
          t: expect.closeTo(odd.time, 3) as unknown,
          path: odd.path,
          duration_ms: 0.25,
          bytes_sent: odd.bytesSent,
          client_address: null,
        });
      } finally {
        await writer.close();
      }
    });

    it('when entries come while batches are written, then a flush asked for meanwhile writes them too, and close writes the rest', async () => {
      const writer = new RequestLogWriter(t.db, { flushMs: 60_000, maxPending: 100, batchSize: 2 });
      const prefix = uniq('writer-flow-');
      const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${prefix}-${from + i}`);
      const take = (id: string) => writer.record({ ...entry(0), requestId: id });
      const stored = async () =>
        (await t.db('request_log').where('request_id', 'like', `${prefix}-%`).orderBy('request_id').pluck<string[]>('request_id')).sort();
      try {
        ids(0, 5).forEach(take); // three batches: 2, 2 and 1
        const first = writer.flush();
        ids(5, 7).forEach(take); // taken while the first flush writes
        const second = writer.flush();
        await first;
        await second;
        expect(await stored()).toEqual(ids(0, 7).sort());
        expect(writer.size).toBe(0);
        ids(7, 9).forEach(take);
        void writer.flush();
        take(`${prefix}-9`);
      } finally {
        await writer.close();
      }
      expect(await stored()).toEqual(ids(0, 10).sort());
      expect(writer.size).toBe(0);
    });

    it('when Postgres refuses a batch for its content, then the batch is dropped and counted instead of retried', async () => {
      const writer = new RequestLogWriter(t.db, { flushMs: 60_000, maxPending: 100 });
      const dropped: [string, number][] = [];
      writer.on('dropped', (reason, n) => dropped.push([reason, n]));
      try {
        writer.record({ ...entry(1), status: 1_000_000 }); // not a smallint
        writer.record(entry(2));
        await writer.flush();
        expect(dropped).toEqual([['rejected', 2]]);
        expect(writer.size).toBe(0);
      } finally {
        await writer.close();
      }
    });
  });

  it('when maintenance runs with a retention, then request log days older than it are dropped whole and the days ahead exist', async () => {
    const longAgo = new Date(Date.now() - 400 * 86_400_000);
    // A pass as of then creates that time's days.
    await maintainRequestLog(t.db, longAgo, undefined);
    const oldDay = `request_log_p${new Date(longAgo.getTime() - 86_400_000).toISOString().slice(0, 10).replace(/-/g, '_')}`;
    expect((await listDayPartitions(t.db, 'request_log')).map((p) => p.name)).toContain(oldDay);
    const report = await maintainRequestLog(t.db, new Date(), 30 * 86_400_000);
    expect(report.dropped).toContain(oldDay);
    const days = (await listDayPartitions(t.db, 'request_log')).map((p) => p.day.getTime());
    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    expect(Math.min(...days)).toBeGreaterThanOrEqual(today - 31 * 86_400_000);
    expect(days).toContain(today + 7 * 86_400_000);
  });

  it('when maintenance runs, then each ended day gets its account index and today does not, and an account reads only its own entries of an ended day', async () => {
    const today = new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00Z').getTime();
    const dayName = (ms: number) => `request_log_p${new Date(ms).toISOString().slice(0, 10).replace(/-/g, '_')}`;
    const accountId = async (username: string) => (await t.db('accounts').where({ username }).first<{ id: number }>('id')).id;
    const [full, b2b] = [await accountId(w.accounts.full.username), await accountId(w.accounts.b2b.username)];
    const mine = uniq('ended-mine-');
    const theirs = uniq('ended-theirs-');
    const writer = new RequestLogWriter(t.db, { flushMs: 60_000, maxPending: 100 });
    const at = (accountId: number, requestId: string, time: number): RequestLogEntry => ({ ...entry(0), accountId, requestId, time });
    try {
      writer.record(at(full, `${mine}-2`, today - 3_600_000));
      writer.record(at(b2b, theirs, today - 3_600_000 + 1));
      writer.record(at(full, `${mine}-1`, today - 7_200_000));
    } finally {
      await writer.close();
    }

    const report = await maintainRequestLog(t.db, new Date(), undefined);
    const indexes = async (table: string) =>
      (
        await t.db.raw<{ rows: { def: string }[] }>(`select indexdef as def from pg_indexes where tablename = ? order by indexname`, [
          table,
        ])
      ).rows.map((r) => r.def.replace(/^.* USING /, ''));
    expect(await indexes(dayName(today - 86_400_000))).toEqual(['btree (account_id, "time")', 'brin ("time")']);
    expect(await indexes(dayName(today))).toEqual(['brin ("time")']);
    // The retention test above may have indexed yesterday already; a day is indexed once.
    expect(report.indexed).not.toContain(dayName(today));
    expect((await maintainRequestLog(t.db, new Date(), undefined)).indexed).toEqual([]);

    const res = await logOf(w.accounts.full.auth, { FromTime: new Date(today - 86_400_000).toISOString(), TimeSpan: 'P1D' }).expect(200);
    const ids = (res.body as LoggedRequest[]).map((e) => e.requestId).filter((id) => id.startsWith('ended-'));
    expect(ids).toEqual([`${mine}-1`, `${mine}-2`]);
  });
});

describe('the account request log behind a trusted proxy (TRUST_PROXY)', () => {
  const { t, w } = useTestWorld({ REQUEST_LOG_FLUSH_MS: '50', TRUST_PROXY: 'true' });

  it('when a request comes through the proxy, then the address logged is the client’s from X-Forwarded-For', async () => {
    const id = uniq('log-proxied-');
    expect((await readForwarded(t.app, w.accounts.full.auth, id)).status).toBe(200);
    const address = await untilValue(
      `request ${id} in the log`,
      async () =>
        (await t.db('request_log').where({ request_id: id }).first<{ client_address: string } | undefined>('client_address'))
          ?.client_address,
      (a) => a !== undefined,
      { timeoutMs: 20_000 },
    );
    expect(address).toBe(FORWARDED_FOR);
  });
});
