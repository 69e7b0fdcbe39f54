import pg from 'pg';

/**
 * The statements this process sends to Postgres, from any client, while `work` runs (what a
 * request or a use case costs in round trips); a new pooled connection's `SET TIME ZONE` aside.
 */
export async function statementsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  try {
    await work();
    return spy.mock.calls
      .map(([q]) => (typeof q === 'string' ? q : (q as { text: string }).text))
      .filter((q) => !/^SET TIME ZONE/i.test(q));
  } finally {
    spy.mockRestore();
  }
}
