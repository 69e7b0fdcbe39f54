import { spawn, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createDb } from '../../src/data/db';
import { freePort } from '../harness/freePort';
import { lcmEnv, LCM_BIN, PROJECT_ROOT, runLcm, runProcess } from '../harness/lcmProcess';
import { until } from '../harness/until';

/**
 * Strict bash for the README's commands. --norc: with its standard input a socket (Node's stdio
 * pipes) and a low SHLVL, Debian's bash takes itself for an ssh session and reads
 * /etc/bash.bashrc, which fails under -u; the commands must not depend on who runs the tests.
 */
const STRICT_BASH = ['--norc', '-euo', 'pipefail', '-c'];

// Every test runs real processes, and some start Postgres clusters: minutes on a loaded machine.
jest.setTimeout(300_000);

/**
 * `npm start` and the README's own `lcm` examples, as a user runs them: `lcm serve` from the
 * compiled build on a fresh embedded database, and while it runs the README's "Loading data"
 * and "Accounts" blocks (with `npm run lcm --` replaced by the same compiled bin), checked
 * through the HTTP API and the database. Also the other way round: a one-shot command holding
 * the embedded database, and a stale record of a server that is gone.
 */
describe('lcm beside a running lcm serve (embedded database, compiled build)', () => {
  let dir: string;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let api: string;
  const runningFile = () => `${dataDir}.running.json`;
  const readRunning = () =>
    JSON.parse(fs.readFileSync(runningFile(), 'utf8')) as { pid: number; command: string; shared: boolean; url?: string };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-beside-'));
    fs.chmodSync(dir, 0o755);
    dataDir = path.join(dir, 'pg');
    const port = await freePort();
    api = `http://127.0.0.1:${port}/api`;
    // A credential cache that outlives the test and no Redis: an account change can reach the
    // server only through the database's notification. Hooks may reach this machine over http (the tour's receiver).
    env = lcmEnv({
      EMBEDDED_DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(await freePort()),
      PORT: String(port),
      AUTH_CACHE_TTL_MS: '3600000',
      SWEEP_INTERVAL_MS: '0',
      HOOKS_ALLOW_HTTP: 'true',
      HOOKS_ALLOWED_HOSTS: '127.0.0.1',
    });
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const basic = (user: string, password: string) => ({ Authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64') });
  const get = (pathAndQuery: string, user: string, password: string) => fetch(`${api}${pathAndQuery}`, { headers: basic(user, password) });

  /** For a command or the server to start. */
  const startUp = { timeoutMs: 120_000, intervalMs: 200 };
  /** For what the server does asynchronously: a deadline far shorter than the credential cache's TTL. */
  const shortly = { timeoutMs: 30_000, intervalMs: 200 };

  it('when a one-shot lcm holds the embedded database, then lcm serve and other commands say so and exit 1, and the holder finishes its work', async () => {
    // `lcm load -` holds the cluster until its standard input ends.
    const load = spawn(process.execPath, [LCM_BIN, 'load', '-'], { env, cwd: PROJECT_ROOT });
    let loadOut = '';
    load.stdout.on('data', (d) => (loadOut += d));
    load.stderr.on('data', (d) => (loadOut += d));
    const loadExit = new Promise<number | null>((resolve) => load.on('close', (code) => resolve(code)));
    try {
      await until(
        'the load to start the cluster',
        () => {
          if (load.exitCode !== null) throw new Error(`lcm load exited: ${loadOut}`);
          return fs.existsSync(runningFile()) && Boolean(readRunning().url);
        },
        startUp,
      );
      const holder = readRunning();
      expect(holder).toMatchObject({ pid: load.pid, command: 'load', shared: false });
      expect(fs.statSync(runningFile()).mode & 0o777).toBe(0o600);

      const busy = `the embedded database in ${dataDir} is in use by "lcm load" (pid ${load.pid}); run this again when it has finished`;
      const serve = await runLcm(['serve'], { env });
      expect(serve).toMatchObject({ code: 1, stderr: `lcm: ${busy}\n`, stdout: '' });
      const list = await runLcm(['account', 'list'], { env });
      expect(list).toMatchObject({ code: 1, stderr: `lcm: ${busy}\n` });

      load.stdin.end(JSON.stringify({ type: 'orgUnit', orgCode: 'Held', name: 'Loaded while others waited' }) + '\n');
      expect(await loadExit).toBe(0);
      expect(loadOut).toBe('loaded 1 line: 1 orgUnit\n');
      expect(fs.existsSync(runningFile())).toBe(false);
    } finally {
      if (load.exitCode === null) load.kill('SIGINT');
    }
  });

  describe('while lcm serve runs', () => {
    let server: ChildProcess;
    let output = '';
    let db: Knex;

    beforeAll(async () => {
      server = spawn(process.execPath, [LCM_BIN, 'serve'], { env: { ...env, LOG_LEVEL: 'warn' }, cwd: PROJECT_ROOT });
      server.stdout!.on('data', (d) => (output += d));
      server.stderr!.on('data', (d) => (output += d));
      await until(
        'lcm serve to start',
        () => {
          if (server.exitCode !== null) throw new Error(`lcm serve exited: ${output}`);
          return output.includes('try: curl');
        },
        startUp,
      );
      db = createDb({ url: readRunning().url!, timezone: 'Europe/Copenhagen' });
    });

    afterAll(async () => {
      await db?.destroy();
      if (server.exitCode === null) {
        server.kill('SIGTERM');
        await new Promise((r) => server.once('exit', r));
      }
    });

    it('when started with node bin/lcm.js serve, then it runs the compiled build and records where its database is', async () => {
      expect(output).toContain(`the compiled build in ${path.join(PROJECT_ROOT, 'dist')}\n`);
      expect(readRunning()).toMatchObject({
        pid: server.pid,
        command: 'serve',
        shared: true,
        url: expect.stringMatching(/^postgres:\/\/.*@127\.0\.0\.1:\d+\/lcm$/) as jest.AsymmetricMatcher,
      });
      // The one-shot load before it kept its record.
      expect(await db('org_units').where({ org_code: 'Held' }).first('name')).toEqual({ name: 'Loaded while others waited' });
    });

    it('when the README tour runs top to bottom, then every command succeeds, its hook reaches the local receiver and every address it names answers', async () => {
      const tour = shellBlocks('A five-minute tour');
      expect(tour).toHaveLength(2);
      const commands = tour.flatMap(shellCommands).filter((line) => !line.trimStart().startsWith('#'));
      const port = new URL(api).port;
      const receiverPort = String(await freePort());
      const local = (command: string) =>
        command
          .replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)
          .replaceAll('127.0.0.1:9000', `127.0.0.1:${receiverPort}`)
          .replaceAll('.listen(9000)', `.listen(${receiverPort})`)
          .replaceAll('/tmp/', `${dir}/`);

      // The receiver runs as the README starts it (in the background), here as a child the test stops.
      const receiverLine = commands.find((c) => c.endsWith(' &'));
      const script = /^node -e '([^']+)' &$/.exec(receiverLine ?? '')?.[1];
      expect(script).toBeDefined();
      const receiver = spawn(process.execPath, ['-e', local(script!)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let received = '';
      receiver.stdout.on('data', (d) => (received += d));
      receiver.stderr.on('data', (d) => (received += d));
      try {
        await until(
          'the receiver to listen',
          async () => (await fetch(`http://127.0.0.1:${receiverPort}/`, { method: 'POST', body: 'ready' })).ok,
          {
            ...shortly,
            ignoreErrors: true,
          },
        );
        const tourDir = fs.mkdtempSync(path.join(dir, 'tour-'));
        const outputs: string[] = [];
        for (const command of commands.filter((c) => c !== receiverLine)) {
          // curl fails on an HTTP error here (the README leaves it showing the problem answer).
          const run = local(command).replaceAll('curl -u', 'curl -sS --fail-with-body -u');
          const result = await runProcess('bash', [...STRICT_BASH, run], {
            env: { ...env, LCM_BASE_URL: `http://127.0.0.1:${port}` },
            // npm runs in the checkout; a file curl saves lands in a folder of the test's own.
            cwd: command.startsWith('curl') ? tourDir : PROJECT_ROOT,
          });
          // lcm-pull reports what it wrote on standard error; nothing else may show there.
          const report = command.includes('npm run pull') ? /^lcm-pull: \d+ calls in \d+ windows .*\n$/ : /^$/;
          expect({ command, code: result.code }).toEqual({ command, code: 0 });
          expect(result.stderr.replace(/^npm warn .*\n/gm, '')).toMatch(report);
          outputs.push(result.stdout);
        }
        const [myAccount, calls, openLeads, csv, hook, lead, bulk] = outputs;
        expect(JSON.parse(myAccount!)).toMatchObject({ username: 'demo' });
        expect(JSON.parse(calls!)).toHaveLength(2);
        expect(JSON.parse(openLeads!)).toEqual(
          expect.arrayContaining([expect.objectContaining({ uniqueId: expect.any(String) as unknown })]),
        );
        expect(csv).toBe('');
        const [csvFile] = fs.readdirSync(tourDir).filter((f) => f.endsWith('.csv'));
        expect(fs.readFileSync(path.join(tourDir, csvFile!), 'latin1')).toMatch(/^[^\n]+;/);
        expect(JSON.parse(hook!)).toMatchObject({ events: ['lead.created'], url: `http://127.0.0.1:${receiverPort}/` });
        expect(JSON.parse(lead!)).toMatchObject({ uniqueId: expect.any(String) as unknown });
        expect(JSON.parse(bulk!)).toEqual([expect.objectContaining({ row: 1, success: true })]);
        const pulled = fs.readFileSync(path.join(dir, 'calls.ndjson'), 'utf8').trim().split('\n');
        expect(pulled).toHaveLength(200); // the demo week's calls, as the README says

        // The receiver prints the lead.created hook of both imports.
        await until('the hooks of both imports', () => received.includes('Acme ApS') && received.includes('Acme A/S'), shortly);
        expect(received).toMatch(/"type":"lead\.created"/);
      } finally {
        receiver.kill();
      }

      // The mistake the tour suggests, and the addresses it names in its text.
      const callsCommand = commands.find((c) => c.includes('/api/calls?'))!;
      const mistaken = /'(http[^']+)'/.exec(local(callsCommand))![1]!.replace('TimeSpan=P5D', 'TimeSpan=pt2h');
      const problem = await fetch(mistaken, { headers: basic('demo', 'demo-password') });
      expect(problem.status).toBe(400);
      expect(((await problem.json()) as { type: string }).type).toBe('/api/problems/invalid_parameter');
      const readme = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
      const tourText = readme.slice(
        readme.indexOf('## A five-minute tour'),
        readme.indexOf('\n## ', readme.indexOf('## A five-minute tour') + 1),
      );
      const addresses = [...tourText.matchAll(/`(?:http:\/\/127\.0\.0\.1:8080)?(\/api\/[^`\s]*)`/g)].map((m) => m[1]!);
      expect(addresses).toEqual(
        expect.arrayContaining(['/api/docs', '/api/docs/reference', '/api/openapi.json', '/api/problems/invalid_parameter']),
      );
      // What a browser asks for when the reader opens the address.
      const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
      for (const address of addresses) {
        const response = await fetch(`${api}${address.slice('/api'.length)}`, {
          headers: { ...basic('demo', 'demo-password'), Accept: BROWSER_ACCEPT },
        });
        expect({ address, status: response.status }).toEqual({ address, status: 200 });
      }
    });

    it('when the README "Loading data" example runs, then its lead and user are in the running server\'s database and API', async () => {
      const block = shellBlocks('Loading data')[0]!;
      const result = await runProcess('bash', [...STRICT_BASH, asCompiled(block)], { env });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^loaded 6 lines: 2 orgUnit, 1 leadDefinition, 1 campaign, 1 user, 1 lead\n$/);

      const lead = await db('leads')
        .join('campaigns', 'campaigns.id', 'leads.campaign_id')
        .where('campaigns.code', 'B2B-1')
        .first<{ data: unknown }>('leads.data');
      expect(lead.data).toMatchObject({ Name: 'Acme', Phone: '+4512345678' });
      const leads = await get('/simpleleads?Campaigns=B2B-1', 'demo', 'demo-password');
      expect(leads.status).toBe(200);
      expect(JSON.stringify(await leads.json())).toContain('Acme');
      const user = await get(`/users/${encodeURIComponent('ann@example.com')}`, 'demo', 'demo-password');
      expect(user.status).toBe(200);
    });

    it('when the README "Accounts" commands run one by one, then each change reaches the server at once without Redis, whatever it cached', async () => {
      const commands = shellCommands(shellBlocks('Accounts')[0]!);
      expect(commands.map((c) => c.match(/account (\S+)/)?.[1])).toEqual(['create', 'list', 'disable', 'enable', 'set-password']);
      const username = commands[0]!.match(/--username (\S+)/)![1]!;
      let password = commands[0]!.match(/--password '([^']*)'/)![1]!;

      const status = async (pw: string) => (await get('/myaccount', username, pw)).status;
      for (const command of commands) {
        const result = await runProcess('bash', [...STRICT_BASH, asCompiled(command)], { env });
        expect({ command, code: result.code, stderr: result.stderr }).toEqual({ command, code: 0, stderr: '' });
        const verb = command.match(/account (\S+)/)![1];
        if (verb === 'create') {
          expect(result.stdout).toBe(`created account ${username}\n`);
          expect(await status(password)).toBe(200);
        } else if (verb === 'list') {
          expect(result.stdout).toMatch(
            new RegExp(
              `^${username}\\s+ann@example\\.com\\s+B2B\\*,Sales\\s+Calls:Get;Leads:Get,Post;SimpleLeads:Get\\s+Full\\s+yes$`,
              'm',
            ),
          );
        } else if (verb === 'disable') {
          await until('the disabled account to get 401', async () => (await status(password)) === 401, shortly);
        } else if (verb === 'enable') {
          await until('the enabled account to get 200', async () => (await status(password)) === 200, shortly);
        } else {
          const next = command.match(/printf '%s\\n' '([^']*)'/)![1]!;
          expect(await status(next)).toBe(200);
          // The old password's cached credentials are dropped although their TTL runs for an hour.
          await until('the old password to get 401', async () => (await status(password)) === 401, shortly);
          password = next;
        }
      }
      // The account reads what the README loaded: its project pattern B2B* covers "B2B Sales".
      const leads = await get('/simpleleads?Campaigns=B2B-1', username, password);
      expect(leads.status).toBe(200);
      expect(JSON.stringify(await leads.json())).toContain('Acme');
    });

    it("when lcm load gets a bad file, then it exits 1 with the line and the reason, on the server's database", async () => {
      const file = path.join(dir, 'bad.ndjson');
      fs.writeFileSync(
        file,
        '{"type":"orgUnit","orgCode":"Kept?","name":"x"}\n{"type":"call","campaign":"B2B-1","user":"ann@example.com"}\n',
      );
      const result = await runLcm(['load', file], { env });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^lcm: line 2: call: "uniqueLeadId" is required; .*"startTime" is required.*\n$/);
      expect(await db('org_units').where({ org_code: 'Kept?' }).first()).toBeUndefined();
    });

    it('when a second lcm serve starts on the same folder, then it says a server runs and exits 1', async () => {
      const second = await runLcm(['serve'], { env: { ...env, PORT: String(await freePort()) } });
      expect(second.code).toBe(1);
      expect(second.stderr).toBe(
        `lcm: an lcm server (pid ${server.pid}) already runs on the embedded database in ${dataDir}; stop it first, or give this one its own EMBEDDED_DATA_DIR and EMBEDDED_PG_PORT\n`,
      );
    });

    it('when SIGTERM arrives, then the server exits 0 and removes its record', async () => {
      await db.destroy();
      server.kill('SIGTERM');
      const code = await new Promise((r) => server.once('exit', (c) => r(c)));
      expect(code).toBe(0);
      expect(fs.existsSync(runningFile())).toBe(false);
    });
  });

  it('when the record names a process that is gone, then lcm ignores it, starts the cluster itself and replaces the record', async () => {
    const gone = spawn(process.execPath, ['-e', '']);
    await new Promise((r) => gone.once('exit', r));
    fs.writeFileSync(
      runningFile(),
      JSON.stringify({
        pid: gone.pid,
        command: 'serve',
        shared: true,
        url: 'postgres://postgres:x@127.0.0.1:1/lcm',
        startedAt: new Date().toISOString(),
      }),
    );
    const result = await runLcm(['migrate'], { env });
    expect(result).toMatchObject({ code: 0, stdout: 'already up to date\npartitions: no partition to create\n', stderr: '' });
    expect(fs.existsSync(runningFile())).toBe(false);
  });

  /** The shell blocks under a README heading. */
  function shellBlocks(heading: string): string[] {
    const readme = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
    const start = readme.indexOf(`\n## ${heading}\n`);
    expect(start).toBeGreaterThanOrEqual(0);
    const end = readme.indexOf('\n## ', start + 1);
    const section = readme.slice(start, end === -1 ? undefined : end);
    return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  }

  /** One command a line; a line ending in a backslash continues on the next. */
  function shellCommands(block: string): string[] {
    return block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .filter((line) => line.trim() !== '');
  }

  /** What `npm run lcm --` runs, with the README's /tmp files in this test's folder. */
  function asCompiled(script: string): string {
    expect(script).toContain('npm run lcm -- ');
    // The README's /tmp paths first: the project itself may live under /tmp (a fresh clone in CI).
    return script.replaceAll('/tmp/', `${dir}/`).replaceAll('npm run lcm -- ', `'${process.execPath}' '${LCM_BIN}' `);
  }
});
