import { RedisTargetLike, createRedisConnection, toRedisTarget } from './redis';

/**
 * Account changes announced across processes: `lcm` and the loader publish the ids of changed
 * accounts on a Redis channel; every server subscribes and drops the credentials it cached for
 * them, instead of waiting for the cache TTL. On a Redis Cluster a PUBLISH reaches the
 * subscribers of every node (the cluster bus forwards it), so each server may subscribe
 * wherever its cluster client chooses.
 */

/** Redis channel on which account changes are announced to every server process. */
export const ACCOUNT_CHANGED_CHANNEL = 'lcm:account-changed';

/**
 * Announces changed accounts on Redis so running servers drop their cached credentials now
 * rather than at the end of the cache TTL. Without REDIS_URL there is nothing to tell (an
 * in-process server only sees the bumped version when its entries expire).
 */
export async function notifyAccountChanged(redis: RedisTargetLike | undefined, accountIds: number[]): Promise<void> {
  if (!redis || accountIds.length === 0) return;
  const client = createRedisConnection({ target: toRedisTarget(redis), connectTimeoutMs: 5000, reconnect: false });
  client.on('error', () => {});
  await client.connect();
  try {
    for (const id of accountIds) await client.publish(ACCOUNT_CHANGED_CHANNEL, String(id));
  } finally {
    await client.close();
  }
}

/** What a subscriber is told: one account changed, or (an unreadable message) all may have. */
export type AccountChangeListener = (accountId: number | undefined) => void;

/**
 * Subscribes to account changes; reconnects on its own, and a first connection that fails (a
 * cluster whose seed nodes do not answer yet) is retried with a new client. Returns the function
 * that closes the subscription. While no subscription stands, onUnavailable has been told once:
 * cached credentials then expire by their TTL.
 */
export function subscribeAccountChanges(
  redis: RedisTargetLike,
  listener: AccountChangeListener,
  onUnavailable: (err: unknown) => void,
): () => Promise<void> {
  const target = toRedisTarget(redis);
  let closed = false;
  let reported = false;
  let retry: NodeJS.Timeout | undefined;
  let subscriber: { isOpen: boolean; quit(): Promise<unknown>; destroy(): void } | undefined;

  const attempt = (failures: number): void => {
    const client = createRedisConnection({ target, connectTimeoutMs: 5000, maxReconnectDelayMs: 5000 });
    subscriber = client;
    client.on('error', () => undefined);
    client
      .connect()
      .then(() =>
        client.subscribe(ACCOUNT_CHANGED_CHANNEL, (message) => {
          const id = Number(message);
          listener(Number.isInteger(id) ? id : undefined);
        }),
      )
      .catch((err: unknown) => {
        if (!reported) onUnavailable(err);
        reported = true;
        client.destroy();
        if (closed) return;
        retry = setTimeout(() => attempt(failures + 1), Math.min(250 * 2 ** failures, 5000));
        retry.unref();
      });
  };
  attempt(0);

  return async () => {
    closed = true;
    clearTimeout(retry);
    const client = subscriber;
    if (!client) return;
    if (client.isOpen) await client.quit().catch(() => client.destroy());
    else client.destroy();
  };
}
