import { testDatabaseUrl, uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { startApiNode, ApiNode } from '../cluster/harness/apiNodes';

/**
 * Fault: the server process is killed with SIGKILL while 32 clients import leads with
 * Idempotency-Keys (single imports and bulk imports), then a new process starts and every
 * request is sent again with its key. Every lead must be stored exactly once and every
 * acknowledged request must get its first answer back.
 *
 * What breaks it: a key kept in another transaction than the lead it answers (a lead without
 * its key is stored twice by the retry; a key without its lead answers a lead that does not
 * exist), a bulk part committed apart from its rows, or a replay that is not the kept answer.
 */
const CLIENTS = 32;
const BULK_CLIENTS = 8;
const BULK_ROWS = 40;

interface Sent {
  key: string;
  bulk: boolean;
  body: string;
  customers: string[];
  /** The whole answer, when it arrived before the kill. */
  ack?: { status: number; text: string };
}

/** A bulk answer is replayed byte for byte; a single import's is the same JSON (its members may come in another order). */
function sameAnswer(s: Sent, retry: string, first: string): boolean {
  if (s.bulk) return retry === first;
  try {
    expect(JSON.parse(retry)).toEqual(JSON.parse(first));
    return true;
  } catch {
    return false;
  }
}

describe('kill -9 during concurrent idempotent imports', () => {
  const { t, w } = useTestWorld();
  let node: ApiNode | undefined;
  afterAll(() => node?.stop());

  const env = () => ({
    DATABASE_URL: testDatabaseUrl(),
    REDIS_URL: process.env.TEST_REDIS_URL ?? '',
    AUTH_CACHE_TTL_MS: '600000',
    LOGIN_FAILURES_PER_ADDRESS: '1000000',
    LOGIN_FAILURES_PER_USER: '1000000',
  });

  function send(url: string, s: Sent): Promise<Response> {
    const path = s.bulk ? `/api/leads/bulk?CampaignCode=${encodeURIComponent(w.campaigns.b2b)}` : '/api/leads';
    return fetch(url + path, {
      method: 'POST',
      headers: {
        Authorization: w.accounts.full.auth,
        'Content-Type': s.bulk ? 'application/x-ndjson' : 'application/json',
        'Idempotency-Key': s.key,
      },
      body: s.body,
    });
  }

  function nextRequest(tag: string, client: number, n: number): Sent {
    const key = `${tag}-${client}-${n}`;
    if (client < BULK_CLIENTS) {
      const customers = Array.from({ length: BULK_ROWS }, (_, i) => `${key}-r${i}`);
      const body = customers.map((c) => JSON.stringify({ Name: 'Bulk row', Telefon: '+45 1234', Customer: c }) + '\n').join('');
      return { key, bulk: true, body, customers };
    }
    const body = JSON.stringify({ CampaignCode: w.campaigns.b2b, Data: { Name: 'Single', Telefon: '+45 1234', Customer: key } });
    return { key, bulk: false, body, customers: [key] };
  }

  it('when the server is killed mid-import and every request is retried after a restart, then each lead is stored once and every acknowledged answer comes back', async () => {
    const tag = uniq('KILL-');
    node = await startApiNode('killed', env());
    const first = node;
    const sent: Sent[] = [];
    let killed = false;
    let acknowledged = 0;
    const client = async (c: number) => {
      for (let n = 0; !killed; n++) {
        const s = nextRequest(tag, c, n);
        sent.push(s);
        try {
          const res = await send(first.url, s);
          const text = await res.text();
          if (!killed) {
            s.ack = { status: res.status, text };
            acknowledged++;
          }
        } catch {
          return; // the connection died with the server
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    // Kill once the imports are well under way (two hundred answered), or after 20 s at most.
    const deadline = Date.now() + 20_000;
    while (acknowledged < 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    killed = true;
    await first.kill();
    await Promise.all(clients);
    expect(acknowledged).toBeGreaterThan(0);
    const inFlight = sent.filter((s) => !s.ack);
    // The kill met requests in flight (else the test would prove nothing about them).
    expect(inFlight.length).toBeGreaterThan(0);
    for (const s of sent.filter((x) => x.ack)) expect(s.ack!.status).toBe(200);

    node = await startApiNode('restarted', env());
    const second = node;
    // Every request again with its key, eight at a time.
    const queue = [...sent];
    const retried = new Map<string, { status: number; text: string; replayed: string | null }>();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let s = queue.shift(); s; s = queue.shift()) {
          const res = await send(second.url, s);
          retried.set(s.key, { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed') });
        }
      }),
    );
    const wrong: string[] = [];
    for (const s of sent) {
      const r = retried.get(s.key)!;
      if (r.status !== 200) wrong.push(`${s.key}: retry answered ${r.status} ${r.text.slice(0, 200)}`);
      else if (s.ack && (!sameAnswer(s, r.text, s.ack.text) || r.replayed !== 'true')) {
        wrong.push(`${s.key}: retry answered ${r.text.slice(0, 200)} (replayed ${r.replayed}), first ${s.ack.text.slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);

    // Exactly once, counted in the database: every row of every request, no more.
    const rows = await t.db<{ external_key: string }>('leads').whereLike('external_key', `${tag}-%`).select('external_key');
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r.external_key, (counts.get(r.external_key) ?? 0) + 1);
    const expected = sent.flatMap((s) => s.customers);
    expect(expected.filter((c) => counts.get(c) !== 1)).toEqual([]);
    expect(rows.length).toBe(expected.length);
  }, 180_000);
});
