/**
 * Writes to standard output with backpressure and tells whether to go on: false once the
 * output is closed, as when its reader left early (`lcm requests … | head`). The closed pipe's
 * EPIPE is the reader's choice, not a failure: main.ts keeps it from ending the process.
 */
export async function writeOutput(text: string): Promise<boolean> {
  const out = process.stdout;
  if (out.destroyed) return false;
  if (out.write(text)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
  return !out.destroyed;
}
