import pg from 'pg';

/**
 * Postgres LISTEN/NOTIFY through one connection per process, however many subscribers listen:
 * account changes (credential caches in every worker and node), live events; the same session
 * holds the advisory locks that count this process's open event streams (`query`). The connection is
 * opened with the first subscription, re-opened after it is lost (Postgres restarting), and
 * LISTENs again on every channel. Notifications sent while it was down are lost, so each
 * subscriber is told about the gap (`onGap`) and catches up in its own way (drop a cache,
 * re-read a table).
 */
export interface Subscription {
  onNotify(payload: string): void;
  /** The connection was lost and is back: notifications of the meantime may be missing. */
  onGap?(): void;
}

/** Channel names are SQL identifiers here: lower case letters, digits and underscores. */
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;

export class PgListener {
  private readonly channels = new Map<string, Set<Subscription>>();
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;
  /** Set once a connection was lost: the next one tells every subscriber about the gap. */
  private lost = false;

  constructor(
    private readonly url: string,
    private readonly onStateChange: (state: 'up' | 'down', err?: unknown) => void = () => undefined,
  ) {}

  /** Subscribes to `channel`; resolves once this process LISTENs on it (or will, when Postgres is back). Returns the unsubscribe. */
  async listen(channel: string, subscription: Subscription): Promise<() => Promise<void>> {
    if (!CHANNEL.test(channel)) throw new RangeError(`not a channel name: ${channel}`);
    let subscribers = this.channels.get(channel);
    const fresh = subscribers === undefined;
    if (!subscribers) {
      subscribers = new Set();
      this.channels.set(channel, subscribers);
    }
    subscribers.add(subscription);
    if (!this.client) await this.connect();
    // A channel added while the connection was opening: the opening may have listed the channels before it.
    if (fresh && this.client) await this.listenOn(this.client, channel).catch(() => undefined);
    return async () => {
      const set = this.channels.get(channel);
      if (!set?.delete(subscription) || set.size > 0) return;
      this.channels.delete(channel);
      const client = this.client;
      if (!client) return;
      this.listening.get(client)?.delete(channel);
      await this.run(client, `UNLISTEN ${channel}`).catch(() => undefined);
    };
  }

  /** The channels each connection LISTENs on. */
  private readonly listening = new WeakMap<pg.Client, Set<string>>();

  private async listenOn(client: pg.Client, channel: string): Promise<void> {
    let set = this.listening.get(client);
    if (!set) {
      set = new Set();
      this.listening.set(client, set);
    }
    if (set.has(channel)) return;
    set.add(channel);
    await this.run(client, `LISTEN ${channel}`);
  }

  /** The statement last sent on each connection: pg wants one at a time, so each waits for the one before. */
  private readonly lastStatement = new WeakMap<pg.Client, Promise<unknown>>();

  private run<R extends pg.QueryResultRow>(client: pg.Client, text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    const previous = this.lastStatement.get(client) ?? Promise.resolve();
    const result = previous.then(() => client.query<R>(text, values));
    this.lastStatement.set(
      client,
      result.catch(() => undefined),
    );
    return result;
  }

  /**
   * Runs a statement on the listening connection itself, for session state that must last exactly
   * as long as this process's connection (the advisory locks of its open event streams): it goes
   * when the connection is lost, which subscribers hear through `onGap`. Rejects while the
   * connection is down.
   */
  async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    if (!this.client) await this.connect();
    const client = this.client;
    if (!client) throw new Error('the database notification connection is down');
    const { rows } = await this.run<R>(client, text, values);
    return rows;
  }

  /** Whether the listening connection is up now. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** Opens the connection and LISTENs on every channel; on failure, tries again later. */
  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async open(): Promise<void> {
    if (this.closed || this.client) return;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
    const onLost = (err?: unknown) => {
      if (this.client !== client) return;
      this.client = undefined;
      this.lost = true;
      client.end().catch(() => undefined);
      this.onStateChange('down', err);
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      for (const subscriber of this.channels.get(message.channel) ?? []) subscriber.onNotify(message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await this.listenOn(client, channel);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      if (!this.lost) {
        this.lost = true;
        this.onStateChange('down', err);
      }
      this.scheduleRetry();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    if (this.lost) {
      this.lost = false;
      this.onStateChange('up');
      for (const subscribers of this.channels.values()) for (const s of subscribers) s.onGap?.();
    }
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry) return;
    const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** this.failures++);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, delay);
    this.retry.unref();
  }
}
