import { defineScript, CommandParser } from 'redis';
import { LoginAttempt, LoginFailureLimits, LoginFailureStore, LoginSuccess, loginFailureKeys, toLoginAttempt } from './loginFailures';

/**
 * One login attempt before its password check, in one step (mirrors login_attempt of the
 * migration 20261206000002_login_records). KEYS: address, pair, known-good record.
 * ARGV: the address's and the pair's limits, the window in ms, knownGoodFirst (1/0).
 * Reply: { status (0 reserved, 1 limited, 2 known-good record), waitMs, the address's failures
 * before this attempt, the record's tag ('' none), its ms left }.
 * A window is a key that expires with it (set by the failure that opened it), so Redis's clock
 * decides, the same for every instance.
 */
const ATTEMPT_LUA = `
if ARGV[4] == '1' then
  local tag = redis.call('GET', KEYS[3])
  if tag then return {2, 0, 0, tag, redis.call('PTTL', KEYS[3])} end
end
local a = tonumber(redis.call('GET', KEYS[1]) or '0')
local p = tonumber(redis.call('GET', KEYS[2]) or '0')
local limited = false
local wait = 0
if a >= tonumber(ARGV[1]) then
  limited = true
  wait = math.max(wait, redis.call('PTTL', KEYS[1]))
end
if p >= tonumber(ARGV[2]) then
  limited = true
  wait = math.max(wait, redis.call('PTTL', KEYS[2]))
end
if limited then return {1, wait, a, '', 0} end
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
end
return {0, 0, a, '', 0}
`;

/**
 * A password check passed. KEYS: address, pair, known-good record. ARGV: reserved (1/0), the
 * tag to record ('' none), its lifetime in ms. Takes back the reserved failure, clears the pair.
 */
const SUCCESS_LUA = `
if ARGV[1] == '1' then
  local n = tonumber(redis.call('GET', KEYS[1]) or '0')
  if n > 1 then redis.call('DECR', KEYS[1]) elseif n == 1 then redis.call('DEL', KEYS[1]) end
end
redis.call('DEL', KEYS[2])
if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3]) end
return 0
`;

/** One failure on address and pair; the first failure of a window sets its expiry. ARGV: window ms. */
const RECORD_LUA = `
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
end
return 0
`;

const threeKeys = {
  NUMBER_OF_KEYS: 3,
  parseCommand(parser: CommandParser, keys: [string, string, string], args: string[]) {
    parser.pushKeys(keys);
    parser.push(...args);
  },
};

/** The scripts the counter Redis client registers (redisCounterStore.ts). */
export const loginFailureScripts = {
  loginAttempt: defineScript({
    SCRIPT: ATTEMPT_LUA,
    ...threeKeys,
    transformReply: (reply: unknown) => reply as (number | string)[],
  }),
  loginSucceeded: defineScript({ SCRIPT: SUCCESS_LUA, ...threeKeys, transformReply: (reply: unknown) => reply as number }),
  loginFailed: defineScript({
    SCRIPT: RECORD_LUA,
    NUMBER_OF_KEYS: 2,
    parseCommand(parser: CommandParser, keys: [string, string], args: string[]) {
      parser.pushKeys(keys);
      parser.push(...args);
    },
    transformReply: (reply: unknown) => reply as number,
  }),
};

/** The part of the counter Redis client this store uses. */
export interface LoginFailureRedis {
  loginAttempt(keys: [string, string, string], args: string[]): Promise<(number | string)[]>;
  loginSucceeded(keys: [string, string, string], args: string[]): Promise<number>;
  loginFailed(keys: [string, string], args: string[]): Promise<number>;
}

/** Failed logins and known-good credentials in Redis: one count for every API instance, one round trip per step. */
export class RedisLoginFailures implements LoginFailureStore {
  constructor(
    private readonly client: LoginFailureRedis,
    private readonly limits: LoginFailureLimits,
  ) {}

  async attempt(address: string, username: string, knownGoodFirst: boolean): Promise<LoginAttempt> {
    const k = loginFailureKeys(address, username);
    const [status, waitMs, addressFailures, tag, tagMs] = await this.client.loginAttempt(
      [k.address, k.pair, k.knownGood],
      [String(this.limits.perAddress), String(this.limits.perAddressAndUser), String(this.limits.windowMs), knownGoodFirst ? '1' : '0'],
    );
    return toLoginAttempt({
      status: Number(status) === 1 ? 1 : Number(status) === 2 ? 2 : 0,
      waitMs: Number(waitMs ?? 0),
      addressFailures: Number(addressFailures ?? 0),
      tag: String(tag ?? ''),
      tagMs: Number(tagMs ?? 0),
    });
  }

  async succeeded(address: string, username: string, outcome: LoginSuccess): Promise<void> {
    const k = loginFailureKeys(address, username);
    await this.client.loginSucceeded(
      [k.address, k.pair, k.knownGood],
      [outcome.reserved ? '1' : '0', outcome.knownGoodTag ?? '', String(this.limits.knownGoodTtlMs)],
    );
  }

  async failed(address: string, username: string): Promise<void> {
    const k = loginFailureKeys(address, username);
    await this.client.loginFailed([k.address, k.pair], [String(this.limits.windowMs)]);
  }
}
