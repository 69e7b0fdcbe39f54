import { createClient, createCluster, RedisScripts } from 'redis';
import type { RedisTarget } from '../config/settings';
import { withDeadline } from './deadline';

/**
 * One way to open node-redis for a configured target: a single Redis (createClient) or a Redis
 * Cluster (createCluster, which follows MOVED/ASK redirections and fail-overs itself). Callers
 * only use commands whose keys share one hash slot (the counters' `{account}` tag), PUBLISH /
 * SUBSCRIBE (a cluster forwards a PUBLISH to every node) and PING, so both kinds answer alike.
 */

export interface RedisConnectionOptions<S extends RedisScripts> {
  target: RedisTarget;
  scripts?: S;
  connectTimeoutMs?: number;
  /** Longest wait between reconnection attempts. */
  maxReconnectDelayMs?: number;
  /** false = give up at the first failed connection (one-shot clients such as a publisher). */
  reconnect?: boolean;
  /** Fail commands at once while disconnected instead of queueing them. */
  disableOfflineQueue?: boolean;
}

/** A single URL or a target; a plain string is one Redis. */
export type RedisTargetLike = RedisTarget | string;

export function toRedisTarget(target: RedisTargetLike): RedisTarget {
  return typeof target === 'string' ? { cluster: false, url: target } : target;
}

/** No client-side command timeout (node-redis arms 5 s by default): callers use `withinDeadline`. */
const COMMAND_OPTIONS = { timeout: 0 };

export function createRedisConnection<S extends RedisScripts = Record<string, never>>(options: RedisConnectionOptions<S>) {
  const maxDelay = options.maxReconnectDelayMs ?? 2000;
  const socket = {
    connectTimeout: options.connectTimeoutMs ?? 1000,
    reconnectStrategy: options.reconnect === false ? (false as const) : (retries: number) => Math.min(50 * 2 ** retries, maxDelay),
  };
  const { target } = options;
  if (!target.cluster) {
    return createClient({
      url: target.url,
      disableOfflineQueue: options.disableOfflineQueue ?? false,
      socket,
      scripts: options.scripts,
      commandOptions: COMMAND_OPTIONS,
    });
  }
  return createCluster({
    rootNodes: target.rootUrls.map((url) => ({ url })),
    // Settings every node connection gets (rootNodes only serve the topology discovery).
    defaults: { disableOfflineQueue: options.disableOfflineQueue ?? false, socket },
    scripts: options.scripts,
    commandOptions: COMMAND_OPTIONS,
    // After a master is lost, look for the promoted replica soon rather than after 5 s.
    topologyRefreshOnReconnectionAttemptStrategy: 200,
  });
}

/**
 * What `command` answers, or an error once `ms` have passed without an answer, whether the command
 * was still waiting to be sent or sent to a Redis that stopped answering. node-redis's own
 * per-command `timeout` only covers the wait to be sent, and makes an AbortSignal.timeout per
 * command whose timer always fires later (with a DOMException). A command given up on may still
 * run in Redis.
 */
export function withinDeadline<T>(command: Promise<T>, ms: number): Promise<T> {
  return withDeadline(command, ms, () => new Error(`Redis did not answer within ${ms} ms`));
}

/**
 * Whether the target can serve every key now: PING for one Redis; for a cluster, CLUSTER INFO
 * must report `cluster_state:ok` (every slot has a reachable master), which is what a lost
 * master breaks until its replica has been promoted.
 */
export async function redisServesAllKeys(
  client: { ping(): Promise<unknown>; clusterInfo(): Promise<unknown> },
  target: RedisTarget,
): Promise<boolean> {
  if (!target.cluster) {
    await client.ping();
    return true;
  }
  const info = String(await client.clusterInfo());
  return /cluster_state:ok/.test(info);
}

/**
 * Whether every key can be served without a failed command: for one Redis, its connection is up;
 * for a cluster, every master in the client's slot map is connected. A killed master stays in
 * that map (not ready) until the client has learnt the promoted replica, so this stays false
 * through a fail-over rather than reporting up while one slot range still points at a dead node.
 */
export function redisConnectionReady(client: { isReady: boolean }, target: RedisTarget): boolean {
  if (!client.isReady) return false;
  if (!target.cluster) return true;
  // createCluster's slot map; each master node has a client once connected (eager by default).
  const { masters } = client as unknown as { masters: ReadonlyArray<{ client?: { isReady: boolean } }> };
  return masters.length > 0 && masters.every((node) => node.client?.isReady === true);
}
