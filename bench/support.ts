import { execSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

/** What every benchmark here needs: options, free ports, waiting, a process's memory, medians, numbers. */

/** `--name VALUE` from the command line, else the fallback. */
export function textOption(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : (process.argv[i + 1] ?? fallback);
}

/** `--name N` (a non-negative number) from the command line, else the fallback. */
export function numberOption(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} needs a non-negative number`);
  return n;
}

/** A loopback port nothing listens on now (the server started next takes it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The status of a GET, its body read and dropped. */
export function httpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      })
      .once('error', reject);
  });
}

/** A process's resident memory now, in MB (Linux). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** A process's /proc stat fields after its name (field 3 of `man proc` is index 0). */
function procStat(pid: number | string): string[] {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU time used so far by a process, in ms (Linux /proc; NaN elsewhere). Latency on a shared
 * machine moves with everyone else's load; CPU per request does not, so it is reported too.
 */
export function processCpuMs(pid: number): number {
  try {
    const fields = procStat(pid);
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** The parent of a process (Linux /proc): a Postgres backend's is the postmaster. */
export function parentPid(pid: number): number {
  return Number(procStat(pid)[1]);
}

/**
 * CPU time used so far by a process and its children, in ms: a Postgres server (the
 * postmaster's pid) with every backend and background process, ended ones excepted.
 */
export function processFamilyCpuMs(rootPid: number): number {
  let total = processCpuMs(rootPid);
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(procStat(entry)[1]) === rootPid) total += processCpuMs(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

/**
 * CPU time of a process and of its children, ended ones included, in ms: the family of
 * processFamilyCpuMs plus what the children that ended had used (the root's cutime and
 * cstime). For a Postgres server whose backends come and go while it is measured.
 */
export function processTreeCpuMs(rootPid: number): number {
  try {
    const fields = procStat(rootPid);
    return processFamilyCpuMs(rootPid) + ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/**
 * CPU time so far of each kind of thread of a process, in ms, by thread name (Linux
 * /proc/PID/task): a Node.js process's event loop is "MainThread", libuv's thread pool (zlib
 * among its users) "libuv-worker", V8's helpers (garbage collection, compilation) "V8Worker".
 */
export function threadCpuMs(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        const fields = procStat(`${pid}/task/${tid}`);
        byName.set(name, (byName.get(name) ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS);
      } catch {
        // The thread ended meanwhile.
      }
    }
  } catch {
    // The process ended, or this is not Linux.
  }
  return byName;
}

/**
 * CPU time of this process's children that have ended and been waited for, in ms (the
 * cutime and cstime of /proc/self/stat): what a client such as curl used, once it has exited.
 */
export function endedChildrenCpuMs(): number {
  try {
    const fields = procStat('self');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** 1234567.8 → "1,234,568" (or with `digits` decimals). */
export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export const log = (line = '') => process.stdout.write(line + '\n');
