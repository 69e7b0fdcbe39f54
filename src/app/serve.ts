import cluster from 'node:cluster';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { openCliContext } from './cliContext';
import { createLogger } from '../config/logger';
import type { Settings } from '../config/settings';
import { connectionStringOf, migrateLatest } from '../data/db';
import { lowersEveryLetter } from '../data/caseMapping';
import { takeOverShutdownSignals } from './embeddedPostgres';
import { seedDemo, DEMO_CREDENTIALS } from '../ingest/demoData';
import { ROLE_VARIABLE, Supervisor } from './supervisor';
import { runHttpWorker } from './httpWorker';
import { runJobsWorker, backgroundWorkEnabled } from './jobsWorker';

/**
 * `lcm serve` (what `npm start` runs). The first process is the supervisor: it opens the
 * database (starting the embedded default when DATABASE_URL is unset), migrates, seeds the
 * embedded default once, then forks WEB_CONCURRENCY HTTP workers that share the port and one
 * jobs process (docs/architecture.md, "Processes"). The forked processes run this same command
 * and find their role in the environment.
 */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the API (embedded Postgres with demo data when DATABASE_URL is unset)')
    .action(async () => {
      const role = process.env[ROLE_VARIABLE];
      if (cluster.isWorker && role === 'http') return runHttpWorker();
      if (cluster.isWorker && role === 'jobs') return runJobsWorker();
      return supervise();
    });
}

/** HTTP workers to run: WEB_CONCURRENCY, else one per core this process may use. */
function httpWorkerCount(settings: Pick<Settings, 'WEB_CONCURRENCY'>): number {
  return settings.WEB_CONCURRENCY ?? os.availableParallelism();
}

async function supervise(): Promise<void> {
  const ctx = await openCliContext({ migrate: false, command: 'serve', server: true });
  takeOverShutdownSignals();
  // Listening from the start: a signal during start-up stops the server once it is up.
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  // Whatever started is stopped again, in reverse order, also when start-up fails, so a
  // failed start ends the process with its reason instead of leaving it hanging.
  const stops: (() => unknown)[] = [() => ctx.close()];
  try {
    const { settings } = ctx;
    const logger = createLogger(settings.LOG_LEVEL);
    await migrateLatest(ctx.db);
    if (!(await lowersEveryLetter(ctx.db))) {
      logger.warn(
        'the database lower-cases only ASCII letters (its LC_CTYPE is C): a project whose name has other capitals (Æ, Ø, Å, É, ...) ' +
          'matches no project pattern written in another case; create the database with a UTF-8 locale (docs/operations.md, "Database")',
      );
    }
    if (ctx.embedded) {
      const hasAccounts = await ctx.db<{ id: number }>('accounts').first('id');
      if (!hasAccounts) await seedDemo(ctx.db, settings.PLATFORM_TIMEZONE);
    }
    // Before any worker binds with SO_REUSEPORT, which would join another server's sockets on the port.
    await ensurePortFree(settings.HOST, settings.PORT);
    const supervisor = new Supervisor({
      httpWorkers: httpWorkerCount(settings),
      jobs: backgroundWorkEnabled(settings),
      port: settings.PORT,
      // The workers use this database, also the embedded one this process started.
      env: { DATABASE_URL: connectionStringOf(ctx.db) },
      graceMs: settings.SHUTDOWN_GRACE_MS,
      logger,
    });
    stops.push(() => supervisor.stop());
    await supervisor.start();

    const host = settings.HOST.includes(':') ? `[${settings.HOST}]` : settings.HOST;
    const url = `${settings.TLS_CERT_FILE ? 'https' : 'http'}://${host}:${supervisor.listeningPort}`;
    const jobs = supervisor.count('jobs') > 0 ? ' and a jobs process' : '';
    // One write: a reader that waits for the first line gets the second with it.
    process.stdout.write(
      `lead-call-api listening on ${url}/api\n` +
        `${supervisor.count('http')} HTTP worker processes${jobs} on Node.js ${process.versions.node}; ${describeCode()}\n`,
    );
    if (ctx.embedded) {
      const demo = DEMO_CREDENTIALS.map((c) => `  ${c.username} / ${c.password}${c.note ? `  (${c.note})` : ''}`).join('\n');
      const counting = settings.REDIS_URL ? 'Redis' : 'Postgres';
      process.stdout.write(`embedded Postgres in ${settings.EMBEDDED_DATA_DIR}; requests counted in ${counting}\n`);
      process.stdout.write(`demo credentials (HTTP Basic):\n${demo}\n`);
      process.stdout.write(`try: curl -u demo:demo-password ${url}/api/myaccount\n`);
    }

    const signal = await stopSignal;
    logger.info({ signal }, 'shutting down: no new connections, in-flight responses may finish');
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

/**
 * Refuses a PORT something already listens on. The HTTP workers bind with SO_REUSEPORT
 * (LISTEN_SOCKETS), and Linux lets sockets of the same user that all set it share a port: a
 * second `lcm serve` on the port of a running one would start without an error and take half of
 * its connections. A socket bound without it, as this check's, fails on any listener there.
 */
async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host, port, exclusive: true }, () => resolve());
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE') throw err;
    throw new Error(`port ${port} on ${host} is in use (another lcm serve?); stop what listens there or set PORT`, { cause: err });
  } finally {
    await new Promise<void>((resolve) => (probe.listening ? probe.close(() => resolve()) : resolve()));
  }
}

/** Which code runs: the compiled build (`npm start`, the image) or the sources through tsx (development). */
function describeCode(): string {
  return __filename.endsWith('.js') ? `the compiled build in ${path.resolve(__dirname, '../..')}` : 'the TypeScript sources through tsx';
}
