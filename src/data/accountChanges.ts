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
 * Subscribes to account changes; reconnects on its own. Resolves to the function that closes the
 * subscription. A subscription that cannot be made is reported through onUnavailable: cached
 * credentials then expire by their TTL.
 */
export function subscribeAccountChanges(
  redis: RedisTargetLike,
  listener: AccountChangeListener,
  onUnavailable: (err: unknown) => void,
): () => Promise<void> {
  const subscriber = createRedisConnection({ target: toRedisTarget(redis), maxReconnectDelayMs: 5000 });
  subscriber.on('error', () => undefined);
  subscriber
    .connect()
    .then(() =>
      subscriber.subscribe(ACCOUNT_CHANGED_CHANNEL, (message) => {
        const id = Number(message);
        listener(Number.isInteger(id) ? id : undefined);
      }),
    )
    .catch(onUnavailable);
  return async () => {
    if (subscriber.isOpen) await subscriber.quit().catch(() => subscriber.destroy());
    else subscriber.destroy();
  };
}
