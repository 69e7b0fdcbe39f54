import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';

/**
 * Servers a test starts are killed, and their folders removed, when the test process exits by
 * any road (a failed set-up, an interrupted run), not only through the test's own afterAll.
 */
const children = new Set<ChildProcess>();
const folders = new Set<string>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) killGroup(c);
    for (const f of folders) fs.rmSync(f, { recursive: true, force: true });
  });
}

/**
 * SIGKILL to the child's whole process group when it leads one (spawned `detached`: an `lcm serve`
 * and the workers it forked), else to the child alone.
 */
export function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

export function killOnExit(child: ChildProcess): ChildProcess {
  hook();
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function removeOnExit(folder: string): string {
  hook();
  folders.add(folder);
  return folder;
}
