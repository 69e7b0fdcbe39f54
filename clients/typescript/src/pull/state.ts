import { promises as fs } from 'node:fs';
import type { Window } from './windows';

/** What identifies one pull: a state file of a different pull is never resumed. */
export interface JobKey {
  kind: 'calls' | 'leads';
  baseUrl: string;
  username: string;
  query: Record<string, string | string[]>;
  /** --from and --to as given (--to may be absent: now, fixed by the first run). */
  from: string;
  to: string | null;
  timeZone: string;
  windowMs: number;
  limit?: number;
  format: 'ndjson' | 'csv';
  out: string;
}

/**
 * The state file: the windows still to fetch (in time order) and how long the output and the
 * uniqueId log were after the last complete window. A rerun truncates both to those lengths
 * and goes on, so it writes exactly what an uninterrupted run would have.
 */
export interface PullState {
  version: 1;
  job: JobKey;
  pending: Window[];
  outputBytes: number;
  idsBytes: number;
  rows: number;
  windowsDone: number;
  splits: number;
  requests: number;
}

export async function readState(file: string): Promise<PullState | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const state = JSON.parse(text) as PullState;
  if (state.version !== 1) throw new Error(`state file ${file} has an unknown version`);
  return state;
}

/** Replaces the state file atomically (a temp file renamed over it), so a crash leaves the old or the new one. */
export async function writeState(file: string, state: PullState): Promise<void> {
  const temp = `${file}.tmp`;
  const handle = await fs.open(temp, 'w');
  try {
    await handle.writeFile(JSON.stringify(state) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, file);
}

export function sameJob(a: JobKey, b: JobKey): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
