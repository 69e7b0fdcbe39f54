import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { useTestWorld } from '../harness/useTestWorld';
import { createOwnDatabase } from '../harness/testApp';
import { listen, RunningServer } from '../../src/app/server';
import { rawHttp, RawHttpTimeout, RawResponse } from '../harness/rawHttp';
import {
  bodyBytes,
  buildCase,
  FuzzCase,
  FuzzOperation,
  FuzzWorld,
  OMIT,
  operationsOf,
  replayable,
  targetsOf,
} from '../harness/fuzz/openApiCases';

/**
 * The fuzz suite: requests generated from the OpenAPI document the app serves — every operation,
 * every parameter and body property, with hostile values (control characters, characters above
 * U+00FF, lone surrogates raw and percent-encoded, invalid UTF-8, huge, negative, hex and exponent
 * numbers, long strings, deep nesting, wrong types, empty values, duplicate and unknown
 * parameters, odd Accept and Content-Type, bodies that are not JSON or are cut short, malformed
 * paths, odd credentials) — sent over real sockets to the real server (the production `listen`)
 * on a database of its own. Every answer must be below 500, come within the time limit, and a
 * 4xx must be a problem document with a type; afterwards /api/readyz still answers 200.
 *
 * FUZZ_SEED (default below) and FUZZ_COUNT (default 2400) choose the cases; FUZZ_ONLY=12,345
 * replays single cases of the seed. A failure prints each failing case as a curl command line
 * and as JSON (docs/operations.md, "Testing").
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const COUNT = Number(process.env.FUZZ_COUNT ?? 2400);
const ONLY = process.env.FUZZ_ONLY?.split(',').map(Number);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 4);
const REQUEST_TIMEOUT_MS = Number(process.env.FUZZ_REQUEST_TIMEOUT_MS ?? 20000);
/**
 * The login burst: 128 requests at once, each waiting its turn for a password check (a few run
 * at a time, tens of milliseconds each on a quiet machine, many times that on a loaded one).
 */
const BURST_TIMEOUT_MS = 90_000;

let own: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  own = await createOwnDatabase('fuzz');
}, 120_000);

describe('fuzzing every endpoint from the OpenAPI document', () => {
  // Data made by the fuzz (do-not-call entries for every project, leads, hooks) stays in the file's own database.
  const { t, w } = useTestWorld(() => ({ DATABASE_URL: own.url, AUTH_CACHE_TTL_MS: '30000' }));
  let server: RunningServer;
  let port: number;
  const ids = {
    lead: '',
    call: '',
    event: '',
    hook: '',
    delivery: '',
    leadDefinition: '',
    calendar: '',
    search: '',
    doomedEvent: '',
    doomedHook: '',
    doomedLead: '',
  };

  beforeAll(async () => {
    ids.lead = `fuzz-lead-${w.id}`;
    ids.call = `fuzz-call-${w.id}`;
    ids.calendar = `fuzz-cal-${w.id}`;
    ids.search = `fuzz search ${w.id}`;
    // DELETE and anonymize get records of their own, so the others keep theirs for the whole run.
    ids.doomedLead = `fuzz-doomed-${w.id}`;
    const at = '2026-05-06T08:30:00+02:00';
    await t.load(
      {
        type: 'lead',
        campaign: w.campaigns.b2b,
        uniqueId: ids.lead,
        data: { Name: 'Fuzz', Telefon: '+45 12 34 56 78', Email: 'fuzz@example.com' },
      },
      { type: 'lead', campaign: w.campaigns.b2b, uniqueId: ids.doomedLead, data: { Name: 'Doomed', Telefon: '+45 12 34 56 77' } },
      {
        type: 'lead',
        campaign: w.campaigns.retail,
        uniqueId: `${ids.lead}-retail`,
        data: { Name: 'Fuzz retail', Telefon: '+45 12 34 56 79' },
      },
      {
        type: 'call',
        campaign: w.campaigns.b2b,
        user: w.users.agent,
        uniqueId: ids.call,
        uniqueLeadId: ids.lead,
        leadPhoneNumber: '+45 12 34 56 78',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: at,
        connectTime: at,
        endTime: at,
        previewDuration: 'PT0S',
        dialingDuration: 'PT0S',
        conversationDuration: 'PT1M',
        wrapUpDuration: 'PT0S',
        leadStatus: 'UserProcessed',
        leadClosure: 'Success',
      },
      { type: 'recording', call: ids.call, startTime: at, endTime: at, recordingType: 'FullRecording', fileName: 'fuzz.wav' },
      { type: 'readyPeriod', orgCode: w.users.agent, campaign: w.campaigns.b2b, startTime: at, seconds: 60 },
      { type: 'calendar', code: ids.calendar, project: w.projects.b2b },
      { type: 'savedSearch', user: w.users.agent, name: ids.search, campaigns: [w.campaigns.b2b] },
    );
    const full = w.accounts.full.auth;
    const newEvent = async () => {
      const event = await request(t.app).post('/api/calendars/events').set('Authorization', full).send({
        calendarCode: ids.calendar,
        leadUniqueId: ids.lead,
        title: 'Fuzz',
        notes: '',
        start: '2031-02-03T10:00:00',
        end: '2031-02-03T10:30:00',
        source: '',
        externalId: '',
      });
      expect(event.status).toBe(200);
      return (event.body as { uniqueId: string }).uniqueId;
    };
    const newHook = async () => {
      const hook = await request(t.app)
        .post('/api/hooks')
        .set('Authorization', full)
        .send({ name: 'Fuzz', url: 'https://example.com/fuzz/{UniqueId}', campaignCode: w.campaigns.b2b });
      expect(hook.status).toBe(201);
      return (hook.body as { uniqueId: string }).uniqueId;
    };
    [ids.event, ids.doomedEvent, ids.hook, ids.doomedHook] = [await newEvent(), await newEvent(), await newHook(), await newHook()];
    const listed = await request(t.app)
      .post('/api/donotcallnumbers')
      .set('Authorization', full)
      .send({ phoneNumber: '+45 20 30 40 50', project: w.projects.b2b });
    expect(listed.status).toBe(200);
    const delivery = await request(t.app).post(`/api/hooks/${ids.hook}/test`).set('Authorization', full);
    expect(delivery.status).toBe(202);
    ids.delivery = String((delivery.body as { deliveryId: string }).deliveryId);
    const definitions = await request(t.app).get('/api/leaddefinitions').set('Authorization', full);
    ids.leadDefinition = (definitions.body as { name: string; uniqueId: string }[]).find((d) => d.name === w.leadDefinition)!.uniqueId;
    server = await listen(t.app, { ...t.settings, PORT: 0, HOST: '127.0.0.1' });
    port = Number(new URL(server.url).port);
  });

  afterAll(async () => {
    await server?.close();
  });

  /** Values that exist in this world, so a hostile value next to them gets as far as it can. */
  function fuzzWorld(): FuzzWorld {
    const times: Record<string, string> = {
      starttime: '2026-05-06T00:00:00',
      fromtime: '2026-05-06T00:00:00',
      timespan: 'P1D',
      fromdate: '2026-05-01',
      todate: '2031-12-31',
      modifiedfrom: '2026-01-01T00:00:00',
      modifiedto: '2032-01-01',
    };
    return {
      auth: { full: w.accounts.full.auth, b2b: w.accounts.b2b.auth, none: w.accounts.none.auth },
      maxDepth: t.settings.BODY_MAX_DEPTH,
      valid(op: FuzzOperation, name: string, where) {
        const n = name.toLowerCase();
        if (where === 'path') {
          if (n === 'uniqueid') {
            const doomed = op.method === 'DELETE' || op.path.endsWith('/anonymize');
            if (op.path.startsWith('/calendars/events')) return doomed ? ids.doomedEvent : ids.event;
            if (op.path.startsWith('/leads')) return doomed ? ids.doomedLead : ids.lead;
            if (op.path.startsWith('/hooks')) return doomed ? ids.doomedHook : ids.hook;
            if (op.path.startsWith('/calls')) return ids.call;
            if (op.path.startsWith('/leaddefinitions')) return ids.leadDefinition;
          }
          if (n === 'deliveryid') return ids.delivery;
          if (n === 'calendarcode') return ids.calendar;
          if (n === 'code') return op.path.startsWith('/problems') ? 'invalid_parameter' : w.campaigns.b2b;
          if (n === 'orgcode') return op.path.startsWith('/users') ? w.users.agent : w.units.team;
          if (n === 'phonenumber') return '+4520304050';
          return undefined;
        }
        if (where === 'header') {
          if (n === 'prefer') return 'datetime=utc';
          if (n === 'if-match') return '*';
          if (n === 'idempotency-key') return `fuzz-${w.id}`;
          return undefined;
        }
        if (times[n]) return times[n];
        if (where === 'query') {
          const query: Record<string, string> = {
            orgcode: w.units.root,
            limit: '5',
            encoding: 'utf-8',
            csvfieldseparator: ';',
            project: w.projects.b2b,
            projects: w.projects.b2b,
            campaigns: w.campaigns.b2b,
            uniqueid: ids.lead,
            searchname: ids.search,
            campaigncode: w.campaigns.b2b,
            leadpool: 'fuzz pool',
            include: op.path.includes('call') ? 'user' : op.path.includes('lead') ? 'campaign' : 'parent',
          };
          return query[n];
        }
        const body: Record<string, unknown> = {
          '(body)': [{ Name: 'Fuzz bulk', Telefon: '+45 12 34 56 70' }],
          calendarcode: ids.calendar,
          leaduniqueid: ids.lead,
          title: 'Fuzz',
          notes: '',
          start: '2031-02-03T10:00:00+01:00',
          end: '2031-02-03T10:30:00+01:00',
          source: 'fuzz',
          externalid: 'x1',
          uniqueid: op.method === 'DELETE' ? ids.doomedEvent : ids.event,
          campaigncode: w.campaigns.b2b,
          leadpool: 'fuzz pool',
          data: op.method === 'PATCH' ? { Email: 'fuzz@example.com' } : { Name: 'Fuzz', Telefon: '+45 12 34 56 78' },
          priority: 10,
          status: OMIT,
          name: 'Fuzz hook',
          description: 'fuzz',
          url: 'https://example.com/fuzz/{UniqueId}',
          method: 'POST',
          format: 'Json',
          events: ['lead.statusChanged'],
          projects: [w.projects.b2b],
          leadstatus: OMIT,
          contenttemplate: OMIT,
          standardtemplatename: OMIT,
          enabled: true,
          phonenumber: '+45 20 30 40 51',
          project: w.projects.b2b,
          note: 'fuzz',
          expirestime: '2031-01-01T00:00:00',
        };
        return body[n];
      },
    };
  }

  /** Long bodies of failing cases go to files, so their curl line stays short enough to paste. */
  const saveBody = (c: FuzzCase) => (bytes: Buffer) => {
    const file = path.join(os.tmpdir(), `fuzz-${SEED}-${c.index}.body`);
    fs.writeFileSync(file, bytes);
    return file;
  };

  function check(c: FuzzCase, res: RawResponse): string | undefined {
    if (res.status >= 500) return `answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`;
    if (res.status < 400) return undefined;
    const type = res.headers['content-type'] ?? '';
    if (!type.startsWith('application/problem+json'))
      return `a ${res.status} with Content-Type ${JSON.stringify(type)}: ${res.body.toString('latin1').slice(0, 200)}`;
    try {
      const problem = JSON.parse(res.body.toString('utf8')) as { type?: unknown; status?: unknown };
      if (typeof problem.type !== 'string' || !problem.type.startsWith('/api/problems/'))
        return `a ${res.status} problem without a type: ${res.body.toString('utf8').slice(0, 200)}`;
      if (problem.status !== res.status) return `a ${res.status} problem saying status ${String(problem.status)}`;
    } catch {
      return `a ${res.status} problem that is not JSON: ${res.body.toString('latin1').slice(0, 200)}`;
    }
    return undefined;
  }

  it(`when ${ONLY ? ONLY.length : COUNT} generated requests (seed ${SEED}) hit every endpoint, then none is a 5xx or hangs, every 4xx is a problem document, and the server still answers`, async () => {
    const doc = (await request(t.app).get('/api/openapi.json')).body as Parameters<typeof operationsOf>[0];
    const operations = operationsOf(doc);
    const targets = targetsOf(operations);
    const world = fuzzWorld();
    const indexes = ONLY ?? Array.from({ length: COUNT }, (_, i) => i);
    // Every operation of the document is aimed at, whatever the count (a count below the number of targets covers a prefix).
    const covered = new Set(indexes.map((i) => targets[i % targets.length]!.operation));
    if (!ONLY && COUNT >= targets.length) expect(covered.size).toBe(operations.length);

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const byOperation = new Map<string, Record<number, number>>();
    const slowest: { ms: number; index: number; operation: string; target: string }[] = [];
    let next = 0;
    const worker = async () => {
      while (next < indexes.length) {
        const c = buildCase(SEED, indexes[next++]!, targets, world);
        const body = bodyBytes(c);
        let problem: string | undefined;
        const started = Date.now();
        try {
          const res = await rawHttp(port, { method: c.method, target: c.url, headers: c.headers, body }, REQUEST_TIMEOUT_MS);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const seen = byOperation.get(c.operation) ?? {};
          seen[res.status] = (seen[res.status] ?? 0) + 1;
          byOperation.set(c.operation, seen);
          problem = check(c, res);
        } catch (e) {
          problem = e instanceof RawHttpTimeout ? `hung: ${e.message}` : `the exchange failed: ${(e as Error).message}`;
        }
        slowest.push({ ms: Date.now() - started, index: c.index, operation: c.operation, target: c.target });
        if (slowest.length > 10) slowest.sort((a, b) => b.ms - a.ms).pop();
        if (problem)
          failures.push(
            `#${c.index} ${c.operation} [${c.target}, account ${c.account}]: ${problem}\n${replayable(c, `http://127.0.0.1:${port}`, saveBody(c))}`,
          );
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    const ready = await rawHttp(port, { method: 'GET', target: '/api/readyz', headers: [] }, REQUEST_TIMEOUT_MS).catch((e: Error) => ({
      status: 0,
      error: e.message,
    }));
    const summary = `${indexes.length} requests over ${targets.length} targets of ${operations.length} operations; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`;
    if (process.env.FUZZ_VERBOSE)
      console.log(
        `${summary}\n${[...byOperation].map(([op, s]) => `${op} ${JSON.stringify(s)}`).join('\n')}\nslowest: ${JSON.stringify(slowest)}`,
      );
    if (failures.length > 0 || ready.status !== 200) {
      failures.push(`after the run /api/readyz answered ${JSON.stringify(ready)}`);
      throw new Error(
        `${failures.length} of ${summary} failed (replay one with FUZZ_SEED=${SEED} FUZZ_ONLY=<index>):\n\n${failures.slice(0, 25).join('\n\n')}`,
      );
    }
    expect(ready.status).toBe(200);
    if (ONLY) return;
    // Most requests get past validation, or the fuzz only tests the first check of each endpoint.
    expect([...statuses].filter(([s]) => s < 400).reduce((n, [, k]) => n + k, 0)).toBeGreaterThan(indexes.length / 10);
  }, 600_000);

  it(
    'when 64 wrong passwords for one user and 64 guesses at unknown names, some with hostile bytes, arrive at once, then each is a 401 or 429 problem document within the failure caps, and the server still answers',
    async () => {
      const basic = (username: string, password: string) => 'Basic ' + Buffer.from(`${username}:${password}`, 'utf8').toString('base64');
      const named = w.accounts.full.username;
      const guesses = [
        ...Array.from({ length: 64 }, (_, i) => ({
          named: true,
          auth: basic(named, `wrong-${SEED}-${i}${i % 3 === 0 ? '\u0000\u00ff\ud83d' : ''}`),
        })),
        ...Array.from({ length: 64 }, (_, i) => ({
          named: false,
          auth: basic(`nobody-${SEED}-${i}${'\u00e6'.repeat(i * 8)}`, `guess-${i}`),
        })),
      ];
      const answers = await Promise.all(
        guesses.map(async (g) => ({
          ...g,
          res: await rawHttp(port, { method: 'GET', target: '/api/myaccount', headers: [['Authorization', g.auth]] }, BURST_TIMEOUT_MS),
        })),
      );
      const wrong = answers
        .filter(
          ({ res }) =>
            (res.status !== 401 && res.status !== 429) || !(res.headers['content-type'] ?? '').startsWith('application/problem+json'),
        )
        .map(({ res }) => `${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
      expect(wrong).toEqual([]);
      // Checked (401) at most as often as the caps allow: per address and user, and per address.
      const checked = (of: boolean) => answers.filter((a) => a.named === of && a.res.status === 401).length;
      expect(checked(true)).toBeLessThanOrEqual(t.settings.LOGIN_FAILURES_PER_USER);
      expect(checked(true) + checked(false)).toBeLessThanOrEqual(t.settings.LOGIN_FAILURES_PER_ADDRESS);
      const ready = await rawHttp(port, { method: 'GET', target: '/api/readyz', headers: [] }, REQUEST_TIMEOUT_MS);
      expect(ready.status).toBe(200);
    },
    2 * BURST_TIMEOUT_MS,
  );
});

afterAll(async () => {
  await own?.drop();
});
