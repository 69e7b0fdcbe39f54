import { z } from 'zod';
import { Duration, IANAZone } from 'luxon';
import { isSupportedCountry } from 'libphonenumber-js';
import bytes from 'bytes';

/**
 * One typed settings schema, read from the environment only and validated once at start.
 * Each key names its environment variable; a bad value stops the process with a message
 * naming the variable.
 */
const boolean = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

/** A Postgres connection URL (`postgres://` or `postgresql://`, as pg reads them), or unset. */
const postgresUrl = optionalString.refine((v) => v === undefined || /^postgres(?:ql)?:\/\//i.test(v.trim()), {
  message: 'must be a postgres:// or postgresql:// URL',
});

const positiveInt = z.coerce.number().int().positive();

/**
 * A positive ISO 8601 duration of fixed length (weeks, days, hours, minutes, seconds, e.g. P1D or
 * PT12H), read as milliseconds. Years and months have no fixed length and are refused.
 */
const fixedDuration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v) => v.trim())
    .refine((v) => !/[YM]/.test(v.split('T')[0] ?? '') && Duration.fromISO(v).isValid, {
      message: 'must be an ISO 8601 duration in weeks, days, hours, minutes or seconds, e.g. P1D or PT12H',
    })
    .transform((v) => Duration.fromISO(v).toMillis())
    .refine((ms) => ms > 0, 'must be longer than zero');

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: postgresUrl,
  /** A streaming replica of DATABASE_URL for bulk exports and lag-tolerant lists; unset = everything on the primary. */
  DATABASE_READ_URL: postgresUrl,
  /** How often the replica is checked (reachable, replay lag); a replica found down is used again once a check passes. */
  DATABASE_READ_CHECK_MS: positiveInt.default(2000),
  /** A replica whose replay lags further behind than this is treated as down. */
  DATABASE_READ_MAX_LAG_MS: positiveInt.default(30000),
  REDIS_URL: optionalString,
  /**
   * `true`: REDIS_URL (one URL or a comma-separated list) names nodes of a Redis Cluster;
   * a comma-separated list of redis:// URLs: those cluster nodes (REDIS_URL may then be unset).
   */
  REDIS_CLUSTER: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? 'false' : v.trim()))
    .refine((v) => /^(true|false|1|0|yes|no)$/.test(v) || v.split(',').every((u) => /^rediss?:\/\/\S+$/.test(u.trim())), {
      message: 'must be true, false or a comma-separated list of redis:// URLs',
    }),
  /** Folder for the embedded Postgres cluster when DATABASE_URL is unset. */
  EMBEDDED_DATA_DIR: z.string().min(1).default('.data/postgres'),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).default(54329),
  PLATFORM_TIMEZONE: z
    .string()
    .default('Europe/Copenhagen')
    .refine((tz) => IANAZone.isValidZone(tz), 'must be an IANA time zone name'),
  /**
   * The region (ISO 3166 alpha-2) a phone number without a country code is read in, for the
   * do-not-call list's E.164 form.
   */
  DEFAULT_PHONE_REGION: z
    .string()
    .default('DK')
    .transform((v) => v.trim().toUpperCase())
    .refine((v) => isSupportedCountry(v), 'must be a region code libphonenumber-js knows, e.g. DK'),
  OFF_HOURS_WEIGHT: positiveInt.default(4),
  DEFAULT_DAILY_LIMIT: positiveInt.default(5000),
  /** Daily limit of the bulk services (calls, exports); above 10000 makes them high-limit. */
  DEFAULT_BULK_DAILY_LIMIT: positiveInt.default(20000),
  /**
   * How long a counting call may wait for Redis before the request is counted in Postgres.
   * Generous: on a busy event loop a short timeout fires for a healthy Redis.
   */
  REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(1000),
  TLS_CERT_FILE: optionalString,
  TLS_KEY_FILE: optionalString,
  REQUIRE_HTTPS: boolean.default(false),
  TRUST_PROXY: optionalString,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Largest JSON request body (a single import, a hook, a do-not-call list). As large as one bulk
   * row (BULK_ROW_MAX_BYTES): a lead imported alone may hold what it may hold in a bulk body.
   */
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'must look like 100kb or 1mb')
    .default('1mb'),
  /** Failed logins one client address may have per LOGIN_FAILURE_WINDOW_MS before a 429. */
  LOGIN_FAILURES_PER_ADDRESS: positiveInt.default(30),
  /** Failed logins one client address may have against one username per window before a 429. */
  LOGIN_FAILURES_PER_USER: positiveInt.default(10),
  LOGIN_FAILURE_WINDOW_MS: positiveInt.default(600_000),
  /** Password checks (scrypt, CPU-bound) running at once in this process; the rest wait in a bounded queue. */
  PASSWORD_CHECK_CONCURRENCY: positiveInt.default(1),
  /** How deep a JSON request body may nest (the root object is 1); deeper is a 400. */
  BODY_MAX_DEPTH: positiveInt.default(32),
  /**
   * Largest body of POST /leads/bulk, counted as it streams (a Content-Length above it is a
   * 413 at once; past it mid-stream the rows before are stored and the answer ends with a
   * payload_too_large element).
   */
  BULK_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb|gb)$/i, 'must look like 500mb or 1gb')
    .default('1gb')
    .transform((v) => bytes.parse(v) as number),
  /**
   * A bulk upload (POST /leads/bulk) is not under REQUEST_TIMEOUT_MS: it may take as long as it
   * keeps sending. A body that sends no byte for this long is cut instead: the rows stored before
   * stay stored and answered, and the answer ends with a request-timeout element (or is a 408).
   */
  BULK_BODY_IDLE_TIMEOUT_MS: positiveInt.default(30000),
  /**
   * A bulk import's answer waiting for a client that sends its whole body before it reads: the
   * server keeps reading and storing, and holds the answer (1 MiB in memory, the rest in a
   * temporary file) up to this many bytes (about 90 bytes a row); past it, reading waits for
   * the client to read.
   */
  BULK_ANSWER_SPOOL_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb|gb)$/i, 'must look like 500mb or 1gb')
    .default('2gb')
    .transform((v) => bytes.parse(v) as number),
  /**
   * Largest bulk import row (a JSON array element, an NDJSON line, a CSV row), in UTF-8 bytes.
   * A larger row fails alone, dropped as it streams in: memory is bounded by this, not by the row.
   */
  BULK_ROW_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /**
   * Largest lead data value, in UTF-8 bytes: above it a single import or change is a 413, a bulk
   * import row fails.
   */
  LEAD_VALUE_MAX_BYTES: z.coerce.number().int().min(1).default(65536),
  /** Rows per transaction of a bulk import. */
  BULK_BATCH_SIZE: z.coerce.number().int().min(1).max(10000).default(1000),
  /**
   * Batches of one bulk import stored side by side at most, each in a transaction and
   * connection of its own (a further one only while the pool has connections to spare).
   */
  BULK_PARALLEL_BATCHES: z.coerce.number().int().min(1).max(8).default(2),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10000),
  /**
   * How far the server's JavaScript heap may grow past what was live at the last full garbage
   * collection before the next one, in percent (V8's heap growing factor); 0 leaves V8's own
   * (up to 300). Read by `lcm serve` at start.
   */
  HEAP_GROWING_PERCENT: z.coerce.number().int().min(0).max(1000).default(100),
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30000),
  /**
   * A credential that logged in from an address stays known-good there this long: it is served
   * while the address is limited for failed logins, and its password checks go first.
   */
  AUTH_KNOWN_GOOD_TTL: fixedDuration('P1D'),
  DB_POOL_MAX: positiveInt.default(10),
  /**
   * How long a request waits for a free connection of the pool before it is answered 503 with
   * Retry-After (instead of queueing until the pool frees up).
   */
  DB_ACQUIRE_TIMEOUT_MS: positiveInt.default(5000),
  /**
   * Connections of the export pool: bulk exports (calls family, lead exports) read through a
   * pool of their own, so small requests and /readyz always find a connection in DB_POOL_MAX.
   */
  EXPORT_POOL_MAX: positiveInt.default(5),
  /** How long an admitted export waits for an export connection before a 503 with Retry-After. */
  EXPORT_ACQUIRE_TIMEOUT_MS: positiveInt.default(2000),
  /** Exports running at once in this process; one more is answered 503 with Retry-After. */
  EXPORT_MAX_CONCURRENT: positiveInt.default(5),
  /** Exports one account may run at once in this process; one more is answered 429 with Retry-After. */
  EXPORT_MAX_PER_ACCOUNT: positiveInt.default(4),
  /**
   * A streamed response whose client has taken no data for this long while the server has more
   * to send is cut, and its connection released. 0 switches it off.
   */
  EXPORT_STALL_TIMEOUT_MS: z.coerce.number().int().min(0).default(60000),
  /**
   * HTTP worker processes of `lcm serve`, sharing the port; unset = one per core this process
   * may use (os.availableParallelism()).
   */
  WEB_CONCURRENCY: optionalString.pipe(z.coerce.number<string | undefined>().int().min(1).max(256).optional()),
  /**
   * Listening sockets each HTTP worker opens on the port (SO_REUSEPORT, Linux): a turn of the
   * event loop accepts one new connection per socket, and turns are long while exports render,
   * so several sockets take a burst of new connections several at a time. 1: one socket, shared
   * by the workers through node:cluster.
   */
  LISTEN_SOCKETS: z.coerce.number().int().min(1).max(64).default(4),
  /** Node's server.headersTimeout: the request head must arrive within this time. */
  HEADERS_TIMEOUT_MS: positiveInt.default(20000),
  /**
   * The whole request body must arrive within this time of the head (every route but
   * POST /leads/bulk, which has BULK_BODY_IDLE_TIMEOUT_MS). It covers receiving the request
   * only: a long download still runs as long as the client reads.
   */
  REQUEST_TIMEOUT_MS: positiveInt.default(30000),
  /** Node's server.keepAliveTimeout: how long an idle keep-alive connection stays open. */
  KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(5000),
  /** Rows fetched per cursor round trip on streamed exports. */
  CURSOR_BATCH_SIZE: positiveInt.default(1000),
  /**
   * Bulk exports read Postgres's binary COPY and write the API's bytes from it (the fast
   * path); false: every export goes through the reference serializers over a cursor.
   */
  EXPORT_TRANSCODER: boolean.default(true),
  /** Compress streamed exports when the client asks (Accept-Encoding br, gzip); off when a proxy compresses. */
  COMPRESSION: boolean.default(true),
  /** A compressible export complete below this many bytes at its first write is sent plain. */
  COMPRESSION_MIN_BYTES: z.coerce.number().int().min(0).default(1024),
  /** GET /api/metrics requires the Basic credentials of an account (any account, not counted). */
  METRICS_REQUIRE_AUTH: boolean.default(false),
  /** How often the lead lifecycle sweeper runs in the server; 0 switches it off. */
  SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).default(60000),
  /** How often partition maintenance runs in the server (once across all nodes); 0 switches it off. */
  MAINTENANCE_INTERVAL_MS: z.coerce.number().int().min(0).default(3_600_000),
  /** Months after the current one that get their calls / recordings / ready periods partitions ahead. */
  PARTITION_MONTHS_AHEAD: z.coerce.number().int().min(1).max(24).default(3),
  /** Keep this many whole months before the current one and drop older partitions; unset = keep everything. */
  RETENTION_MONTHS: optionalString.pipe(z.coerce.number<string | undefined>().int().positive().optional()),
  /** Every authenticated request is written to its account's request log (GET /api/myaccount/requests). */
  REQUEST_LOG: boolean.default(true),
  /** How long the request log is kept; older whole days are dropped by partition maintenance. */
  REQUEST_LOG_RETENTION: fixedDuration('P30D'),
  /** How often a worker writes the request log entries it has collected (one statement per batch). */
  REQUEST_LOG_FLUSH_MS: positiveInt.default(1000),
  /**
   * Entries a worker holds while they wait to be written; past this (Postgres down or too slow)
   * new entries are dropped and counted (lcm_request_log_dropped_total), so memory stays bounded.
   */
  REQUEST_LOG_MAX_PENDING: positiveInt.default(50000),
  /** Hook delivery workers inside `lcm serve` (each node claims due deliveries from Postgres). */
  HOOKS_WORKER: boolean.default(true),
  /** Deliveries one worker process sends at once. */
  HOOKS_CONCURRENCY: positiveInt.default(64),
  /** A delivery succeeds on a 2xx answer within this time; slower is a failed attempt. */
  HOOKS_TIMEOUT_MS: positiveInt.default(10000),
  /** Allow plain-http hook URLs (local development and tests); https only otherwise. */
  HOOKS_ALLOW_HTTP: boolean.default(false),
  /**
   * Host names (or literal addresses) hooks may reach although they resolve to loopback,
   * private, link-local or metadata addresses; comma separated.
   */
  HOOKS_ALLOWED_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== ''),
    ),
  /** First retry delay; each further retry doubles it (with jitter) up to HOOKS_RETRY_MAX_DELAY_MS. */
  HOOKS_RETRY_BASE_MS: positiveInt.default(30000),
  HOOKS_RETRY_MAX_DELAY_MS: positiveInt.default(6 * 3600 * 1000),
  /** How long a delivery is retried, from its first attempt, before it is `failed`. */
  HOOKS_RETRY_WINDOW_MS: positiveInt.default(3 * 86400 * 1000),
  /** A hook whose every attempt failed for this long is disabled, with the reason shown on it. */
  HOOKS_DISABLE_AFTER_MS: positiveInt.default(5 * 86400 * 1000),
  /** How often a worker process records that it is alive. */
  HOOKS_HEARTBEAT_MS: positiveInt.default(10000),
  /** A worker silent this long is taken for dead: its claimed deliveries are released to others. */
  HOOKS_WORKER_STALE_MS: positiveInt.default(60000),
  /** How often idle workers look for deliveries scheduled for later (new ones arrive by notification). */
  HOOKS_POLL_INTERVAL_MS: positiveInt.default(2000),
  /** Attempts sent at once for one hook, and for all hooks of one account together, across every worker. */
  HOOKS_MAX_PER_HOOK: positiveInt.default(8),
  /** Failed attempts in a row (none delivered between them) that pause a hook until its next retry time. */
  HOOKS_BREAKER_FAILURES: positiveInt.default(5),
  /** How often finished and orphaned jobs are removed from the job queue (once across all nodes); 0 switches it off. */
  HOOKS_PRUNE_INTERVAL_MS: z.coerce.number().int().min(0).default(600_000),
  /** How long live events (GET /events) are kept for clients to resume or catch up (ISO 8601 duration of fixed length). */
  EVENTS_RETENTION: fixedDuration('P7D'),
  /** How often the jobs process removes events older than EVENTS_RETENTION (once across all nodes); 0 switches it off. */
  EVENTS_PRUNE_INTERVAL_MS: z.coerce.number().int().min(0).default(600_000),
  /** Event streams (GET /events as text/event-stream) one account may have open at once, across all processes and nodes. */
  EVENTS_MAX_STREAMS: z.coerce.number().int().min(1).max(4096).default(20),
  /** Pause between the rounds that number committed events, in a process with open event streams. */
  EVENTS_SEQUENCE_MS: positiveInt.default(20),
  /** How often an open event stream gets a heartbeat comment, so proxies do not take it for dead. */
  EVENTS_HEARTBEAT_MS: positiveInt.default(15_000),
  /** Event ids one read of GET /events looks at, at most: a filter that matches few events costs no more per read, and the reader goes on from there. */
  EVENTS_READ_SPAN: positiveInt.default(100_000),
});

export type Settings = z.output<typeof schema>;

class SettingsError extends Error {}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new SettingsError(`invalid setting ${lines.join('; ')}`);
  }
  const s = parsed.data;
  if ((s.TLS_CERT_FILE === undefined) !== (s.TLS_KEY_FILE === undefined)) {
    throw new SettingsError('invalid setting TLS_CERT_FILE/TLS_KEY_FILE: set both or neither');
  }
  if (s.HEADERS_TIMEOUT_MS > s.REQUEST_TIMEOUT_MS) {
    throw new SettingsError('invalid setting HEADERS_TIMEOUT_MS: must not be above REQUEST_TIMEOUT_MS');
  }
  if (/^(true|1|yes)$/.test(s.REDIS_CLUSTER) && s.REDIS_URL === undefined) {
    throw new SettingsError('invalid setting REDIS_CLUSTER: true needs REDIS_URL (a cluster node, or a comma-separated list of them)');
  }
  return s;
}

/** Where request counters and account-change messages live: one Redis, a Redis Cluster, or none. */
export type RedisTarget = { cluster: false; url: string } | { cluster: true; rootUrls: string[] };

/** The Redis the settings name (REDIS_URL, REDIS_CLUSTER), or undefined for counting in Postgres. */
export function redisTarget(s: Pick<Settings, 'REDIS_URL' | 'REDIS_CLUSTER'>): RedisTarget | undefined {
  const flag = s.REDIS_CLUSTER;
  const list = (v: string) =>
    v
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
  if (/^(false|0|no)$/.test(flag)) return s.REDIS_URL === undefined ? undefined : { cluster: false, url: s.REDIS_URL };
  if (/^(true|1|yes)$/.test(flag)) return s.REDIS_URL === undefined ? undefined : { cluster: true, rootUrls: list(s.REDIS_URL) };
  return { cluster: true, rootUrls: list(flag) };
}

/** Every setting's name; a test checks the settings table of docs/operations.md lists each one. */
export const settingNames = Object.keys(schema.shape) as (keyof Settings)[];
