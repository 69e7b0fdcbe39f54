/**
 * Resolves with what asked this process to stop: SIGTERM or SIGINT (from the supervisor, or from
 * a terminal's Ctrl-C, which reaches every process of the group), or, for a forked worker, its
 * supervisor gone (the IPC channel closed): a worker never outlives its supervisor.
 */
export function whenAskedToStop(): Promise<string> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    if (process.send) process.once('disconnect', () => resolve('supervisor gone'));
  });
}
