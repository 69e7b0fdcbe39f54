import { decideBatch, DuplicateCandidate } from '../../src/ingest/bulkDuplicates';
import type { DuplicateRule } from '../../src/domain/duplicates';
import type { ImportCampaign } from '../../src/data/leadRepository';

/** A campaign whose phone field and external key field are both editable. */
const campaign: ImportCampaign = {
  id: 1,
  uniqueId: 'c-1',
  code: 'C',
  project: 'P',
  fields: [
    { name: 'Name', importName: null, type: 'text', required: true, access: 'None', externalKey: false, sortOrder: 1 },
    { name: 'Phone', importName: null, type: 'phone', required: true, access: 'None', externalKey: false, sortOrder: 2 },
    { name: 'CustomerNo', importName: null, type: 'text', required: false, access: 'None', externalKey: true, sortOrder: 3 },
  ],
  editableFields: ['Name', 'Phone', 'CustomerNo'],
  duplicates: {},
};

const rule: DuplicateRule = { check: 'Campaign', key: 'PhoneOrExternalKey', statuses: 'Open', onDuplicate: 'Update' };

function row(uniqueId: string, phone: string, key: string | null): DuplicateCandidate {
  return {
    uniqueId,
    data: { Name: uniqueId, Phone: phone, ...(key !== null ? { CustomerNo: key } : {}) },
    phoneNumber: phone,
    phoneE164: `+45${phone}`,
    externalKey: key,
  };
}

describe('decideBatch: keys an Update gives a lead are seen by the later rows of the batch', () => {
  it('when a row merges a new number into an earlier row, then a later row with that number duplicates the earlier row', () => {
    const rows = [row('r1', '72000002', 'K9'), row('r2', '72000003', 'K9'), row('r3', '72000003', null)];
    const { decisions } = decideBatch(rule, campaign, rows, [undefined, undefined, undefined]);
    expect(decisions).toEqual([{ kind: 'insert' }, { kind: 'updated', uniqueId: 'r1' }, { kind: 'updated', uniqueId: 'r1' }]);
    expect(rows[0]!.phoneE164).toBe('+4572000003');
  });

  it('when a row merges a new number into a stored lead, then a later row with that number duplicates the stored lead', () => {
    const rows = [row('r1', '72000005', 'K7'), row('r2', '72000005', null)];
    const stored = [{ id: 42, uniqueId: 'stored', matched: 'externalKey' as const, sameDefinition: true }, undefined];
    const { decisions, updates } = decideBatch(rule, campaign, rows, stored);
    expect(decisions).toEqual([
      { kind: 'updated', uniqueId: 'stored' },
      { kind: 'updated', uniqueId: 'stored' },
    ]);
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ leadId: 42, phoneE164: '+4572000005', externalKey: 'K7' });
  });

  it('when the stored lead has another lead definition, then a later row is matched to it only by the keys it had when looked up', () => {
    const rows = [row('r1', '72000007', 'K8'), row('r2', '72000007', null)];
    const stored = [{ id: 44, uniqueId: 'stored', matched: 'externalKey' as const, sameDefinition: false }, undefined];
    const { decisions } = decideBatch(rule, campaign, rows, stored);
    // Whether that lead takes the number is its definition's to say, as the merge is made.
    expect(decisions).toEqual([{ kind: 'updated', uniqueId: 'stored' }, { kind: 'insert' }]);
  });

  it("when OnDuplicate=Reject, then the stored lead keeps its number and a later row with the refused row's number is stored", () => {
    const rows = [row('r1', '72000006', 'K6'), row('r2', '72000006', null)];
    const stored = [{ id: 43, uniqueId: 'stored', matched: 'externalKey' as const, sameDefinition: true }, undefined];
    const { decisions } = decideBatch({ ...rule, onDuplicate: 'Reject' }, campaign, rows, stored);
    // Reject changes nothing, so the refused row's number belongs to no lead.
    expect(decisions[0]).toEqual({ kind: 'duplicate', uniqueId: 'stored', matched: 'externalKey' });
    expect(decisions[1]).toEqual({ kind: 'insert' });
  });
});
