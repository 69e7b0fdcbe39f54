import type { Knex } from 'knex';
import type { EntryAccessName } from '../domain/enums';
import { LeadDataError, leadDataMapper } from '../domain/leadData';
import { duplicateUpdate, ImportRefused, poolNameAt } from './leadImportRules';
import { DuplicateLookup, findImportCampaign, ImportCampaign, insertLead, isCampaignVisible } from '../data/leadRepository';
import { duplicateField, duplicateMessage, duplicateRule, DuplicateRule, DuplicateSettings, duplicateSearch } from '../domain/duplicates';
import type { MappedLeadData } from '../domain/leadData';
import { requestHash, runIdempotent } from '../data/idempotency';
import type { ProjectScope } from '../data/projectScope';
import type { DoNotCallStatus } from '../data/doNotCallRepository';

export { ImportRefused } from './leadImportRules';

/**
 * Importing one lead (docs/decisions.md, Leads): campaign → project check → lead definition →
 * pool → insert, optionally under an Idempotency-Key. The project check is SQL: in the
 * campaign lookup, or, when the campaign came from the short-lived cache, in the insert
 * statement itself (and in a query of its own before a validation answer).
 */

export interface ImportLeadRequest {
  campaignCode: string;
  data: Record<string, string>;
  /** The pool's name; without one the lead goes to `(auto) yyyy-MM-dd` of the platform date. */
  pool?: string;
  /** The request's duplicate parameters; the campaign's defaults fill in the rest. */
  duplicates?: DuplicateSettings;
}

/**
 * The answer of an import: stored, replayed and sent as is. A validation failure is an answer
 * too. `status` is there when the lead is not New: its number is on a do-not-call list.
 */
type ImportLeadAnswer =
  | { success: true; uniqueId: string; pool: string; status?: DoNotCallStatus }
  /** A duplicate skipped (`duplicate`) or updated (`updated`): the stored lead's unique id. */
  | { success: true; uniqueId: string; duplicate: true }
  | { success: true; uniqueId: string; updated: true }
  | { success: false; errors: LeadDataError[]; duplicateOf?: string };

export interface ImportLeadDeps {
  db: Knex;
  /** The moment of insert decides the automatic pool: an upload across midnight lands in two pools. */
  clock: () => Date;
  zone: string;
}

export interface Importer {
  /** The account's id (idempotency keys are per account). */
  accountId: number;
  /** The platform user the account is linked to: the lead's uploader. */
  userId: number;
  scope: ProjectScope;
  /** Fields above it are treated as fields the lead definition does not have. */
  entryAccess: EntryAccessName;
}

export type ImportLeadOutcome =
  | { kind: 'answered'; answer: ImportLeadAnswer; replayed: boolean }
  /** The idempotency key was first used with another request. */
  | { kind: 'key_reused' };

/**
 * Imports one lead. With an idempotency key, a retry of the same request returns the first
 * answer (`replayed`) without a second lead, and the same key with another request is
 * `key_reused`. Throws ImportRefused for an unknown campaign or one outside the account's
 * projects.
 */
export async function importLead(
  deps: ImportLeadDeps,
  importer: Importer,
  request: ImportLeadRequest,
  idempotencyKey?: string,
): Promise<ImportLeadOutcome> {
  if (idempotencyKey === undefined) {
    // No transaction around it: the insert is one statement (insertLead) that commits the lead
    // with its lead.created event, and holds the do-not-call lock until then.
    const answer = await importOnce(deps.db, deps, importer, request);
    return { kind: 'answered', answer, replayed: false };
  }
  const outcome = await runIdempotent(deps.db, importer.accountId, idempotencyKey, requestHash(request), async (trx) => ({
    status: 200,
    body: await importOnce(trx, deps, importer, request),
  }));
  if (outcome.kind === 'mismatch') return { kind: 'key_reused' };
  return { kind: 'answered', answer: inAnswerOrder(outcome.answer.body as ImportLeadAnswer), replayed: outcome.kind === 'replayed' };
}

/** The properties of an answer in the order a fresh answer writes them. */
const ANSWER_ORDER: readonly string[] = ['success', 'uniqueId', 'pool', 'status', 'duplicate', 'updated', 'duplicateOf', 'errors'];

/** Where a property goes: its place in ANSWER_ORDER, any other after those. */
const answerRank = (name: string): number => {
  const i = ANSWER_ORDER.indexOf(name);
  return i < 0 ? ANSWER_ORDER.length : i;
};

/**
 * A kept answer with its properties in the order of the first: the key keeps it as jsonb, which
 * orders an object's keys its own way, and a retry gets the first answer byte for byte. A
 * property the order does not list is kept, after the listed ones.
 */
function inAnswerOrder(kept: ImportLeadAnswer): ImportLeadAnswer {
  const entries = Object.entries(kept as Record<string, unknown>).filter(([, value]) => value !== undefined);
  return Object.fromEntries(entries.sort(([a], [b]) => answerRank(a) - answerRank(b))) as ImportLeadAnswer;
}

async function importOnce(
  db: Knex | Knex.Transaction,
  deps: ImportLeadDeps,
  importer: Importer,
  request: ImportLeadRequest,
): Promise<ImportLeadAnswer> {
  const { scope } = importer;
  const found = await findImportCampaign(db, request.campaignCode, scope);
  if (!found) throw new ImportRefused('unknown_campaign', request.campaignCode);
  const { campaign } = found;
  if (found.visible === false) throw new ImportRefused('campaign_forbidden', campaign.code);
  const mapped = leadDataMapper(campaign.fields, deps.zone, importer.entryAccess)(request.data);
  if (mapped.errors.length > 0) {
    if (found.visible === undefined && !(await isCampaignVisible(db, campaign.id, scope))) {
      throw new ImportRefused('campaign_forbidden', campaign.code);
    }
    return { success: false, errors: mapped.errors };
  }
  const now = deps.clock();
  const pool = poolNameAt(request.pool, now, deps.zone);
  const rule = duplicateRule(campaign.duplicates, request.duplicates ?? {});
  const inserted = await insertLead(
    db,
    {
      campaignId: campaign.id,
      poolName: pool,
      data: mapped.data,
      phoneNumber: mapped.phoneNumber,
      externalKey: mapped.externalKey,
      now,
      userId: importer.userId,
      ...duplicateLookup(rule, campaign, mapped, { now, zone: deps.zone, entryAccess: importer.entryAccess }),
    },
    scope,
  );
  if (inserted.kind === 'forbidden') throw new ImportRefused('campaign_forbidden', campaign.code);
  if (inserted.kind === 'unknown_campaign') {
    // The cached campaign was removed meanwhile; a fresh lookup decides.
    const fresh = await findImportCampaign(db, request.campaignCode, scope, { fresh: true });
    if (!fresh) throw new ImportRefused('unknown_campaign', request.campaignCode);
    return importOnce(db, deps, importer, request);
  }
  if (inserted.kind === 'duplicate') {
    if (inserted.updated) return { success: true, uniqueId: inserted.uniqueId, updated: true };
    if (rule?.onDuplicate === 'Skip') {
      return { success: true, uniqueId: inserted.uniqueId, duplicate: true };
    }
    return {
      success: false,
      duplicateOf: inserted.uniqueId,
      errors: [{ field: duplicateField(inserted.matched), message: duplicateMessage(inserted.uniqueId) }],
    };
  }
  const listed = inserted.status === 'DoNotCall' || inserted.status === 'GlobalDoNotCall' ? inserted.status : undefined;
  return { success: true, uniqueId: inserted.uniqueId, pool, ...(listed ? { status: listed } : {}) };
}

/** The check the import function runs for this rule; none when no check runs or the lead has no key to check. */
function duplicateLookup(
  rule: DuplicateRule | undefined,
  campaign: ImportCampaign,
  mapped: MappedLeadData,
  { now, zone, entryAccess }: { now: Date; zone: string; entryAccess: EntryAccessName },
): { duplicateCheck?: DuplicateLookup } {
  if (rule === undefined) return {};
  const byPhone = rule.key !== 'ExternalKey' && mapped.phoneNumber !== null;
  const byExternalKey = rule.key !== 'Phone' && mapped.externalKey !== null;
  if (!byPhone && !byExternalKey) return {};
  return {
    duplicateCheck: {
      ...duplicateSearch(rule, now, zone),
      byPhone,
      byExternalKey,
      ...(rule.onDuplicate === 'Update' ? { update: { ...duplicateUpdate(campaign, mapped), entryAccess } } : {}),
    },
  };
}
