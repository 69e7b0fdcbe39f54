import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Drives an HTTP load with wrk (Debian's package `wrk`, installed through
 * scripts/ensure-os-package.sh when missing): a load generator written in C, which costs the
 * machine a few µs a request where autocannon, a Node.js process, costs about as much as the
 * server it drives. On two cores that decides whether the server under test can have one of
 * them to itself (docs/benchmarks.md, "Small requests").
 */

export interface WrkRequest {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /**
   * Requests that differ one from the next: a Lua expression of `n` (the request's number,
   * counted from 0 per wrk thread) giving `path, body`, e.g. `"/x/" .. (n % 10), "{}"`.
   */
  vary?: string;
}

export interface WrkResult {
  requests: number;
  rps: number;
  /** Latencies in ms. */
  p50: number;
  p99: number;
  max: number;
  /** Answers with a status of 400 or more, and socket errors (connect, read, write, timeout). */
  statusErrors: number;
  socketErrors: number;
}

const ROOT = path.resolve(__dirname, '..');
let installed = false;

function ensureWrk(): void {
  if (installed) return;
  execFileSync('bash', [path.join(ROOT, 'scripts/ensure-os-package.sh'), 'wrk', 'wrk'], { stdio: 'inherit' });
  installed = true;
}

const lua = (text: string) => JSON.stringify(text);

/** µs as ms to a tenth. */
const tenthsOfMs = (us: number) => Math.round(us / 100) / 10;

/** The Lua script of one run: the request (or the varying requests) and a JSON summary at the end. */
function script(request: WrkRequest): string {
  const headers = Object.entries(request.headers ?? {})
    .map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`)
    .join('\n');
  const vary = request.vary
    ? `local n = 0
       request = function()
         local p, b = ${request.vary}
         n = n + 1
         return wrk.format(nil, p, nil, b)
       end`
    : '';
  return `wrk.method = ${lua(request.method ?? 'GET')}
${headers}
${request.body !== undefined ? `wrk.body = ${lua(request.body)}` : ''}
${vary}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\nWRK-JSON {"requests":%d,"us":%d,"p50":%d,"p99":%d,"max":%d,"status":%d,"socket":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect + e.read + e.write + e.timeout))
end
`;
}

/** One run of `seconds` on `connections` keep-alive connections from `threads` wrk threads. */
export async function runWrk(
  base: string,
  request: WrkRequest,
  options: { connections: number; seconds: number; threads: number },
): Promise<WrkResult> {
  ensureWrk();
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-')), 'run.lua');
  fs.writeFileSync(file, script(request));
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const args = [
        '-t',
        String(options.threads),
        '-c',
        String(options.connections),
        '-d',
        `${options.seconds}s`,
        '-s',
        file,
        base + request.path,
      ];
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      child.once('error', reject);
      child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}: ${text}`))));
    });
    const line = /WRK-JSON (\{.*\})/.exec(output)?.[1];
    if (line === undefined) throw new Error(`wrk printed no summary: ${output}`);
    const s = JSON.parse(line) as { requests: number; us: number; p50: number; p99: number; max: number; status: number; socket: number };
    return {
      requests: s.requests,
      rps: s.requests / (s.us / 1e6),
      p50: tenthsOfMs(s.p50),
      p99: tenthsOfMs(s.p99),
      max: tenthsOfMs(s.max),
      statusErrors: s.status,
      socketErrors: s.socket,
    };
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}
