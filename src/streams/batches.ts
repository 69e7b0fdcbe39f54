/**
 * Groups the items of `source` into batches of at most `size`. A batch is handed on when it is
 * full, when the source ends, or when its first item has waited `maxDelayMs` for the batch to
 * fill (a quiet source does not hold back what it sent). Nothing is read ahead: the source is
 * pulled only while the consumer waits for a batch, so a slow consumer slows the source.
 */
export async function* batchesOf<T>(source: AsyncIterator<T>, size: number, maxDelayMs: number): AsyncGenerator<T[]> {
  // An item asked for but not arrived when a batch was handed on: it starts the next batch.
  let pending: Promise<IteratorResult<T>> | undefined;
  try {
    for (;;) {
      const batch: T[] = [];
      // One timer per batch, from its first item on; it says the batch has waited long enough.
      let due: { late: Promise<undefined>; timer: NodeJS.Timeout } | undefined;
      try {
        while (batch.length < size) {
          pending ??= source.next();
          const next = due ? await Promise.race([pending, due.late]) : await pending;
          if (next === undefined) break;
          pending = undefined;
          if (next.done) {
            if (batch.length > 0) yield batch;
            return;
          }
          if (batch.length === 0) due = deadline(maxDelayMs);
          batch.push(next.value);
        }
      } finally {
        clearTimeout(due?.timer);
      }
      yield batch;
    }
  } finally {
    // Not awaited: a source waiting for an item that may never come must not hold this up.
    void source.return?.(undefined).catch(() => undefined);
  }
}

function deadline(ms: number): { late: Promise<undefined>; timer: NodeJS.Timeout } {
  let timer!: NodeJS.Timeout;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  return { late, timer };
}
