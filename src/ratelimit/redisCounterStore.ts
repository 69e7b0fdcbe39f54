import { defineScript, CommandParser } from 'redis';
import { RedisTargetLike, createRedisConnection, redisConnectionReady, redisServesAllKeys, toRedisTarget } from '../data/redis';
import type { RedisTarget } from '../config/settings';
import { loginFailureScripts } from './redisLoginFailures';
import {
  ConsumeInput,
  ConsumeResult,
  CounterEntry,
  CounterStore,
  DAY_MS,
  MINUTE_MS,
  ServiceCount,
  Window,
  assertConsumeInput,
  currentWindow,
  resetSeconds,
  toConsumeResult,
} from './counterStore';

/**
 * Check and count in one atomic round trip: the decision counterStore.ts describes.
 * KEYS: daily hash, minute hash (fields start in ms, count), set of the account's used services.
 * ARGV: now, weight, dailyLimit, minuteLimit (0 = no fair use), dayMs, minuteMs, service.
 * Reply: { exceeded (0 none, 1 daily, 2 minute), dailyStart (-1 none), dailyCount, minuteStart, minuteCount }.
 * The caller's clock decides when a period has ended; key TTLs only keep Redis from growing.
 */
const CONSUME_LUA = `
local now = tonumber(ARGV[1])
local weight = tonumber(ARGV[2])
local dailyLimit = tonumber(ARGV[3])
local minuteLimit = tonumber(ARGV[4])
local dayMs = tonumber(ARGV[5])
local minuteMs = tonumber(ARGV[6])

local function current(key, length)
  local v = redis.call('HMGET', key, 'start', 'count')
  local start = tonumber(v[1])
  if start == nil or now >= start + length then return -1, 0 end
  return start, tonumber(v[2]) or 0
end

local dStart, dCount = current(KEYS[1], dayMs)
local mStart, mCount = -1, 0
if minuteLimit > 0 then mStart, mCount = current(KEYS[2], minuteMs) end

if dCount + weight > dailyLimit then return {1, dStart, dCount, mStart, mCount} end
if minuteLimit > 0 and mCount + weight > minuteLimit then return {2, dStart, dCount, mStart, mCount} end

local function add(key, start, length)
  if start == -1 then
    redis.call('HSET', key, 'start', ARGV[1], 'count', weight)
    redis.call('PEXPIRE', key, length)
    return now, weight
  end
  return start, redis.call('HINCRBY', key, 'count', weight)
end

if dStart == -1 then
  -- The newest period ends last, so the set may expire with it.
  redis.call('SADD', KEYS[3], ARGV[7])
  redis.call('PEXPIRE', KEYS[3], dayMs)
end
dStart, dCount = add(KEYS[1], dStart, dayMs)
if minuteLimit > 0 then mStart, mCount = add(KEYS[2], mStart, minuteMs) end
return {0, dStart, dCount, mStart, mCount}
`;

const consumeScript = defineScript({
  SCRIPT: CONSUME_LUA,
  NUMBER_OF_KEYS: 3,
  parseCommand(parser: CommandParser, keys: [string, string, string], args: string[]) {
    parser.pushKeys(keys);
    parser.push(...args);
  },
  transformReply: (reply: unknown) => reply as [number, number, number, number, number],
});

/**
 * Adds one pair's windows counted elsewhere (in Postgres during an outage) to its keys. A window
 * that has ended at `now` is dropped; one current here too gets the sum of both counts and the
 * earlier start (so it ends no later than either); one absent here is copied.
 * KEYS: daily hash, minute hash, services set. ARGV: now, dailyStart (-1 none), dailyCount,
 * minuteStart, minuteCount, dayMs, minuteMs, service.
 */
const MERGE_LUA = `
local now = tonumber(ARGV[1])

local function merge(key, start, count, length)
  if start < 0 or now >= start + length then return false end
  local v = redis.call('HMGET', key, 'start', 'count')
  local here = tonumber(v[1])
  if here ~= nil and now < here + length then
    if here < start then start = here end
    count = count + (tonumber(v[2]) or 0)
  end
  redis.call('HSET', key, 'start', start, 'count', count)
  redis.call('PEXPIRE', key, start + length - now)
  return true
end

local dayMs = tonumber(ARGV[6])
if merge(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]), dayMs) then
  redis.call('SADD', KEYS[3], ARGV[8])
  -- The set lives as long as its newest period: only ever lengthen its lifetime.
  if redis.call('PTTL', KEYS[3]) < dayMs then redis.call('PEXPIRE', KEYS[3], dayMs) end
end
merge(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7]))
return 0
`;

const mergeScript = defineScript({
  SCRIPT: MERGE_LUA,
  NUMBER_OF_KEYS: 3,
  parseCommand(parser: CommandParser, keys: [string, string, string], args: string[]) {
    parser.pushKeys(keys);
    parser.push(...args);
  },
  transformReply: (reply: unknown) => reply as number,
});

// The {accountId} hash tag puts every key of one account in one Redis Cluster slot: the script
// touches three of them, and a cluster only runs a script whose keys share a slot.
export const dailyKey = (accountId: number, service: string) => `rl:{${accountId}}:d:${service}`;
export const minuteKey = (accountId: number, service: string) => `rl:{${accountId}}:m:${service}`;
export const servicesKey = (accountId: number) => `rl:{${accountId}}:services`;

export interface CounterRedisClientOptions {
  /** One Redis URL, or a target (one Redis or a Redis Cluster). */
  url: RedisTargetLike;
  connectTimeoutMs?: number;
  /** Longest wait between reconnection attempts. */
  maxReconnectDelayMs?: number;
}

/**
 * A node-redis client (or cluster client) for the counter store. Commands fail at once while
 * disconnected (disableOfflineQueue) instead of queueing, so the failover store can answer
 * without Redis; the client keeps reconnecting in the background. How long a command may take
 * is the failover store's deadline (failoverCounterStore.ts), not the client's.
 */
export function createCounterRedisClient(options: CounterRedisClientOptions) {
  return createRedisConnection({
    target: toRedisTarget(options.url),
    disableOfflineQueue: true,
    connectTimeoutMs: options.connectTimeoutMs,
    maxReconnectDelayMs: options.maxReconnectDelayMs,
    // The failed-login counts (redisLoginFailures.ts) share this client and its failover.
    scripts: { rateLimitConsume: consumeScript, rateLimitMerge: mergeScript, ...loginFailureScripts },
  });
}

export type CounterRedisClient = ReturnType<typeof createCounterRedisClient>;

function fromReply(start: number, count: number): Window | undefined {
  return start < 0 ? undefined : { start, count };
}

function parseWindow(fields: (string | null)[]): Window | undefined {
  const [start, count] = fields;
  return start === null || start === undefined ? undefined : { start: Number(start), count: Number(count ?? 0) };
}

/** Counters shared by every API instance through one Redis. Owns (and closes) its client. */
export class RedisCounterStore implements CounterStore {
  constructor(
    readonly client: CounterRedisClient,
    private readonly target: RedisTarget = { cluster: false, url: '' },
  ) {}

  /** True while the client has a working connection to every node that holds counters. */
  get ready(): boolean {
    return redisConnectionReady(this.client, this.target);
  }

  /** Rejects unless every account's counters can be reached (a cluster with a slot down cannot). */
  async ping(): Promise<void> {
    if (!(await redisServesAllKeys(this.client, this.target))) throw new Error('Redis Cluster does not serve every slot');
  }

  async consume(input: ConsumeInput): Promise<ConsumeResult> {
    assertConsumeInput(input);
    const { accountId, service } = input;
    const reply = await this.client.rateLimitConsume(
      [dailyKey(accountId, service), minuteKey(accountId, service), servicesKey(accountId)],
      [
        String(input.now),
        String(input.weight),
        String(input.dailyLimit),
        String(input.minuteLimit ?? 0),
        String(DAY_MS),
        String(MINUTE_MS),
        service,
      ],
    );
    const [exceeded, dStart, dCount, mStart, mCount] = reply.map(Number) as [number, number, number, number, number];
    return toConsumeResult(input, {
      exceeded: exceeded === 1 ? 'daily' : exceeded === 2 ? 'minute' : undefined,
      daily: fromReply(dStart, dCount),
      minute: fromReply(mStart, mCount),
    });
  }

  async peek(input: ConsumeInput): Promise<ConsumeResult> {
    assertConsumeInput(input);
    const [d, m] = await Promise.all([
      this.client.hmGet(dailyKey(input.accountId, input.service), ['start', 'count']),
      this.client.hmGet(minuteKey(input.accountId, input.service), ['start', 'count']),
    ]);
    return toConsumeResult(input, {
      daily: currentWindow(parseWindow(d), DAY_MS, input.now),
      minute: currentWindow(parseWindow(m), MINUTE_MS, input.now),
    });
  }

  async counts(accountId: number, now: number): Promise<ServiceCount[]> {
    const services = (await this.client.sMembers(servicesKey(accountId))).map(String).sort();
    // Concurrent commands go out in one pipeline.
    const rows = await Promise.all(
      services.map(async (service) => {
        const [d, m] = await Promise.all([
          this.client.hmGet(dailyKey(accountId, service), ['start', 'count']),
          this.client.hmGet(minuteKey(accountId, service), ['start', 'count']),
        ]);
        const daily = currentWindow(parseWindow(d), DAY_MS, now);
        if (!daily) return undefined;
        return {
          service,
          count: daily.count,
          periodStart: new Date(daily.start),
          resetSeconds: resetSeconds(daily, DAY_MS, now),
          minuteCount: currentWindow(parseWindow(m), MINUTE_MS, now)?.count ?? 0,
        };
      }),
    );
    return rows.filter((r): r is ServiceCount => r !== undefined);
  }

  /**
   * Adds counts kept elsewhere to Redis (each pair in one atomic script) and returns the entries
   * that could not be added. Concurrent commands go out in one pipeline.
   */
  async merge(entries: CounterEntry[], now: number): Promise<CounterEntry[]> {
    const results = await Promise.allSettled(
      entries.map((e) =>
        this.client.rateLimitMerge(
          [dailyKey(e.accountId, e.service), minuteKey(e.accountId, e.service), servicesKey(e.accountId)],
          [
            String(now),
            String(e.daily?.start ?? -1),
            String(e.daily?.count ?? 0),
            String(e.minute?.start ?? -1),
            String(e.minute?.count ?? 0),
            String(DAY_MS),
            String(MINUTE_MS),
            e.service,
          ],
        ),
      ),
    );
    return entries.filter((_, i) => results[i]?.status === 'rejected');
  }

  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (this.client.isReady) await this.client.close();
    else this.client.destroy();
  }
}
