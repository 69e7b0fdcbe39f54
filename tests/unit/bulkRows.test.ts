import { parseBulkRow, UNDECODABLE_MESSAGE } from '../../src/domain/bulkRows';

const MARK = '\uFDD0';
const rules = { maxValueBytes: 1024, undecodable: MARK };

describe('parseBulkRow', () => {
  it('when a data object key holds the mark, then the row fails naming the key with U+FFFD', () => {
    expect(parseBulkRow({ Name: 'A', [`Bem${MARK}rkning`]: 'x' }, rules)).toEqual({
      ok: false,
      errors: [{ field: 'Bem\uFFFDrkning', message: UNDECODABLE_MESSAGE }],
    });
  });

  it('when a key holds the mark and its value is no string, then the field is still named with U+FFFD', () => {
    expect(parseBulkRow({ [`${MARK}nsker`]: 3 }, rules)).toEqual({
      ok: false,
      errors: [{ field: '\uFFFDnsker', message: 'must be a string or null' }],
    });
  });

  it('when a key of an import body or of its Data holds the mark, then each is named with U+FFFD and the encoding, not as an unknown property', () => {
    expect(parseBulkRow({ Data: { [`B${MARK}m${MARK}rkning`]: 'x' }, [`S${MARK}rlig`]: 'y' }, rules)).toEqual({
      ok: false,
      errors: [
        { field: 'Data.B\uFFFDm\uFFFDrkning', message: UNDECODABLE_MESSAGE },
        { field: 'S\uFFFDrlig', message: UNDECODABLE_MESSAGE },
      ],
    });
  });

  it("when an import body's CampaignCode holds the mark, then the row fails naming the encoding", () => {
    expect(parseBulkRow({ Data: { Name: 'A' }, CampaignCode: `K${MARK}GE` }, rules)).toEqual({
      ok: false,
      errors: [{ field: 'CampaignCode', message: UNDECODABLE_MESSAGE }],
    });
  });
});

describe('parseBulkRow: duplicate parameters in an import body', () => {
  it('when an import body carries a duplicate parameter, then its error says the bulk import takes it in the query', () => {
    const parsed = parseBulkRow({ Data: { Name: 'A' }, duplicateCheck: 'Campaign', OnDuplicate: 'Skip', Extra: 'x' }, rules);
    expect(parsed.ok).toBe(false);
    const errors = parsed.ok ? [] : parsed.errors;
    expect(errors.map((e) => e.field)).toEqual(['duplicateCheck', 'OnDuplicate', 'Extra']);
    expect(errors[0]!.message).toMatch(/query parameter of POST \/leads\/bulk/);
    expect(errors[1]!.message).toMatch(/query parameter of POST \/leads\/bulk/);
    expect(errors[2]!.message).toBe('is not a property of an import body (CampaignCode, Data, LeadPool)');
  });
});
