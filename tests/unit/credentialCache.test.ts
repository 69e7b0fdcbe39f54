import { CredentialCache } from '../../src/http/credentialCache';
import type { StoredAccount } from '../../src/data/accountRepository';

const account = (id: number) => ({ id }) as StoredAccount;

describe('CredentialCache', () => {
  it('when a header is keyed, then the key is the same for the same header, differs for another, and does not hold the header', () => {
    const cache = new CredentialCache(60_000);
    const header = 'Basic ' + Buffer.from('user:secret-password').toString('base64');
    const key = cache.key(header);
    expect(cache.key(header)).toBe(key);
    expect(cache.key(header + 'x')).not.toBe(key);
    expect(key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(key).not.toContain(Buffer.from('user:secret-password').toString('base64'));
    // Another process (another cache) keys it differently: its secret is its own.
    expect(new CredentialCache(60_000).key(header)).not.toBe(key);
  });

  it('when another account changes during a check, then the check still caches its own account', () => {
    const cache = new CredentialCache(60_000);
    const generation = cache.generation;
    cache.invalidateAccount(2);
    cache.set('k', account(1), generation);
    expect(cache.get('k')?.account.id).toBe(1);
  });

  it('when the checked account changes during the check, then nothing is cached', () => {
    const cache = new CredentialCache(60_000);
    const generation = cache.generation;
    cache.invalidateAccount(1);
    cache.set('k', account(1), generation);
    expect(cache.get('k')).toBeUndefined();
  });

  it('when the account changed before the check began, then the check caches', () => {
    const cache = new CredentialCache(60_000);
    cache.invalidateAccount(1);
    const generation = cache.generation;
    cache.set('k', account(1), generation);
    expect(cache.get('k')?.account.id).toBe(1);
  });

  it('when the cache is cleared during a check (a gap in notifications), then nothing is cached', () => {
    const cache = new CredentialCache(60_000);
    const generation = cache.generation;
    cache.clear();
    cache.set('k', account(1), generation);
    expect(cache.get('k')).toBeUndefined();
  });

  it('when more accounts change than it remembers, then a check older than the forgotten change caches nothing', () => {
    const cache = new CredentialCache(60_000, Date.now, 2);
    const generation = cache.generation;
    cache.invalidateAccount(1);
    cache.invalidateAccount(2);
    cache.invalidateAccount(3); // account 1's change is forgotten: it may have been anyone's
    cache.set('k', account(1), generation);
    expect(cache.get('k')).toBeUndefined();
    cache.set('k', account(1), cache.generation);
    expect(cache.get('k')?.account.id).toBe(1);
  });
});
