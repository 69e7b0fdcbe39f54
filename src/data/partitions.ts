import type { Knex } from 'knex';
import type { Settings } from '../config/settings';

/**
 * Monthly range partitions of calls, recordings and ready periods (UTC months; the migration
 * 20261123300001 made the tables partitioned). Partitions are named `<table>_pYYYY_MM`; each
 * table also has a `<table>_default` partition that takes rows of months without a partition
 * of their own (a historical load, a call dated far ahead) until maintenance moves them out.
 *
 * Recordings are partitioned on their call's start time, so a call and its recordings always
 * share a month: the two tables are created, split and dropped together, calls first on the
 * way in and recordings first on the way out (recordings reference calls).
 *
 * The account's request log is partitioned by UTC day (`request_log_pYYYY_MM_DD`, a week ahead)
 * and kept REQUEST_LOG_RETENTION: old days are dropped whole, never deleted row by row.
 *
 * Every change runs in a short transaction with a lock timeout: attaching a partition needs a
 * brief lock on the default partition and the referenced tables, and waiting behind a long
 * export must not queue everyone else behind the maintenance. A timed-out step is reported
 * and done at the next run.
 */

interface Member {
  table: string;
  column: string;
}

/** Tables partitioned together, parents first. */
interface Family {
  members: [Member, ...Member[]];
  /** The registry of unique ids of the first member (kept by triggers on it). */
  registry: { table: string; column: string };
}

const PARTITION_FAMILIES: Family[] = [
  {
    members: [
      { table: 'calls', column: 'start_time' },
      { table: 'recordings', column: 'call_start_time' },
    ],
    registry: { table: 'call_keys', column: 'start_time' },
  },
  {
    members: [{ table: 'ready_periods', column: 'end_time' }],
    registry: { table: 'ready_period_keys', column: 'end_time' },
  },
];

/** The first instant of the UTC month of `d`. */
function monthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

function addMonths(month: Date, n: number): Date {
  return new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + n, 1));
}

export function partitionName(table: string, month: Date): string {
  return `${table}_p${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

const NAME = /_p(\d{4})_(\d{2})$/;

/** The month partitions of `table` (by name), oldest first. */
export async function listMonthPartitions(db: Knex, table: string): Promise<{ name: string; month: Date }[]> {
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'`,
    [table],
  );
  return rows
    .map((r) => {
      const m = NAME.exec(r.name);
      return m ? { name: r.name, month: new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, 1)) } : undefined;
    })
    .filter((p) => p !== undefined)
    .sort((a, b) => a.month.getTime() - b.month.getTime());
}

async function exists(db: Knex | Knex.Transaction, name: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: { ok: boolean }[] }>('select to_regclass(?) is not null as ok', [name]);
  return rows[0]!.ok;
}

/** UTC months (first instants) that have rows in a family's default partitions. */
async function monthsInDefault(db: Knex, family: Family): Promise<Date[]> {
  const parts = family.members.map(
    (m) => `select distinct date_trunc('month', ${m.column} at time zone 'UTC') as m from ${m.table}_default`,
  );
  const { rows } = await db.raw<{ rows: { m: string }[] }>(
    `select to_char(m, 'YYYY-MM-DD') as m from (${parts.join(' union ')}) q order by 1`,
  );
  return rows.map((r) => new Date(`${r.m}T00:00:00Z`));
}

export interface MaintenanceReport {
  /** Partitions created (empty, or filled with the rows of their month from the default one). */
  created: string[];
  /** Rows moved out of default partitions. */
  moved: number;
  /** Partitions dropped by retention. */
  dropped: string[];
  /** Request log days that got their account index, having ended. */
  indexed: string[];
  /** Steps that could not get their locks in time; they are retried at the next run. */
  postponed: string[];
}

const emptyReport = (): MaintenanceReport => ({ created: [], moved: 0, dropped: [], indexed: [], postponed: [] });

const LOCK_NOT_AVAILABLE = '55P03';

async function step(report: MaintenanceReport, what: string, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) report.postponed.push(what);
    else throw err;
  }
}

/**
 * Makes sure `month` has a partition in every table of the family. Rows of that month waiting
 * in the default partitions move into the new ones in the same transaction, so the rows never
 * leave their table from a reader's point of view.
 */
async function ensureMonth(db: Knex, family: Family, month: Date, lockTimeoutMs: number, report: MaintenanceReport): Promise<void> {
  const missing: Member[] = [];
  for (const m of family.members) if (!(await exists(db, partitionName(m.table, month)))) missing.push(m);
  if (missing.length === 0) return;
  const from = month.toISOString();
  const to = addMonths(month, 1).toISOString();
  await step(report, `create ${missing.map((m) => partitionName(m.table, month)).join(', ')}`, () =>
    db.transaction(async (trx) => {
      await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
      const created: string[] = [];
      let moved = 0;
      for (const m of missing) {
        const name = partitionName(m.table, month);
        await trx.raw(`create table ${name} (like ${m.table} including defaults including constraints)`);
        const r = await trx.raw<{ rowCount: number | null }>(
          `insert into ${name} select * from ${m.table}_default where ${m.column} >= ? and ${m.column} < ?`,
          [from, to],
        );
        moved += r.rowCount ?? 0;
        created.push(name);
      }
      // Children leave the default partitions first (they reference their parents' rows).
      for (const m of [...missing].reverse()) {
        await trx.raw(`delete from ${m.table}_default where ${m.column} >= ? and ${m.column} < ?`, [from, to]);
      }
      for (const m of missing) {
        const name = partitionName(m.table, month);
        // DDL takes no bind parameters; the bounds are ISO instants made here.
        await trx.raw(`alter table ${m.table} attach partition ${name} for values from ('${from}') to ('${to}')`);
        // calls_ou2_time_p2026_11 rather than calls_p2026_11_ou2_id_start_time_unique_id_idx.
        await trx.raw('select name_partition_indexes(?::regclass)', [name]);
      }
      report.created.push(...created);
      report.moved += moved;
    }),
  );
}

/** Creates the month partitions of `[from, to]` (months, inclusive) in every partitioned table. */
export async function ensureMonthPartitions(
  db: Knex,
  from: Date,
  to: Date,
  options: { lockTimeoutMs?: number } = {},
): Promise<MaintenanceReport> {
  const report = emptyReport();
  const last = monthStart(to);
  for (const family of PARTITION_FAMILIES) {
    for (let m = monthStart(from); m <= last; m = addMonths(m, 1)) {
      await ensureMonth(db, family, m, options.lockTimeoutMs ?? 5000, report);
    }
  }
  return report;
}

/**
 * Drops whole months before `cutoff` (a month start): partitions older than it and, through
 * the parent so the registries and recordings follow, rows of those months left in the
 * default partitions.
 */
async function dropBefore(db: Knex, family: Family, cutoff: Date, lockTimeoutMs: number, report: MaintenanceReport): Promise<void> {
  const first = family.members[0];
  const old = (await listMonthPartitions(db, first.table)).filter((p) => p.month < cutoff);
  for (const { month } of old) {
    const names = family.members.map((m) => partitionName(m.table, month));
    await step(report, `drop ${names.join(', ')}`, () =>
      db.transaction(async (trx) => {
        await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
        // Dropping a partition fires no trigger: the month's unique ids are released here.
        await trx.raw(`delete from ${family.registry.table} where ${family.registry.column} >= ? and ${family.registry.column} < ?`, [
          month.toISOString(),
          addMonths(month, 1).toISOString(),
        ]);
        for (const m of [...family.members].reverse()) {
          const name = partitionName(m.table, month);
          if (!(await exists(trx, name))) continue;
          await trx.raw(`alter table ${m.table} detach partition ${name}`);
          await trx.raw(`drop table ${name}`);
        }
        report.dropped.push(...names);
      }),
    );
  }
  await step(report, `delete rows before ${cutoff.toISOString()} from ${first.table}_default`, () =>
    db.transaction(async (trx) => {
      await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
      await trx.raw(`delete from ${first.table} where ${first.column} < ?`, [cutoff.toISOString()]);
    }),
  );
}

// ---- the request log: UTC days ----------------------------------------------------------------

/** The request log's days (db/migrations/20261222000002_request_log.ts): `request_log_pYYYY_MM_DD`. */
const REQUEST_LOG = 'request_log';
const DAY_MS = 86_400_000;
/** Days after today that get their request log partition ahead of time. */
const REQUEST_LOG_DAYS_AHEAD = 7;

const dayStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
const addDays = (day: Date, n: number) => new Date(day.getTime() + n * DAY_MS);

function dayPartitionName(table: string, day: Date): string {
  return `${table}_p${day.toISOString().slice(0, 10).replace(/-/g, '_')}`;
}

const DAY_NAME = /_p(\d{4})_(\d{2})_(\d{2})$/;

/** The day partitions of `table` (by name), oldest first. */
export async function listDayPartitions(db: Knex, table: string): Promise<{ name: string; day: Date }[]> {
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass and pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'`,
    [table],
  );
  return rows
    .map((r) => {
      const m = DAY_NAME.exec(r.name);
      return m ? { name: r.name, day: new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) } : undefined;
    })
    .filter((p) => p !== undefined)
    .sort((a, b) => a.day.getTime() - b.day.getTime());
}

/** A day partition of the request log, with the day's rows waiting in the default partition moved into it. */
async function ensureRequestLogDay(db: Knex, day: Date, lockTimeoutMs: number, report: MaintenanceReport): Promise<void> {
  const name = dayPartitionName(REQUEST_LOG, day);
  if (await exists(db, name)) return;
  const from = day.toISOString();
  const to = addDays(day, 1).toISOString();
  await step(report, `create ${name}`, () =>
    db.transaction(async (trx) => {
      await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
      await trx.raw(`create table ${name} (like ${REQUEST_LOG} including defaults including constraints)`);
      const r = await trx.raw<{ rowCount: number | null }>(
        `with moved as (delete from ${REQUEST_LOG}_default where time >= ? and time < ? returning *) insert into ${name} select * from moved`,
        [from, to],
      );
      // DDL takes no bind parameters; the bounds are ISO instants made here.
      await trx.raw(`alter table ${REQUEST_LOG} attach partition ${name} for values from ('${from}') to ('${to}')`);
      report.created.push(name);
      report.moved += r.rowCount ?? 0;
    }),
  );
}

/**
 * The account index of a request log day that has ended
 * (db/migrations/20261228000001_request_log_day_indexes.ts), built in one pass. It holds off only
 * writes to that day, stragglers at most; a write holding the day's lock postpones it to the next
 * run.
 */
async function indexRequestLogDay(db: Knex, name: string, lockTimeoutMs: number, report: MaintenanceReport): Promise<void> {
  const index = `${name}_account_time`;
  if (await exists(db, index)) return;
  await step(report, `index ${name}`, () =>
    db.transaction(async (trx) => {
      await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
      await trx.raw(`create index ${index} on ${name} (account_id, time)`);
      report.indexed.push(name);
    }),
  );
}

/**
 * The request log's partitions from yesterday to a week ahead, the days that have ended indexed
 * by account and, with a retention, whole days that ended before `now - retentionMs` dropped (and
 * such rows left in the default partition deleted): what is kept is never less than the retention.
 */
export async function maintainRequestLog(
  db: Knex,
  now: Date,
  retentionMs: number | undefined,
  lockTimeoutMs = 5000,
  report: MaintenanceReport = emptyReport(),
): Promise<MaintenanceReport> {
  const today = dayStart(now);
  for (let d = addDays(today, -1); d <= addDays(today, REQUEST_LOG_DAYS_AHEAD); d = addDays(d, 1)) {
    await ensureRequestLogDay(db, d, lockTimeoutMs, report);
  }
  const cutoff = retentionMs === undefined ? undefined : dayStart(new Date(now.getTime() - retentionMs));
  for (const { name, day } of await listDayPartitions(db, REQUEST_LOG)) {
    if (cutoff === undefined || day >= cutoff) {
      if (day < today) await indexRequestLogDay(db, name, lockTimeoutMs, report);
      continue;
    }
    await step(report, `drop ${name}`, () =>
      db.transaction(async (trx) => {
        await trx.raw(`select set_config('lock_timeout', ?, true)`, [`${lockTimeoutMs}ms`]);
        await trx.raw(`alter table ${REQUEST_LOG} detach partition ${name}`);
        await trx.raw(`drop table ${name}`);
        report.dropped.push(name);
      }),
    );
  }
  if (cutoff === undefined) return report;
  await step(report, `delete rows before ${cutoff.toISOString()} from ${REQUEST_LOG}_default`, async () => {
    await db.raw(`delete from ${REQUEST_LOG}_default where time < ?`, [cutoff.toISOString()]);
  });
  return report;
}

export interface MaintenanceOptions {
  now: Date;
  /** Months after the current one that get a partition ahead of time. */
  monthsAhead: number;
  /** Keep this many whole months before the current one; older ones are dropped. Unset = keep all. */
  retentionMonths?: number;
  /** Keep the request log this long (ms); older whole days are dropped. Unset = keep all. */
  requestLogRetentionMs?: number;
  lockTimeoutMs?: number;
}

/**
 * One maintenance pass: partitions from last month to `monthsAhead` months ahead, rows waiting
 * in default partitions moved into months of their own, and (when set) retention.
 */
export async function maintainPartitions(db: Knex, options: MaintenanceOptions): Promise<MaintenanceReport> {
  const lockTimeoutMs = options.lockTimeoutMs ?? 5000;
  const current = monthStart(options.now);
  const report = await ensureMonthPartitions(db, addMonths(current, -1), addMonths(current, options.monthsAhead), { lockTimeoutMs });
  const cutoff = options.retentionMonths === undefined ? undefined : addMonths(current, -options.retentionMonths);
  for (const family of PARTITION_FAMILIES) {
    for (const month of await monthsInDefault(db, family)) {
      // Rows that retention will delete anyway do not get a partition first.
      if (cutoff !== undefined && month < cutoff) continue;
      await ensureMonth(db, family, month, lockTimeoutMs, report);
    }
    if (cutoff !== undefined) await dropBefore(db, family, cutoff, lockTimeoutMs, report);
  }
  await maintainRequestLog(db, options.now, options.requestLogRetentionMs, lockTimeoutMs, report);
  return report;
}

/** The maintenance pass the settings ask for, as of `now` (`lcm maintain` and the server job). */
export function maintainAsConfigured(
  db: Knex,
  settings: Pick<Settings, 'PARTITION_MONTHS_AHEAD' | 'RETENTION_MONTHS' | 'REQUEST_LOG_RETENTION'>,
  now = new Date(),
): Promise<MaintenanceReport> {
  return maintainPartitions(db, {
    now,
    monthsAhead: settings.PARTITION_MONTHS_AHEAD,
    retentionMonths: settings.RETENTION_MONTHS,
    requestLogRetentionMs: settings.REQUEST_LOG_RETENTION,
  });
}

/** Partitions from last month to the months ahead the settings ask for (what `lcm migrate` adds). */
export function ensurePartitionsAhead(
  db: Knex,
  settings: Pick<Settings, 'PARTITION_MONTHS_AHEAD'>,
  now = new Date(),
): Promise<MaintenanceReport> {
  const current = monthStart(now);
  return ensureMonthPartitions(db, addMonths(current, -1), addMonths(current, settings.PARTITION_MONTHS_AHEAD));
}

/** One line for a command's output or a log. */
export function describeMaintenance(report: MaintenanceReport): string {
  const parts = [
    report.created.length ? `created ${report.created.join(', ')}` : 'no partition to create',
    ...(report.moved ? [`moved ${report.moved} rows out of default partitions`] : []),
    ...(report.dropped.length ? [`dropped ${report.dropped.join(', ')}`] : []),
    ...(report.indexed.length ? [`indexed the ended days ${report.indexed.join(', ')}`] : []),
    ...(report.postponed.length ? [`postponed (locks busy; retried at the next run): ${report.postponed.join('; ')}`] : []),
  ];
  return parts.join('; ');
}
