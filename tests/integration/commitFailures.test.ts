import request from 'supertest';
import { uniq } from '../harness/testApp';
import { useOwnDatabase, useTestWorld } from '../harness/useTestWorld';
import { beginTransaction, commitTransaction } from '../../src/data/transactions';
import { isConnectionFailure } from '../../src/data/readSource';

/**
 * A write is acknowledged only once its COMMIT succeeded. A deferred constraint trigger of this
 * file's own database fails the COMMIT of a lead whose Customer says so: with an ordinary error,
 * or with SQLSTATE 57P01 (what a backend ended by a Postgres shutdown reports), which is how a
 * COMMIT cut by a restart looks to the server.
 */
describe('a COMMIT that fails', () => {
  const own = useOwnDatabase();
  const { t, w } = useTestWorld(() => ({ DATABASE_URL: own.url, BULK_BATCH_SIZE: '100' }));

  beforeAll(async () => {
    await own.db.raw(`
      CREATE FUNCTION test_fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.data->>'Customer' LIKE 'refused-at-commit%' THEN
          RAISE EXCEPTION 'refused at commit' USING ERRCODE = '23514';
        ELSIF NEW.data->>'Customer' LIKE 'gone-at-commit%' THEN
          RAISE EXCEPTION 'terminating connection due to administrator command' USING ERRCODE = '57P01';
        END IF;
        RETURN NULL;
      END $$;
      CREATE CONSTRAINT TRIGGER test_fail_at_commit AFTER INSERT ON leads
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail_at_commit();
    `);
  });

  const data = (customer: string) => ({ Name: 'Commit test', Telefon: '+45 12 34 56 78', Customer: customer });
  const importLead = (customer: string, key: string) =>
    request(t.app)
      .post('/api/leads')
      .set('Authorization', w.accounts.full.auth)
      .set('Idempotency-Key', key)
      .send({ CampaignCode: w.campaigns.b2b, Data: data(customer) });
  const count = async (externalKey: string) =>
    Number((await t.db('leads').whereLike('external_key', externalKey).count<{ n: number }[]>({ n: '*' }))[0]!.n);

  it('when the COMMIT of a keyed import fails, then the import is not acknowledged and nothing is stored', async () => {
    const customer = uniq('refused-at-commit-');
    const res = await importLead(customer, uniq('key-'));
    expect(res.status).toBe(500);
    expect((res.body as { success?: boolean }).success).toBeUndefined();
    expect(await count(customer)).toBe(0);
  });

  it('when the connection ends at the COMMIT of a keyed import, then it is a 503 to retry, and the retry with the same key stores the lead once', async () => {
    const customer = uniq('gone-at-commit-');
    const key = uniq('key-');
    const res = await importLead(customer, key);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect((res.body as { code: string }).code).toBe('service_unavailable');
    expect(await count(customer)).toBe(0);

    // The key was not kept: the same request again (here without the failure) does the work.
    await t.db('leads').where({ external_key: customer }).delete();
    await own.db.raw('ALTER TABLE leads DISABLE TRIGGER test_fail_at_commit');
    try {
      const retry = await importLead(customer, key);
      expect(retry.status).toBe(200);
      expect((retry.body as { success: boolean }).success).toBe(true);
      expect(await count(customer)).toBe(1);
    } finally {
      await own.db.raw('ALTER TABLE leads ENABLE TRIGGER test_fail_at_commit');
    }
  });

  it('when the connection ends at the COMMIT of a bulk batch, then that batch is not acknowledged and the answer ends with a 503 element', async () => {
    const tag = uniq('bulk-');
    const rows = Array.from({ length: 250 }, (_, i) => data(i + 1 === 150 ? `gone-at-commit-${tag}` : `${tag}-${i + 1}`));
    const res = await request(t.app)
      .post('/api/leads/bulk')
      .query({ CampaignCode: w.campaigns.b2b })
      .set('Authorization', w.accounts.full.auth)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(rows));
    expect(res.status).toBe(200);
    const answer = res.body as ({ row: number; success: boolean } | { code: string; status: number; rows: number })[];
    const results = answer.filter((e): e is { row: number; success: boolean } => 'row' in e);
    // The first batch (rows 1-100) was committed and answered; the second (with row 150) was not.
    expect(results.map((r) => r.row)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(answer[answer.length - 1]).toMatchObject({ code: 'service_unavailable', status: 503, rows: 100 });
    expect(await count(`${tag}-%`)).toBe(100);
  });

  it('when the connection was cut before the COMMIT, then commitTransaction fails with the connection error', async () => {
    const trx = await beginTransaction(own.db);
    const { rows } = await trx.raw<{ rows: { pid: number }[] }>('select pg_backend_pid() as pid');
    await trx.raw('create temporary table commit_probe (x int)');
    await own.db.raw('select pg_terminate_backend(?)', [rows[0]!.pid]);
    // The backend is gone once the terminate returned; the client learns it at its next message.
    const error = await commitTransaction(trx).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeDefined();
    expect(isConnectionFailure(error)).toBe(true);
  });
});
