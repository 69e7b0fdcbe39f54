/**
 * Live events benchmark, run on demand:
 *   npm run bench:events [-- --streams 1000 --rate 500 --seconds 30 --projects 20 --workers 2 --writers 8 --all-streams 0]
 *                            [--client-processes 2 --statements N --server-node-args '--cpu-prof --cpu-prof-dir=DIR']
 *
 * One node as it runs in production: `lcm serve` (the compiled build) with `--workers` HTTP
 * workers and its jobs process, on a throwaway embedded Postgres. `--streams` Server-Sent Events
 * streams are opened on GET /api/events, by 50 accounts (at most 20 each, the EVENTS_MAX_STREAMS
 * default), each stream narrowed to one of `--projects` projects with `Projects=`, except
 * `--all-streams` of them that take every event. Then `--rate` lead events per second are
 * written for `--seconds`, one per transaction (`lead.statusChanged` of existing leads through
 * recordLeadEvents, the sources' own code), spread over the projects, by `--writers`
 * connections; every 10 ms the events due by then are written, so the rate stays smooth.
 *
 * Reported: events written and delivered (every stream must get each event of its project once:
 * missing and repeated are counted), the latency from the start of each writing transaction to
 * the event's arrival on each stream (an upper bound of commit-to-stream: it includes the
 * transaction itself) as p50/p99/max, the HTTP workers' resident memory before the streams
 * open, once they are open, and at the end of the run, their CPU time, the Postgres connections
 * of the node with and without the streams, and the load average.
 */
import { ChildProcess, execSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startEmbeddedPostgres } from '../src/app/embeddedPostgres';
import { createDb, migrateLatest } from '../src/data/db';
import { recordLeadEvents } from '../src/data/hookEvents';
import { createAccount } from '../src/ingest/accountCommands';
import { freePort, numberOption, parentPid, processCpuMs, processFamilyCpuMs, rssMb, textOption, waitFor } from './support';

const STREAMS = numberOption('streams', 1000);
const RATE = numberOption('rate', 500);
const SECONDS = numberOption('seconds', 30);
const PROJECTS = Math.max(1, numberOption('projects', 20));
const WORKERS = Math.max(1, numberOption('workers', 2));
const WRITERS = Math.max(1, numberOption('writers', 8));
const ALL_STREAMS = numberOption('all-streams', 0);
const CLIENT_PROCESSES = Math.max(1, numberOption('client-processes', 2));
/** With `--statements N`, the N statements that took Postgres the most time during the run (pg_stat_statements). */
const STATEMENTS = numberOption('statements', 0);
/** Node.js options of `lcm serve` and the workers it forks (a CPU profile of each: `--cpu-prof --cpu-prof-dir=DIR`). */
const SERVER_NODE_ARGS = textOption('server-node-args', '').split(' ').filter(Boolean);
const ACCOUNTS = 50;
const PER_ACCOUNT = Math.ceil(STREAMS / ACCOUNTS);
const TICK_MS = 10;
const LCM = path.resolve(__dirname, '../bin/lcm.js');

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** The HTTP workers of a supervisor (Linux /proc), by the role it gave them. */
function httpWorkers(supervisor: number): number[] {
  const children = fs
    .readFileSync(`/proc/${supervisor}/task/${supervisor}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  return children.filter((pid) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes('LCM_WORKER_ROLE=http'));
}

/** What a client process is asked to open: stream i by `account`, narrowed to `project` (undefined: every event). */
interface StreamPlan {
  account: number;
  project: number | undefined;
}

/** One stream's arrivals: the lead of each event and when it came, as flat pairs (lead, epoch ms). */
interface StreamReport {
  project: number | undefined;
  repeated: number;
  arrivals: number[];
}

type ToClient = { kind: 'open'; port: number; plans: StreamPlan[] } | { kind: 'report' };
type FromClient = { kind: 'opened' } | { kind: 'failed'; reason: string } | { kind: 'report'; streams: StreamReport[] };

/** Milliseconds on one clock for every process of the benchmark. */
const now = () => performance.timeOrigin + performance.now();

/** What starts each event's envelope data in the stream: the lead's unique id follows. */
const LEAD_MARK = Buffer.from(',"data":{"uniqueId":"lead-');

/**
 * A client process: opens its share of the streams (the SSE parsing of a thousand streams would
 * otherwise hold up the writers' event loop) and reports what arrived when. Each stream is a
 * plain socket with just enough HTTP/1.1 for the benchmark: the request, the status line, and
 * in the body each event's lead (what starts its envelope's data), searched in the bytes as they
 * come; the clients share the two cores with the server, and node:http's response streams cost
 * them a fifth more CPU (docs/benchmarks.md, "The benchmark's clients on plain sockets").
 */
function runClients(): void {
  const streams: (StreamReport & { socket: net.Socket; seen: Set<number> })[] = [];
  const send = (message: FromClient, sent?: () => void) => process.send!(message, undefined, {}, sent);
  const open = (port: number, plan: StreamPlan) =>
    new Promise<void>((resolve, reject) => {
      const query = plan.project === undefined ? '' : `?Projects=${encodeURIComponent(`Project ${plan.project}`)}`;
      const auth = `Basic ${Buffer.from(`bench${plan.account}:bench-password`).toString('base64')}`;
      const socket = net.connect({ host: '127.0.0.1', port });
      const stream = { project: plan.project, repeated: 0, arrivals: [] as number[], seen: new Set<number>(), socket };
      socket.setNoDelay(true);
      socket.write(
        `GET /api/events${query} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nAuthorization: ${auth}\r\n\r\n`,
      );
      // Bytes not yet searched to the end: the response head until it is complete, then at most an event's cut start.
      let pending: Buffer | undefined;
      let head = true;
      socket.on('data', (chunk: Buffer) => {
        const at = now();
        let buf = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
        pending = undefined;
        if (head) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) {
            pending = buf;
            return;
          }
          if (!buf.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 200 ')) {
            reject(new Error(`a stream was answered ${buf.subarray(0, buf.indexOf('\r\n')).toString('latin1')}`));
            socket.destroy();
            return;
          }
          head = false;
          streams.push(stream);
          resolve();
          buf = buf.subarray(end + 4);
        }
        let at0 = 0;
        for (;;) {
          const found = buf.indexOf(LEAD_MARK, at0);
          if (found < 0) {
            // Keep what could be the start of a mark cut by this read.
            if (buf.length - at0 > 0) pending = Buffer.from(buf.subarray(Math.max(at0, buf.length - LEAD_MARK.length)));
            return;
          }
          let p = found + LEAD_MARK.length;
          let id = 0;
          while (p < buf.length && buf[p]! >= 0x30 && buf[p]! <= 0x39) id = id * 10 + buf[p++]! - 0x30;
          if (p === buf.length) {
            pending = Buffer.from(buf.subarray(found));
            return;
          }
          if (stream.seen.has(id)) stream.repeated += 1;
          stream.seen.add(id);
          stream.arrivals.push(id, at);
          at0 = p;
        }
      });
      socket.once('error', reject);
    });
  process.on('message', (message: ToClient) => {
    if (message.kind === 'open') {
      void (async () => {
        try {
          for (let i = 0; i < message.plans.length; i += 50)
            await Promise.all(message.plans.slice(i, i + 50).map((p) => open(message.port, p)));
          send({ kind: 'opened' });
        } catch (err) {
          send({ kind: 'failed', reason: (err as Error).message });
        }
      })();
    } else {
      for (const s of streams) s.socket.destroy();
      // Disconnecting at once could drop the report (a large message) before it is written.
      send({ kind: 'report', streams: streams.map(({ project, repeated, arrivals }) => ({ project, repeated, arrivals })) }, () =>
        process.disconnect(),
      );
    }
  });
}

async function main(): Promise<void> {
  execSync('node scripts/build.js', { cwd: path.resolve(__dirname, '..'), stdio: 'inherit' });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-bench-events-'));
  fs.chmodSync(root, 0o755);
  const cluster = await startEmbeddedPostgres({
    dataDir: path.join(root, 'pg'),
    port: await freePort(),
    database: 'bench',
    persistent: false,
    ...(STATEMENTS > 0 ? { settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } } : {}),
  });
  // The benchmark's own connections carry a name, so the node's can be counted apart.
  const benchUrl = new URL(cluster.url);
  benchUrl.searchParams.set('application_name', 'bench');
  const db = createDb({ url: benchUrl.toString(), timezone: 'Europe/Copenhagen', poolMax: WRITERS + 2 });
  let server: ReturnType<typeof spawn> | undefined;
  let output = '';
  const clients: ChildProcess[] = [];
  try {
    await migrateLatest(db);
    const leadsPerProject = Math.ceil((RATE * SECONDS) / PROJECTS) + 1;
    await db.raw(`
      insert into org_units (unique_id, org_code, name, level) values ('ou', 'ROOT', 'Root', 0);
      insert into users (unique_id, org_code, username, name, parent_id, email) values ('u', 'agent', 'agent', 'Agent', 1, 'agent@example.com');
      insert into lead_definitions (unique_id, name) values ('def', 'Def');
      insert into lead_definition_fields (lead_definition_id, name, type, sort_order) values (1, 'Name', 'text', 0), (1, 'Phone', 'phone', 1), (1, 'Email', 'email', 2);
      insert into campaigns (unique_id, code, name, project, lead_definition_id, campaign_type)
        select 'c' || p, 'BENCH-' || p, 'Bench ' || p, 'Project ' || p, 1, 1 from generate_series(0, ${PROJECTS - 1}) p;
      insert into lead_pools (campaign_id, name) select id, 'pool' from campaigns;
      insert into leads (unique_id, campaign_id, pool_id, phone_number, data, uploaded_by_user_id, last_modified_by_user_id)
        select 'lead-' || (p * ${leadsPerProject} + i), c.id, l.id, '+4512345678',
               jsonb_build_object('Name', 'Lead ' || i, 'Phone', '+4512345678', 'Email', 'lead' || i || '@example.com'), 1, 1
          from generate_series(0, ${PROJECTS - 1}) p
          join campaigns c on c.code = 'BENCH-' || p join lead_pools l on l.campaign_id = c.id,
               generate_series(0, ${leadsPerProject - 1}) i;
    `);
    for (let a = 0; a < ACCOUNTS; a++) {
      await createAccount(db, {
        username: `bench${a}`,
        password: 'bench-password',
        userOrgCode: 'agent',
        projects: ['*'],
        rights: { Leads: ['Get'] },
        entryAccess: a % 2 === 0 ? 'Full' : 'Partner',
      });
    }

    const port = await freePort();
    server = spawn(process.execPath, [...SERVER_NODE_ARGS, LCM, 'serve'], {
      env: {
        ...process.env,
        DATABASE_URL: cluster.url,
        PORT: String(port),
        WEB_CONCURRENCY: String(WORKERS),
        LOG_LEVEL: 'warn',
        // Every stream opens from one address, a first login of many accounts at once: not a flood.
        LOGIN_FAILURES_PER_ADDRESS: '100000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await waitFor(
      () => Promise.resolve(/listening on/.test(output) && httpWorkers(server!.pid!).length === WORKERS),
      'lcm serve to listen',
      120_000,
    );
    const workers = httpWorkers(server.pid!);
    // A worker that died makes the figures NaN (and the supervisor's log says why).
    const rss = () => workers.reduce((sum, pid) => sum + (fs.existsSync(`/proc/${pid}`) ? rssMb(pid) : NaN), 0);
    const cpu = () => workers.reduce((sum, pid) => sum + (fs.existsSync(`/proc/${pid}`) ? processCpuMs(pid) : NaN), 0);
    const connections = async () =>
      Number(
        (
          await db.raw<{ rows: { n: number }[] }>(
            `select count(*) as n from pg_stat_activity where backend_type = 'client backend' and datname = current_database()
               and pid <> pg_backend_pid() and application_name <> 'bench'`,
          )
        ).rows[0]!.n,
      );
    // Warm the workers before the baseline: every account logs in on both (a password check
    // takes tens of MB while it runs, which the streams must not be charged with), and the pools fill.
    for (let round = 0; round < 2 * WORKERS; round++) {
      await Promise.all(
        Array.from(
          { length: ACCOUNTS },
          (_, a) =>
            new Promise<void>((resolve) =>
              http.get(
                {
                  host: '127.0.0.1',
                  port,
                  path: '/api/myaccount',
                  agent: false,
                  headers: { Authorization: `Basic ${Buffer.from(`bench${a}:bench-password`).toString('base64')}` },
                },
                (res) => res.resume().once('end', () => resolve()),
              ),
            ),
        ),
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
    const before = { rss: rss(), connections: await connections() };

    // When each lead's writing transaction started (it had its connection) and when its COMMIT returned, in this process's clock.
    const startedAt = new Map<number, number>();
    const committed = new Map<number, number>();
    const transactionMs: number[] = [];
    const plans: StreamPlan[] = Array.from({ length: STREAMS }, (_, i) => ({
      account: Math.floor(i / PER_ACCOUNT),
      project: i < ALL_STREAMS ? undefined : i % PROJECTS,
    }));
    // A client process that ends before it answers fails the run (instead of leaving it waiting).
    const ask = (client: ChildProcess, message: ToClient) =>
      new Promise<FromClient>((resolve, reject) => {
        const ended = (code: number | null, signal: string | null) =>
          reject(new Error(`a client process ended before answering ${message.kind} (code ${code}, signal ${signal})`));
        client.once('exit', ended);
        client.once('message', (answer: FromClient) => {
          client.off('exit', ended);
          resolve(answer);
        });
        client.send(message);
      });
    for (let c = 0; c < CLIENT_PROCESSES; c++) {
      const client = spawn(process.execPath, [path.resolve(__dirname, '../bin/run-ts.js'), __filename, '--clients'], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      client.once('exit', (code, signal) => console.error(`client process ${client.pid} ended (code ${code}, signal ${signal})`));
      clients.push(client);
    }
    const opening = await Promise.all(
      clients.map((client, c) => ask(client, { kind: 'open', port, plans: plans.filter((_, i) => i % CLIENT_PROCESSES === c) })),
    );
    for (const answer of opening) if (answer.kind === 'failed') throw new Error(answer.reason);
    await new Promise((r) => setTimeout(r, 2000));
    const opened = { rss: rss(), connections: await connections() };

    // The writers: RATE events/s, one per transaction, each of the next lead of the next project.
    const leadIds = new Map<number, number>(
      (await db<{ id: number; unique_id: string }>('leads').select('id', 'unique_id')).map((l) => [Number(l.unique_id.slice(5)), l.id]),
    );
    const nextOfProject = new Array<number>(PROJECTS).fill(0);
    const written: { lead: number; project: number }[] = [];
    let inFlight = 0;
    let peakInFlight = 0;
    const postmaster = parentPid((await db.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid')).rows[0]!.pid);
    // Where the two cores go: the HTTP workers, the whole node (supervisor, workers, jobs process), Postgres, the clients, the writers.
    const cpuShares = () => ({
      node: processFamilyCpuMs(server!.pid!),
      postgres: processFamilyCpuMs(postmaster),
      clients: clients.reduce((sum, client) => sum + processCpuMs(client.pid!), 0),
      writers: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
    });
    if (STATEMENTS > 0) await db.raw('create extension if not exists pg_stat_statements; select pg_stat_statements_reset()');
    const shares0 = cpuShares();
    const cpu0 = cpu();
    let peakRss = opened.rss;
    const start = performance.now();
    const rssAtQuarter: number[] = [];
    const sampler = setInterval(() => {
      const current = rss();
      peakRss = Math.max(peakRss, current);
      if (performance.now() - start >= ((rssAtQuarter.length + 1) * SECONDS * 1000) / 4 && rssAtQuarter.length < 4)
        rssAtQuarter.push(current);
    }, 250);
    const pending: Promise<void>[] = [];
    let due = 0;
    while (performance.now() - start < SECONDS * 1000) {
      const target = Math.floor(((performance.now() - start) / 1000) * RATE);
      while (due < target) {
        const project = due % PROJECTS;
        const lead = project * leadsPerProject + nextOfProject[project]!++;
        due += 1;
        written.push({ lead, project });
        const write = async (): Promise<void> => {
          inFlight += 1;
          peakInFlight = Math.max(peakInFlight, inFlight);
          await db.transaction((trx) => {
            // From here (the transaction has its connection): what waiting for a connection took is not counted.
            startedAt.set(lead, now());
            return recordLeadEvents(trx, 'lead.statusChanged', [{ leadId: leadIds.get(lead)!, previousStatus: 'New' }], new Date());
          });
          const committedAt = now();
          transactionMs.push(committedAt - startedAt.get(lead)!);
          committed.set(lead, committedAt);
          inFlight -= 1;
        };
        pending.push(write());
      }
      await new Promise((r) => setTimeout(r, TICK_MS));
    }
    await Promise.all(pending);
    const writeSeconds = (performance.now() - start) / 1000;
    // Let the last events arrive, then collect what each stream got.
    await new Promise((r) => setTimeout(r, 5000));
    clearInterval(sampler);
    const cpuMs = cpu() - cpu0;
    const shares1 = cpuShares();
    const statements =
      STATEMENTS > 0
        ? (
            await db.raw<{ rows: { calls: number; ms: number; query: string }[] }>(
              `select calls, total_exec_time + total_plan_time as ms, regexp_replace(query, '\\s+', ' ', 'g') as query
                 from pg_stat_statements order by ms desc limit ?`,
              [STATEMENTS],
            )
          ).rows
        : [];
    const share = (key: keyof typeof shares0) => `${key} ${f((shares1[key] - shares0[key]) / 1000)} s`;
    const end = { rss: rss() };
    const reports = (await Promise.all(clients.map((client) => ask(client, { kind: 'report' })))).flatMap((answer) =>
      answer.kind === 'report' ? answer.streams : [],
    );
    const latencies: number[] = [];
    const afterCommit: number[] = [];
    let delivered = 0;
    let wanted = 0;
    let repeated = 0;
    for (const report of reports) {
      const expected = written.filter((w) => report.project === undefined || w.project === report.project);
      wanted += expected.length;
      repeated += report.repeated;
      const got = new Set<number>();
      for (let i = 0; i < report.arrivals.length; i += 2) {
        const lead = report.arrivals[i]!;
        const at = report.arrivals[i + 1]!;
        got.add(lead);
        latencies.push(at - startedAt.get(lead)!);
        afterCommit.push(at - committed.get(lead)!);
      }
      delivered += expected.filter((w) => got.has(w.lead)).length;
    }
    const sorted = (values: number[]) => Float64Array.from(values).sort();
    const latency = sorted(latencies);
    const lowerBound = sorted(afterCommit);
    const transactions = sorted(transactionMs);
    const [load1, load5] = os.loadavg();
    const f = (n: number, d = 1) => n.toFixed(d);
    console.log(
      [
        `streams ${STREAMS} (${ALL_STREAMS} unfiltered, the rest one of ${PROJECTS} projects each) on ${WORKERS} HTTP workers; ${WRITERS} writer connections`,
        `written ${written.length} events in ${f(writeSeconds)} s (${f(written.length / writeSeconds, 0)}/s, one per transaction; ${peakInFlight} transactions in flight at most)`,
        `delivered ${delivered} of ${wanted} (missing ${wanted - delivered}, repeated ${repeated})`,
        `latency from the writing transaction's start to arrival: p50 ${f(percentile(latency, 50))} ms, p99 ${f(percentile(latency, 99))} ms, max ${f(latency.at(-1) ?? NaN)} ms (${latency.length} samples)`,
        `from the COMMIT's answer to arrival (a lower bound): p50 ${f(percentile(lowerBound, 50))} ms, p99 ${f(percentile(lowerBound, 99))} ms; the writing transactions took p50 ${f(percentile(transactions, 50))} ms, p99 ${f(percentile(transactions, 99))} ms`,
        `HTTP workers' RSS: ${f(before.rss)} MB before the streams, ${f(opened.rss)} MB with them open (+${f(opened.rss - before.rss)}), at each quarter of the run ${rssAtQuarter.map((r) => f(r)).join(', ')} MB, ${f(end.rss)} MB after it, peak ${f(peakRss)} MB (+${f(peakRss - before.rss)})`,
        `HTTP workers' CPU during the run: ${f(cpuMs / 1000)} s (${f((cpuMs / 1000 / writeSeconds) * 100, 0)}% of one core)`,
        `CPU during the run and the 5 s after it (${f(writeSeconds + 5)} s on ${os.cpus().length} cores): ${(['node', 'postgres', 'clients', 'writers'] as const).map(share).join(', ')}`,
        `Postgres connections of the node: ${before.connections} before the streams, ${opened.connections} with them open`,
        `load average ${f(load1!, 2)} (1 min), ${f(load5!, 2)} (5 min)`,
      ].join('\n'),
    );
    for (const st of statements)
      console.log(
        `  ${f(st.ms)} ms in ${st.calls} calls (${f((st.ms * 1000) / Math.max(1, st.calls), 0)} µs each): ${st.query.slice(0, 160)}`,
      );
  } catch (err) {
    console.error(`lcm serve said:\n${output.slice(-5000)}`);
    throw err;
  } finally {
    for (const client of clients) if (client.exitCode === null) client.kill();
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await db.destroy();
    await cluster.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes('--clients')) runClients();
else {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
