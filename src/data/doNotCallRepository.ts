import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { defaultPhoneRegion } from '../config/platform';
import { LeadStatus, LeadStatusName, OPEN_LEAD_STATUSES } from '../domain/enums';
import { digitForms, toE164 } from '../domain/phoneNumber';
import type { DoNotCallEntry } from '../domain/doNotCall';
import { lowerCase } from '../domain/projectPatterns';
import { openCursor } from './cursorStream';
import type { ProjectScope } from './projectScope';
import { projectSelectedSql, projectUniqueIdSql } from './projectRepository';
import { recordLeadEvents } from './hookEvents';

/**
 * The do-not-call lists (docs/decisions.md, Do-not-call). The customer's list holds entries
 * for one project or, without a project, for every project; the global list (`lcm dnc
 * --global`) holds entries for every project. Numbers are E.164; an entry past its expiry time
 * counts as absent everywhere.
 */

export type DoNotCallStatus = Extract<LeadStatusName, 'DoNotCall' | 'GlobalDoNotCall'>;

const OPEN_NUMBERS = OPEN_LEAD_STATUSES.map((s) => LeadStatus.toNumber(s));

// ---- is a number listed (imports) ---------------------------------------------------------------

// $1 numbers (E.164, one per position, null for none), $2 the campaign, $3 now. One row per position.
const LISTED_SQL = `
  select n.pos, bool_or(d.global) as global, count(d.id) > 0 as listed
    from unnest(?::text[]) with ordinality as n(phone_number, pos)
    left join do_not_call_numbers d
      on d.phone_number = n.phone_number
     and (d.expires_time is null or d.expires_time > ?)
     and (d.global or d.project is null or lower(d.project) = (select lower(c.project) from campaigns c where c.id = ?))
   group by n.pos
   order by n.pos`;

/**
 * A listing and an import must not pass each other (the import checking before the listing
 * commits, the listing looking for leads before the import commits): both take one
 * transaction-level advisory lock first, imports a shared one (they never wait for each other),
 * listings an exclusive one (a listing waits for the imports in flight, and new imports wait
 * for the listing; listings are rare and short).
 */
async function lockLists(trx: Knex | Knex.Transaction, mode: 'shared' | 'exclusive'): Promise<void> {
  const lock = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await trx.raw(`select ${lock}(hashtextextended('lcm do-not-call lists', 0))`);
}

// $1 the campaign, $2 now: whether any live entry can apply to the campaign's leads.
const ANY_ENTRY_SQL = `
  select exists (
    select 1 from do_not_call_numbers d
     where (d.expires_time is null or d.expires_time > ?)
       and (d.global or d.project is null or lower(d.project) = (select lower(c.project) from campaigns c where c.id = ?))) as any`;

/**
 * For each lead phone number (as imported; null for a lead without one), the status a new lead
 * of this campaign with that number gets from the lists: `GlobalDoNotCall` when the global list
 * has it, `DoNotCall` when the customer's list has it for the campaign's project or for every
 * project, undefined when it is not listed (or cannot be read as a number). In a transaction
 * (where the lead is then inserted) the lists are locked against a concurrent listing first.
 */
export async function doNotCallStatuses(
  db: Knex | Knex.Transaction,
  campaignId: number,
  phoneNumbers: readonly (string | null)[],
  now: Date,
): Promise<(DoNotCallStatus | undefined)[]> {
  const none = () => phoneNumbers.map(() => undefined);
  if (phoneNumbers.every((p) => p === null)) return none();
  if (db.isTransaction) await lockLists(db, 'shared');
  // Most campaigns have no entries at all: then no number needs reading (a bulk import's batch costs one query).
  const { rows: any } = await db.raw<{ rows: { any: boolean }[] }>(ANY_ENTRY_SQL, [now, campaignId]);
  if (!any[0]!.any) return none();
  const region = defaultPhoneRegion();
  const numbers = phoneNumbers.map((p) => (p === null ? null : (toE164(p, region) ?? null)));
  if (numbers.every((n) => n === null)) return none();
  const { rows } = await db.raw<{ rows: { global: boolean | null; listed: boolean }[] }>(LISTED_SQL, [
    numbers as string[],
    now,
    campaignId,
  ]);
  return rows.map((r) => (!r.listed ? undefined : r.global ? 'GlobalDoNotCall' : 'DoNotCall'));
}

// ---- the lists ------------------------------------------------------------------------------------

export interface NewDoNotCallEntry {
  /** E.164. */
  phoneNumber: string;
  /** The project's name as its campaigns spell it; absent for every project. */
  project?: string;
  note?: string;
  expiresTime?: Date;
}

/** Which list, and on whose behalf: the customer's list is seen and changed within an account's projects. */
export type DoNotCallList = { global: true } | { global: false; scope: ProjectScope };

const ENTRY_COLUMNS = `d.phone_number as "phoneNumber", d.project, case when d.project is null then null else ${projectUniqueIdSql('d.project')} end as "projectUniqueId",
  d.note, d.expires_time as "expiresTime", d.created_time as "createdTime", d.modified_time as "modifiedTime"`;

/** A lead a listing moved, for its lead.statusChanged event. */
interface MovedLead {
  leadId: number;
  previousStatus: LeadStatusName;
}

export interface ListedNumbers {
  /** The stored entries, each with how many open leads it moved. */
  entries: (DoNotCallEntry & { movedLeads: number })[];
  /** The open leads moved to DoNotCall (GlobalDoNotCall for the global list). */
  moved: MovedLead[];
}

/**
 * Adds entries to a list (an entry already there gets the new note and expiry) and moves every
 * open lead with one of the numbers to DoNotCall (GlobalDoNotCall): for the customer's list the
 * leads of the entry's project, or of every project of the account's scope; for the global list
 * every lead. Runs in the caller's transaction and records each moved lead's lead.statusChanged
 * hook event in it, so the moves and their events commit together.
 */
export async function addDoNotCallNumbers(
  trx: Knex.Transaction,
  list: DoNotCallList,
  entries: readonly NewDoNotCallEntry[],
  change: { now: Date; userId?: number },
): Promise<ListedNumbers> {
  await lockLists(trx, 'exclusive');
  const stored: DoNotCallEntry[] = [];
  for (const e of entries) {
    const { rows } = await trx.raw<{ rows: DoNotCallEntry[] }>(
      `insert into do_not_call_numbers as d (phone_number, global, project, note, expires_time, created_time, modified_time)
       values (?, ?, ?, ?, ?, ?, ?)
       on conflict (phone_number, global, lower(coalesce(project, '')))
       do update set note = excluded.note, expires_time = excluded.expires_time, modified_time = excluded.modified_time
       returning ${ENTRY_COLUMNS}`,
      [e.phoneNumber, list.global, list.global ? null : (e.project ?? null), e.note ?? null, e.expiresTime ?? null, change.now, change.now],
    );
    stored.push(rows[0]!);
  }
  const { moved, perEntry } = await moveOpenLeads(trx, list, entries, change);
  await recordLeadEvents(trx, 'lead.statusChanged', moved, change.now);
  return { entries: stored.map((e, i) => ({ ...e, movedLeads: perEntry[i]! })), moved };
}

async function moveOpenLeads(
  trx: Knex.Transaction,
  list: DoNotCallList,
  entries: readonly NewDoNotCallEntry[],
  change: { now: Date; userId?: number },
): Promise<{ moved: MovedLead[]; perEntry: number[] }> {
  const perEntry = entries.map(() => 0);
  if (entries.length === 0) return { moved: [], perEntry };
  const forms = [...new Set(entries.flatMap((e) => digitForms(e.phoneNumber)))];
  const scoped = list.global ? '' : 'and lower(c.project) like any(?::text[])';
  const { rows } = await trx.raw<{ rows: { id: number; phone_number: string; status: number; project: string }[] }>(
    `select l.id, l.phone_number, l.status, lower(c.project) as project
       from leads l join campaigns c on c.id = l.campaign_id
      where regexp_replace(l.phone_number, '[^0-9]', '', 'g') = any(?::text[])
        and l.status in (${OPEN_NUMBERS.join(', ')}) ${scoped}
      order by l.id
        for update of l`,
    list.global ? [forms] : [forms, list.scope.likePatterns],
  );
  const region = defaultPhoneRegion();
  const moved: MovedLead[] = [];
  for (const r of rows) {
    const number = toE164(r.phone_number, region);
    // A lead matched by a project's entry and by the every-project entry counts for the first.
    const hit = entries.findIndex((e) => e.phoneNumber === number && (e.project === undefined || lowerCase(e.project) === r.project));
    if (hit >= 0) {
      perEntry[hit]!++;
      moved.push({ leadId: r.id, previousStatus: LeadStatus.toName(r.status) });
    }
  }
  if (moved.length > 0) {
    const target = LeadStatus.toNumber(list.global ? 'GlobalDoNotCall' : 'DoNotCall');
    await trx.raw(
      `update leads set status = ?, status_changed_time = ?, last_modified_time = ?,
              last_modified_by_user_id = coalesce(?, last_modified_by_user_id)
        where id = any(?::bigint[])`,
      [target, change.now, change.now, change.userId ?? null, moved.map((m) => m.leadId)],
    );
  }
  return { moved, perEntry };
}

/**
 * Removes a number from a list: the global entry, or the customer entries the account can see
 * (of its projects and of every project), narrowed to one project when given. Leads keep their
 * status. Answers the number of entries removed.
 */
export async function removeDoNotCallNumber(
  db: Knex | Knex.Transaction,
  list: DoNotCallList,
  phoneNumber: string,
  project?: string,
): Promise<number> {
  const query = db('do_not_call_numbers').where({ phone_number: phoneNumber, global: list.global });
  if (!list.global) {
    const scope = list.scope;
    if (project !== undefined) query.whereRaw('lower(project) = lower(?)', [project]);
    else
      query.where((q) => {
        q.whereNull('project').orWhereRaw('lower(project) like any(?::text[])', [scope.likePatterns]);
      });
  }
  return query.delete();
}

export interface DoNotCallFilter {
  /** Project patterns or project unique ids: entries of those projects only. */
  projects?: string[];
  modifiedFrom?: Date;
  /** Entries expired at this time are left out. */
  now: Date;
}

/** The query of a list's entries the caller may see, oldest change first. */
function entriesQuery(db: Knex, list: DoNotCallList, filter: DoNotCallFilter): Knex.Raw {
  const parts = ['d.global = ?', '(d.expires_time is null or d.expires_time > ?)'];
  const bindings: Knex.RawBinding[] = [list.global, filter.now];
  if (!list.global) {
    parts.push('(d.project is null or lower(d.project) like any(?::text[]))');
    bindings.push(list.scope.likePatterns);
  }
  if (filter.projects) {
    const selected = projectSelectedSql('d.project', filter.projects);
    parts.push(selected.sql);
    bindings.push(...selected.bindings);
  }
  if (filter.modifiedFrom) {
    parts.push('d.modified_time >= ?');
    bindings.push(filter.modifiedFrom);
  }
  return db.raw(`select ${ENTRY_COLUMNS} from do_not_call_numbers d where ${parts.join(' and ')} order by d.modified_time, d.id`, bindings);
}

/** A list's entries as a cursor stream of DoNotCallEntry. */
export function openDoNotCallCursor(
  db: Knex,
  list: DoNotCallList,
  filter: DoNotCallFilter,
  options: { batchSize?: number; signal?: AbortSignal } = {},
): Promise<Readable> {
  return openCursor(db, entriesQuery(db, list, filter), options);
}
