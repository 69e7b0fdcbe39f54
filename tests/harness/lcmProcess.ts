import { spawn } from 'node:child_process';
import path from 'node:path';

/** The command line as users run it: `node bin/lcm.js` (what `npm run lcm --` and `npm start` run). */
export const LCM_BIN = path.resolve(__dirname, '../../bin/lcm.js');
export const PROJECT_ROOT = path.resolve(__dirname, '../..');

export interface LcmResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `lcm ARGS` in its own process and resolves with its exit status and output (never rejects on failure). */
export function runLcm(
  args: string[],
  options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number },
): Promise<LcmResult> {
  return runProcess(process.execPath, [LCM_BIN, ...args], options);
}

export function runProcess(
  file: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number },
): Promise<LcmResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: options.env, cwd: options.cwd ?? PROJECT_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // SIGTERM first: an lcm that holds an embedded cluster stops it before it exits.
    let killer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    }, options.timeoutMs ?? 240_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** The environment of a child `lcm`: the test's, without settings that would point it elsewhere. */
export function lcmEnv(overrides: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}
