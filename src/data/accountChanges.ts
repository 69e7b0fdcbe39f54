import type { PgListener } from './notifications';

/**
 * Account changes reach every process at once: a trigger on accounts and request_limits
 * (db/migrations/…_account_change_notifications.ts) notifies this channel with the account's id
 * when the change commits, whoever makes it, and each process follows it through its one
 * listening connection (src/data/notifications.ts).
 */
export const ACCOUNT_CHANGED_CHANNEL = 'lcm_account_changed';

/**
 * Calls `onChange` with the id of each changed account, or with undefined when changes may
 * have been missed (the listening connection was lost meanwhile): then every account may have
 * changed. Resolves with the function that stops following.
 */
export function followAccountChanges(
  listener: PgListener,
  onChange: (accountId: number | undefined) => void,
): Promise<() => Promise<void>> {
  return listener.listen(ACCOUNT_CHANGED_CHANNEL, {
    onNotify(payload) {
      const id = Number(payload);
      onChange(Number.isSafeInteger(id) ? id : undefined);
    },
    onGap: () => onChange(undefined),
  });
}
