import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  AccountCommandError,
  createAccount,
  formatRights,
  parseEntryAccess,
  parseProjects,
  parseRights,
  setEnabled,
  setPassword,
  upsertAccount,
} from '../../src/ingest/accountCommands';
import { findAccountByUsername } from '../../src/data/accountRepository';
import { verifyPassword } from '../../src/domain/password';
import { ACCOUNT_CHANGED_CHANNEL } from '../../src/data/accountChanges';
import { PgListener } from '../../src/data/notifications';
import { useTestDb } from '../harness/useTestWorld';
import { until } from '../harness/until';

const run = promisify(execFile);
const LCM = path.resolve(__dirname, '../../bin/lcm.js');
// Other tests share the database: every name here carries this run's suffix.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const USER_CODE = `acct-user ${RUN} Ø/ü`;

describe('account commands', () => {
  const db = useTestDb();

  beforeAll(async () => {
    const [unit] = await db('org_units')
      .insert({ unique_id: `acct-ou-${RUN}`, org_code: `acct-unit ${RUN}`, name: 'Accounts unit', level: 0 })
      .returning<{ id: number }[]>('id');
    await db('users').insert({
      unique_id: `acct-u-${RUN}`,
      org_code: USER_CODE,
      username: `acct-user-${RUN}`,
      name: 'Account user',
      parent_id: unit!.id,
    });
  });

  describe('parsing', () => {
    it('when rights are given in any case, then they are stored in canonical spelling and order', () => {
      expect(parseRights('calls:get; Leads:Post,get ;SIMPLELEADS:Get;leads:Get')).toEqual({
        Calls: ['Get'],
        Leads: ['Get', 'Post'],
        SimpleLeads: ['Get'],
      });
      expect(formatRights({ Leads: ['Get', 'Post'], Calls: ['Get'] })).toBe('Calls:Get;Leads:Get,Post');
    });

    it('when a resource type or verb is unknown, then the error names it', () => {
      expect(() => parseRights('Calls:Get;Call:Get')).toThrow(/unknown resource type "Call"/);
      expect(() => parseRights('Calls:Fetch')).toThrow(/unknown verb "Fetch" for Calls/);
      expect(() => parseRights('Calls')).toThrow(AccountCommandError);
      expect(() => parseEntryAccess('Partial')).toThrow(/unknown entry access "Partial"/);
      expect(parseEntryAccess('partner')).toBe('Partner');
      expect(parseProjects(' B2B*, Sales ,')).toEqual(['B2B*', 'Sales']);
      expect(() => parseProjects(' , ')).toThrow(AccountCommandError);
    });
  });

  describe('data functions', () => {
    const username = `acct-${RUN}`;

    it('when an account is created, then it is stored with a hash, its rights and version 1', async () => {
      const change = await createAccount(db, {
        username,
        password: 'first-password',
        userOrgCode: USER_CODE,
        projects: ['B2B*', 'Sales'],
        rights: parseRights('Calls:Get;Leads:Get,Post'),
        entryAccess: 'Partner',
      });
      expect(change.version).toBe(1);
      const stored = await findAccountByUsername(db, username);
      expect(stored).toMatchObject({
        id: change.id,
        userOrgCode: USER_CODE,
        projectPatterns: ['B2B*', 'Sales'],
        rights: { Calls: ['Get'], Leads: ['Get', 'Post'] },
        entryAccess: 'Partner',
        enabled: true,
        version: 1,
      });
      expect(stored!.passwordHash).not.toContain('first-password');
      expect(await verifyPassword('first-password', stored!.passwordHash)).toBe(true);
    });

    it('when the username exists or the user is unknown, then creating fails with a reason', async () => {
      const input = { username, password: 'x', userOrgCode: USER_CODE, projects: ['*'], rights: {}, entryAccess: 'None' as const };
      await expect(createAccount(db, input)).rejects.toThrow(`account "${username}" already exists`);
      await expect(createAccount(db, { ...input, username: `${username}-2`, userOrgCode: `nobody ${RUN}` })).rejects.toThrow(
        `no user with org code "nobody ${RUN}"`,
      );
      await expect(createAccount(db, { ...input, username: `${username}:x` })).rejects.toThrow(AccountCommandError);
    });

    it('when disabled, enabled and given a new password, then each change bumps the version', async () => {
      const disabled = await setEnabled(db, username, false);
      expect(disabled.version).toBe(2);
      expect(await findAccountByUsername(db, username)).toMatchObject({ enabled: false, version: 2 });

      expect((await setEnabled(db, username, true)).version).toBe(3);
      const changed = await setPassword(db, username, 'second-password');
      expect(changed.version).toBe(4);
      const stored = await findAccountByUsername(db, username);
      expect(stored).toMatchObject({ enabled: true, version: 4 });
      expect(await verifyPassword('second-password', stored!.passwordHash)).toBe(true);
      expect(await verifyPassword('first-password', stored!.passwordHash)).toBe(false);
    });

    it('when the account is unknown, then changing it fails with a reason', async () => {
      await expect(setEnabled(db, `missing-${RUN}`, false)).rejects.toThrow(`no account "missing-${RUN}"`);
      await expect(setPassword(db, username, '')).rejects.toThrow(AccountCommandError);
    });

    it('when upserted, then a new account is created and an existing one replaced with a bumped version', async () => {
      const name = `acct-upsert-${RUN}`;
      const input = {
        username: name,
        password: 'p1',
        userOrgCode: USER_CODE,
        projects: ['*'],
        rights: { Calls: ['Get' as const] },
        entryAccess: 'Full' as const,
      };
      expect((await upsertAccount(db, input)).version).toBe(1);
      const again = await upsertAccount(db, { ...input, projects: ['Retail'], enabled: false });
      expect(again.version).toBe(2);
      expect(await findAccountByUsername(db, name)).toMatchObject({ projectPatterns: ['Retail'], enabled: false, version: 2 });
    });
  });

  describe('change notification', () => {
    let listener: PgListener;
    const received: string[] = [];
    beforeAll(async () => {
      listener = new PgListener(process.env.TEST_DATABASE_URL!);
      await listener.listen(ACCOUNT_CHANGED_CHANNEL, { onNotify: (payload) => received.push(payload) });
    });
    afterAll(() => listener.close());

    /** Waits for the account's id on the channel: the notification arrives as its change commits, within milliseconds. */
    const notified = (id: number) =>
      until(`account ${id} notified`, () => received.includes(String(id)), { timeoutMs: 2000, intervalMs: 20 });

    it('when an account is created, changed or given a request limit, then its id is notified on the account-changed channel as each change commits', async () => {
      const name = `acct-notify-${RUN}`;
      const { id } = await createAccount(db, {
        username: name,
        password: 'p1',
        userOrgCode: USER_CODE,
        projects: ['*'],
        rights: {},
        entryAccess: 'None',
      });
      await notified(id);
      received.length = 0;
      await setEnabled(db, name, false);
      await notified(id);
      received.length = 0;
      await db('request_limits').insert({ account_id: id, service: 'myaccount', daily_limit: 3 });
      await notified(id);
    });

    it('when a change is rolled back, then nothing is notified', async () => {
      const name = `acct-rollback-${RUN}`;
      const { id } = await createAccount(db, {
        username: name,
        password: 'p1',
        userOrgCode: USER_CODE,
        projects: ['*'],
        rights: {},
        entryAccess: 'None',
      });
      await notified(id);
      received.length = 0;
      await db
        .transaction(async (trx) => {
          await trx('accounts').where({ id }).update({ enabled: false });
          throw new Error('roll back');
        })
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, 300));
      expect(received).not.toContain(String(id));
    });
  });

  describe('lcm account (child process)', () => {
    const env = { ...process.env, DATABASE_URL: process.env.TEST_DATABASE_URL, REDIS_URL: '', LOG_LEVEL: 'silent' };
    const lcm = (...args: string[]) => run('node', [LCM, 'account', ...args], { env, timeout: 60_000 });
    const username = `cli-${RUN}`;

    it('when create, list, disable and set-password run, then each exits 0 and the list never shows a hash', async () => {
      const created = await lcm(
        'create',
        '--username',
        username,
        '--password',
        'cli-password',
        '--user',
        USER_CODE,
        '--projects',
        'B2B*,Sales',
        '--rights',
        'Calls:Get;Leads:Get,Post;SimpleLeads:Get',
        '--entry-access',
        'Full',
      );
      expect(created.stdout).toBe(`created account ${username}\n`);
      const stored = await findAccountByUsername(db, username);
      expect(stored).toMatchObject({
        projectPatterns: ['B2B*', 'Sales'],
        entryAccess: 'Full',
        rights: { Calls: ['Get'], Leads: ['Get', 'Post'], SimpleLeads: ['Get'] },
      });

      const listed = await lcm('list');
      const line = listed.stdout.split('\n').find((l) => l.startsWith(`${username} `));
      expect(line).toMatch(/B2B\*,Sales\s+Calls:Get;Leads:Get,Post;SimpleLeads:Get\s+Full\s+yes$/);
      expect(listed.stdout.split('\n')[0]).toMatch(/^username\s+user\s+projects\s+rights\s+entry access\s+enabled$/);
      expect(listed.stdout).not.toContain('scrypt$');

      await lcm('disable', '--username', username);
      await lcm('set-password', '--username', username, '--password', 'new-cli-password');
      const changed = await findAccountByUsername(db, username);
      expect(changed).toMatchObject({ enabled: false, version: 3 });
      expect(await verifyPassword('new-cli-password', changed!.passwordHash)).toBe(true);
    }, 120_000);

    it('when the rights name an unknown resource type, then it exits non-zero with a one-line reason', async () => {
      const failure = await lcm(
        'create',
        '--username',
        `bad-${RUN}`,
        '--password',
        'p',
        '--user',
        USER_CODE,
        '--projects',
        '*',
        '--rights',
        'Calls:Get;Callz:Get',
      ).then(
        () => undefined,
        (err: { code: number; stderr: string }) => err,
      );
      expect(failure).toBeDefined();
      expect(failure!.code).not.toBe(0);
      expect(failure!.stderr.trim().split('\n')).toHaveLength(1);
      expect(failure!.stderr).toContain('unknown resource type "Callz"');
      expect(await findAccountByUsername(db, `bad-${RUN}`)).toBeUndefined();
    }, 60_000);
  });
});
