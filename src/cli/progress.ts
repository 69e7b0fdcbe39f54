import cliProgress from 'cli-progress';

/**
 * Progress for long commands: a bar on a terminal, nothing on pipes (CI logs stay readable;
 * commands print their own summary at the end).
 */
export interface Progress {
  update(value: number): void;
  stop(): void;
}

export function createProgress(label: string, total: number, unit: string): Progress {
  if (!process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {duration_formatted}`,
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return {
    update: (value) => bar.update(Math.min(value, total)),
    stop: () => bar.stop(),
  };
}
