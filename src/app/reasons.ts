/** A failure's message on one line; errors without one (a refused connection's AggregateError) still say something. */
export function reasonOf(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; errors?: unknown[] } | undefined;
  let text = typeof e?.message === 'string' ? e.message : '';
  if (text === '' && Array.isArray(e?.errors)) text = e.errors.map((inner) => reasonOf(inner)).join('; ');
  if (text === '' && typeof e?.code === 'string') text = e.code;
  if (text === '') text = `failed without a reason (${String(err)})`;
  return oneLine(text);
}

export function oneLine(text: string): string {
  return text
    .trim()
    .split(/\s*\n\s*/)
    .join(' ');
}
