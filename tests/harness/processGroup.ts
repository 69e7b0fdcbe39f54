import fs from 'node:fs';

/** The ids of the live processes in process group `pgid` (an `lcm serve` supervisor and the workers it forked), in order. */
export function processGroup(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 5 of /proc/<pid>/stat is the process group; the name (field 2) may hold spaces, so count after its ')'.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') pids.push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return pids.sort((a, b) => a - b);
}
