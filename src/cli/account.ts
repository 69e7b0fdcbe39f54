import { Command, Option } from 'commander';
import { CliContext, CliError, OpenCliContext } from './context';
import {
  AccountChange,
  createAccount,
  formatRights,
  parseEntryAccess,
  parseProjects,
  parseRights,
  setEnabled,
  setPassword,
} from '../ingest/accountCommands';
import { parseDateTimeFormat } from '../ingest/accountCommands';
import { listAccounts } from '../data/accountRepository';

/** `lcm account create|list|disable|enable|set-password` (docs/cli.md). */
export function registerAccount(program: Command, openCliContext: OpenCliContext): void {
  const account = program
    .command('account')
    .description('manage web service accounts')
    // Not under the one line a missing command prints (src/app/main.ts).
    .addHelpText('after', ({ error }) =>
      error
        ? ''
        : `
Examples:
  printf '%s\\n' "$PASSWORD" | lcm account create --username acme --password-stdin \\
    --user ann@example.com --projects 'B2B*,Sales' --rights 'Calls:Get;Leads:Get,Post' --entry-access Full
  lcm account list
  lcm account disable --username acme    # its requests get 401 until it is enabled again
  lcm account enable --username acme
  printf '%s\\n' "$NEW_PASSWORD" | lcm account set-password --username acme --password-stdin`,
    );

  account
    .command('create')
    .description('create an account linked to a platform user')
    .requiredOption('--username <username>', 'login name')
    .addOption(passwordOption('password (stored only as a hash)'))
    .addOption(passwordStdinOption())
    .requiredOption('--user <orgCode>', 'org code of the linked platform user')
    .requiredOption('--projects <patterns>', "comma-separated project patterns, e.g. 'B2B*,Sales' or '*'")
    .requiredOption('--rights <rights>', "resource rights, e.g. 'Calls:Get;Leads:Get,Post;SimpleLeads:Get'")
    .option('--entry-access <level>', 'lead definition entry access: None, Partner or Full', 'None')
    .option(
      '--date-time-format <format>',
      'how answers write DateTimes: Offset (2026-05-06T10:16:41.000+02:00) or Local (2026-05-06T10:16:41.0000000)',
      'Offset',
    )
    .option('--disabled', 'create the account disabled')
    .action(
      async (
        o: PasswordOptions & {
          username: string;
          user: string;
          projects: string;
          rights: string;
          entryAccess: string;
          dateTimeFormat: string;
          disabled?: boolean;
        },
      ) => {
        // Parse before reading a password or opening the database, so a typo fails fast.
        const parsed = {
          username: o.username,
          userOrgCode: o.user,
          projects: parseProjects(o.projects),
          rights: parseRights(o.rights),
          entryAccess: parseEntryAccess(o.entryAccess),
          dateTimeFormat: parseDateTimeFormat(o.dateTimeFormat),
          enabled: !o.disabled,
        };
        const input = { ...parsed, password: await readPassword(o) };
        await withChange(openCliContext, `created account ${o.username}`, (ctx) => createAccount(ctx.db, input));
      },
    );

  account
    .command('list')
    .description('list the accounts (never their password hashes)')
    .action(async () => {
      const ctx = await openCliContext();
      try {
        const accounts = await listAccounts(ctx.db);
        const rows = accounts.map((a) => [
          a.username,
          a.userOrgCode,
          a.projectPatterns.join(','),
          formatRights(a.rights),
          a.entryAccess,
          a.enabled ? 'yes' : 'no',
        ]);
        process.stdout.write(table(['username', 'user', 'projects', 'rights', 'entry access', 'enabled'], rows));
      } finally {
        await ctx.close();
      }
    });

  const switches = [
    ['disable', false, 'disable an account: its requests get 401 until it is enabled again'],
    ['enable', true, 'enable a disabled account again'],
  ] as const;
  for (const [name, enabled, description] of switches) {
    account
      .command(name)
      .description(description)
      .requiredOption('--username <username>', 'login name')
      .action(async (o: { username: string }) => {
        await withChange(openCliContext, `${name}d account ${o.username}`, (ctx) => setEnabled(ctx.db, o.username, enabled));
      });
  }

  account
    .command('set-password')
    .description("replace an account's password")
    .requiredOption('--username <username>', 'login name')
    .addOption(passwordOption('new password'))
    .addOption(passwordStdinOption())
    .action(async (o: PasswordOptions & { username: string }) => {
      const password = await readPassword(o);
      await withChange(openCliContext, `changed the password of account ${o.username}`, (ctx) => setPassword(ctx.db, o.username, password));
    });
}

interface PasswordOptions {
  password?: string;
  passwordStdin?: boolean;
}

function passwordOption(description: string): Option {
  return new Option(
    '--password <password>',
    `${description}; visible to other local users in the process list, see --password-stdin`,
  ).conflicts('passwordStdin');
}

function passwordStdinOption(): Option {
  return new Option('--password-stdin', 'read the password from standard input (one trailing newline is dropped)');
}

/** The password of --password, or standard input's whole text without its trailing newline. */
async function readPassword(o: PasswordOptions): Promise<string> {
  if (o.password !== undefined) return o.password;
  if (!o.passwordStdin) throw new CliError('give the password with --password PASSWORD or --password-stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const password = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (password === '') throw new CliError('--password-stdin: standard input holds no password');
  return password;
}

async function withChange(
  openCliContext: OpenCliContext,
  done: string,
  change: (ctx: CliContext) => Promise<AccountChange>,
): Promise<void> {
  const ctx = await openCliContext();
  try {
    await change(ctx);
    process.stdout.write(`${done}\n`);
  } finally {
    await ctx.close();
  }
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd() + '\n';
  return line(header) + line(widths.map((w) => '-'.repeat(w))) + rows.map(line).join('');
}
