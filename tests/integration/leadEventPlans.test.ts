import { Client } from 'pg';
import { testDatabaseUrl } from '../harness/testApp';

/**
 * `lcm_record_lead_events` writes the event of every import, lead change and bulk batch: its
 * statement must run one plan kept by the connection, not be planned again on each call
 * (docs/decisions.md, "Leads"). auto_explain shows which plan ran: a custom plan has the call's
 * values folded in as constants, a generic plan refers to the function's parameters.
 */
describe("the lead events function's plan", () => {
  let c: Client;
  const plans: string[] = [];

  beforeAll(async () => {
    c = new Client({ connectionString: testDatabaseUrl() });
    await c.connect();
    c.on('notice', (n) => plans.push(n.message ?? ''));
    await c.query(`LOAD 'auto_explain'`);
    await c.query(`SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET client_min_messages = log`);
  });
  afterAll(() => c.end());

  it("when it has been called many times on one connection, then its statement runs a generic plan (the parameters, not the call's values)", async () => {
    // A lead id no lead has: the statement is planned and run, and writes nothing.
    for (let i = 0; i < 10; i++) {
      await c.query(`select lcm_record_lead_events('lead.updated', array[-1]::bigint[], array[null]::smallint[], now())`);
    }
    const last = plans.filter((p) => p.includes('INSERT INTO hook_events')).at(-1);
    expect(last).toBeDefined();
    expect(last).not.toContain(`'{lead.updated}'`);
    expect(last).toMatch(/Index Scan using leads_pkey on leads/);
  });
});
