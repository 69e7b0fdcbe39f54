import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A throwaway Postgres cluster from the OS packages (Debian's `postgresql`, version 15 on
 * bookworm, built with LLVM: JIT available and on, as on most production servers), in a
 * temporary folder on a free port, for the benchmarks. The package is installed through
 * scripts/ensure-os-package.sh when missing. Runs as the `postgres` system user when this
 * process is root (initdb refuses root).
 */

export interface OsCluster {
  url: string;
  version: string;
  stop(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '..');

export function startOsPostgres(options: { version: number; port: number; database: string }): Promise<OsCluster> {
  const bin = `/usr/lib/postgresql/${options.version}/bin`;
  execFileSync('bash', [path.join(ROOT, 'scripts/ensure-os-package.sh'), `${bin}/postgres`, 'postgresql'], { stdio: 'inherit' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lcm-bench-pg${options.version}-`));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const run = (cmd: string, args: string[]) => {
    const full = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
    const r = spawnSync(full[0] as string, full[1] as string[], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  run(`${bin}/initdb`, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8']);
  // Settings of a typical small production server; JIT stays at its default (on).
  fs.appendFileSync(
    data + '/postgresql.conf',
    `\nport = ${options.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nshared_buffers = 512MB\nmax_connections = 100\nfsync = off\n`,
  );
  run(`${bin}/pg_ctl`, ['-D', data, '-l', path.join(dir, 'log'), '-w', 'start']);
  const base = `postgres://postgres@127.0.0.1:${options.port}`;
  spawnSync('/usr/bin/psql', [`${base}/postgres`, '-X', '-q', '-c', `create database ${options.database}`], { encoding: 'utf8' });
  const version = spawnSync('/usr/bin/psql', [`${base}/postgres`, '-X', '-At', '-c', 'show server_version'], {
    encoding: 'utf8',
  }).stdout.trim();
  return Promise.resolve({
    url: `${base}/${options.database}`,
    version,
    stop() {
      try {
        run(`${bin}/pg_ctl`, ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      return Promise.resolve();
    },
  });
}
