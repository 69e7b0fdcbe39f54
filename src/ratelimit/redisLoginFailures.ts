import { createHash } from 'node:crypto';
import { defineScript, CommandParser } from 'redis';
import { LoginFailureCheck, LoginFailureLimits, LoginFailureStore, waitSeconds } from './loginFailures';

/**
 * Whether the address or the pair has reached its limit: the milliseconds until the later of
 * the exceeded windows ends (0 when neither is exceeded), and the address's failures in its
 * window. KEYS: address, pair; ARGV: their limits.
 * A window is a key that expires with it (set by the failure that opened it), so Redis's clock
 * decides, the same for every instance.
 */
const CHECK_LUA = `
local wait = 0
local counts = {}
for i = 1, 2 do
  counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
  if counts[i] >= tonumber(ARGV[i]) then
    local left = redis.call('PTTL', KEYS[i])
    if left > wait then wait = left end
  end
end
return {wait, counts[1]}
`;

/** One failure on both keys; the first failure of a window sets its expiry. ARGV: window ms. */
const RECORD_LUA = `
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
end
return 0
`;

const pairOfKeys = {
  NUMBER_OF_KEYS: 2,
  parseCommand(parser: CommandParser, keys: [string, string], args: string[]) {
    parser.pushKeys(keys);
    parser.push(...args);
  },
};

/** The scripts the counter Redis client registers (redisCounterStore.ts). */
export const loginFailureScripts = {
  loginFailureCheck: defineScript({ SCRIPT: CHECK_LUA, ...pairOfKeys, transformReply: (reply: unknown) => reply as number[] }),
  loginFailureRecord: defineScript({ SCRIPT: RECORD_LUA, ...pairOfKeys, transformReply: (reply: unknown) => reply as number }),
};

/** The part of the counter Redis client this store uses. */
export interface LoginFailureRedis {
  loginFailureCheck(keys: [string, string], args: string[]): Promise<number[]>;
  loginFailureRecord(keys: [string, string], args: string[]): Promise<number>;
  del(key: string): Promise<number>;
}

/**
 * Keys hold hashes, never a raw address or username. The address hash is the hash tag, so an
 * address's key and its pairs' keys share one Redis Cluster slot (a script touches both).
 */
export function loginFailureKeys(address: string, username: string): { address: string; pair: string } {
  const a = digest(`address\u0000${address}`);
  return { address: `lf:{${a}}:a`, pair: `lf:{${a}}:u:${digest(`user\u0000${username.toLowerCase()}`)}` };
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url').slice(0, 22);
}

/** Failed logins counted in Redis: one count for every API instance, one round trip per call. */
export class RedisLoginFailures implements LoginFailureStore {
  constructor(
    private readonly client: LoginFailureRedis,
    private readonly limits: LoginFailureLimits,
  ) {}

  async check(address: string, username: string): Promise<LoginFailureCheck> {
    const k = loginFailureKeys(address, username);
    const [wait, addressFailures] = await this.client.loginFailureCheck(
      [k.address, k.pair],
      [String(this.limits.perAddress), String(this.limits.perAddressAndUser)],
    );
    return { retryAfter: waitSeconds(Number(wait)), suspect: Number(addressFailures) > 0 };
  }

  async recordFailure(address: string, username: string): Promise<void> {
    const k = loginFailureKeys(address, username);
    await this.client.loginFailureRecord([k.address, k.pair], [String(this.limits.windowMs)]);
  }

  async recordSuccess(address: string, username: string): Promise<void> {
    await this.client.del(loginFailureKeys(address, username).pair);
  }
}
