import type { DuplicateRule } from '../domain/duplicates';
import type { DuplicateUpdate, RowKeys, StoredDuplicate } from '../data/duplicateLookup';
import type { ImportCampaign } from '../data/leadRepository';
import { duplicateUpdate } from './leadImportRules';

/**
 * What the duplicate check decides for each valid row of a bulk import's batch (docs/decisions.md,
 * Duplicates on import): a row duplicates a stored lead (found by the lookup) or an earlier row
 * of the same batch that is being stored (rows of earlier batches are stored by then, so the
 * lookup finds them). Update merges into the stored lead, or into the earlier row before it
 * is inserted.
 */

export interface DuplicateCandidate {
  uniqueId: string;
  data: Record<string, string>;
  phoneNumber: string | null;
  phoneE164: string | null;
  externalKey: string | null;
}

export type RowDecision =
  | { kind: 'insert' }
  /** Reject or Skip: nothing stored for the row. */
  | { kind: 'duplicate'; uniqueId: string; matched: 'phone' | 'externalKey' }
  | { kind: 'updated'; uniqueId: string };

/** The keys the rule compares for a row. */
export function rowKeys(rule: DuplicateRule, row: Pick<DuplicateCandidate, 'phoneE164' | 'externalKey'>): RowKeys {
  return {
    phoneE164: rule.key === 'ExternalKey' ? null : row.phoneE164,
    externalKey: rule.key === 'Phone' ? null : row.externalKey,
  };
}

/** The new values an Update writes: editable fields, and the phone and external key when their fields are editable. */
function updateOf(campaign: ImportCampaign, row: DuplicateCandidate): Omit<DuplicateUpdate, 'leadId'> {
  const update = duplicateUpdate(campaign, row);
  return { ...update, phoneE164: update.phoneNumber !== null ? row.phoneE164 : null };
}

/**
 * Decides each row in order. Rows decided `insert` may have had later rows' updates merged into
 * them (their data, phone and external key changed in place). `updates`: one per stored lead,
 * later rows' values over earlier ones'. A key an Update gives a lead (a new number merged into
 * a stored lead or an earlier row) is seen by the later rows, as a later import would see it: the
 * lookup ran before the batch's updates, so such a row would otherwise be stored as a second lead
 * of that person.
 */
export function decideBatch(
  rule: DuplicateRule,
  campaign: ImportCampaign,
  rows: DuplicateCandidate[],
  stored: (StoredDuplicate | undefined)[],
): { decisions: RowDecision[]; updates: DuplicateUpdate[] } {
  const firstByKey = new Map<string, DuplicateCandidate>();
  /** Stored leads by the keys this batch's updates gave them. */
  const storedByKey = new Map<string, StoredDuplicate>();
  const updates = new Map<number, DuplicateUpdate>();
  const keysOf = (keys: RowKeys) => [
    ...(keys.phoneE164 !== null ? [`p ${keys.phoneE164}`] : []),
    ...(keys.externalKey !== null ? [`x ${keys.externalKey}`] : []),
  ];
  const storedMatch = (keys: RowKeys): StoredDuplicate | undefined => {
    const byPhone = keys.phoneE164 !== null ? storedByKey.get(`p ${keys.phoneE164}`) : undefined;
    if (byPhone) return { ...byPhone, matched: 'phone' };
    const byKey = keys.externalKey !== null ? storedByKey.get(`x ${keys.externalKey}`) : undefined;
    return byKey ? { ...byKey, matched: 'externalKey' } : undefined;
  };
  const decisions = rows.map((row, i): RowDecision => {
    const keys = rowKeys(rule, row);
    const found = stored[i] ?? storedMatch(keys);
    if (found !== undefined) {
      if (rule.onDuplicate !== 'Update') return { kind: 'duplicate', uniqueId: found.uniqueId, matched: found.matched };
      const next = updateOf(campaign, row);
      const prev = updates.get(found.id);
      updates.set(found.id, {
        leadId: found.id,
        patch: { ...prev?.patch, ...next.patch },
        phoneNumber: next.phoneNumber ?? prev?.phoneNumber ?? null,
        phoneE164: next.phoneNumber !== null ? next.phoneE164 : (prev?.phoneE164 ?? null),
        externalKey: next.externalKey ?? prev?.externalKey ?? null,
      });
      // A lead of another definition takes the number and key only where its own fields are the
      // import's (lcm_duplicate_patch decides as it merges): later rows match it by the keys it had.
      if (found.sameDefinition) {
        const given = rowKeys(rule, { phoneE164: next.phoneNumber !== null ? next.phoneE164 : null, externalKey: next.externalKey });
        for (const k of keysOf(given)) if (!storedByKey.has(k)) storedByKey.set(k, found);
      }
      return { kind: 'updated', uniqueId: found.uniqueId };
    }
    const byPhone = keys.phoneE164 !== null ? firstByKey.get(`p ${keys.phoneE164}`) : undefined;
    const byKey = keys.externalKey !== null ? firstByKey.get(`x ${keys.externalKey}`) : undefined;
    const earlier = byPhone ?? byKey;
    if (earlier !== undefined) {
      if (rule.onDuplicate !== 'Update')
        return { kind: 'duplicate', uniqueId: earlier.uniqueId, matched: byPhone ? 'phone' : 'externalKey' };
      const next = updateOf(campaign, row);
      earlier.data = { ...earlier.data, ...next.patch };
      if (next.phoneNumber !== null) {
        earlier.phoneNumber = next.phoneNumber;
        earlier.phoneE164 = next.phoneE164;
      }
      if (next.externalKey !== null) earlier.externalKey = next.externalKey;
      for (const k of keysOf(rowKeys(rule, earlier))) if (!firstByKey.has(k)) firstByKey.set(k, earlier);
      return { kind: 'updated', uniqueId: earlier.uniqueId };
    }
    for (const k of keysOf(keys)) firstByKey.set(k, row);
    return { kind: 'insert' };
  });
  return { decisions, updates: [...updates.values()] };
}
