import request from 'supertest';
import { basicAuth } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';
import { hashPassword } from '../../src/domain/password';

/**
 * Failed logins cost little and are limited (docs/decisions.md, Overload and timeouts): a
 * repeated failed credential is answered from memory, an address that fails too often gets a
 * 429 with Retry-After while other addresses log in as usual.
 */
describe('failed logins', () => {
  const { t, w } = useTestWorld({
    AUTH_CACHE_TTL_MS: '60000',
    TRUST_PROXY: 'true',
    LOGIN_FAILURES_PER_USER: '3',
    LOGIN_FAILURES_PER_ADDRESS: '5',
  });
  const from = (address: string, auth: string) => request(t.app).get('/api/myaccount').set('Authorization', auth).set('X-Forwarded-For', address);
  const wrong = (n: number, username = w.accounts.full.username) => basicAuth(username, `wrong-${n}`);

  it('when the same wrong credentials come again, then they are refused from memory without a password check', async () => {
    const username = w.accounts.b2b.username;
    const guess = basicAuth(username, 'guessed-pass');
    expect((await from('10.0.0.1', guess)).status).toBe(401);
    // Make the guess the real password behind the server's back (no account-change message):
    // a repeat that were checked again would now pass; the remembered failure answers 401.
    const original = (await t.db('accounts').where({ username }).first('password_hash')).password_hash as string;
    await t.db('accounts').where({ username }).update({ password_hash: await hashPassword('guessed-pass') });
    try {
      expect((await from('10.0.0.2', guess)).status).toBe(401);
      // An account change forgets remembered failures: then the credentials are checked again.
      t.composed.app.credentials.invalidateAccount(0);
      expect((await from('10.0.0.3', guess)).status).toBe(200);
    } finally {
      await t.db('accounts').where({ username }).update({ password_hash: original });
      t.composed.app.credentials.clear();
    }
  });

  it('when one address fails too often against one username, then it gets a 429 with Retry-After, and other addresses still log in', async () => {
    for (let i = 0; i < 3; i++) expect((await from('10.1.0.1', wrong(i))).status).toBe(401);
    const limited = await from('10.1.0.1', wrong(99));
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('10.1.0.2', w.accounts.full.auth)).status).toBe(200);
  });

  it('when one address fails too often across usernames, then even valid credentials not yet verified wait', async () => {
    for (let i = 0; i < 5; i++) expect((await from('10.2.0.1', wrong(i, `nobody-${i}-${w.id}`))).status).toBe(401);
    // Credentials verified before pass from the cache (a shared NAT); new ones wait.
    t.composed.app.credentials.clear();
    expect((await from('10.2.0.1', w.accounts.full.auth)).status).toBe(429);
    expect((await from('10.2.0.2', w.accounts.full.auth)).status).toBe(200);
  });

  it('when a login succeeds, then the failures of that address and username start again', async () => {
    for (let i = 0; i < 2; i++) expect((await from('10.3.0.1', wrong(i))).status).toBe(401);
    expect((await from('10.3.0.1', w.accounts.full.auth)).status).toBe(200);
    for (let i = 2; i < 4; i++) expect((await from('10.3.0.1', wrong(i))).status).toBe(401);
  });

  it('when refused for failures, then the metrics count it', async () => {
    const metrics = await request(t.app).get('/api/metrics');
    expect(metrics.text).toMatch(/lcm_overload_refused_total\{reason="login"\} [1-9]/);
  });
});
