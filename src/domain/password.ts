import { createHmac, randomBytes, scrypt as scryptCb, timingSafeEqual, ScryptOptions } from 'node:crypto';

/**
 * Passwords are stored only as scrypt hashes: `scrypt$N$r$p$salt$hash` (base64). The
 * parameters travel with the hash so they can be raised later without breaking old ones.
 */
const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { N, r: R, p: P });
  return ['scrypt', N, R, P, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, saltB64, keyB64] = parts;
  const expected = Buffer.from(keyB64!, 'base64');
  const key = await scrypt(password, Buffer.from(saltB64!, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A tag of a password that verified against `stored` (the account's scrypt hash), for the
 * known-good record of a login (docs/decisions.md, Overload and timeouts): an HMAC keyed by
 * the stored hash, so the tag alone cannot be tried offline (the key is the hash's salt and
 * 256-bit output), a new password or hash makes old tags worthless, and comparing one costs a
 * microsecond instead of a scrypt.
 */
export function credentialTag(stored: string, password: string): string {
  return createHmac('sha256', stored).update('lcm known-good\u0000').update(password, 'utf8').digest('base64url');
}

/** Whether two tags are equal, in time that does not depend on where they differ. */
export function sameTag(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
