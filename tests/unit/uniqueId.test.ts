import { canonicalUniqueId, isUuid } from '../../src/domain/uniqueId';

describe('canonicalUniqueId', () => {
  it.each<[string, string]>([
    ['3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
    ['3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
    ['{3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40}', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
    ['{3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40}', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
    [' 3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40\t', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
    ['\n{3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40} ', '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40'],
  ])('when the id is the UUID %s, then it is read as %s', (sent, stored) => {
    expect(canonicalUniqueId(sent)).toBe(stored);
    expect(isUuid(sent)).toBe(true);
  });

  it.each([
    'DEMO-LEAD-001',
    '{3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40',
    '3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40}',
    '3F2B6A4E0C1D4E8A9B7F2D5C8E1A6B40',
    '(3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40)',
    '{ 3F2B6A4E-0C1D-4E8A-9B7F-2D5C8E1A6B40 }',
    ' demo-lead-001 ',
  ])('when the id %j is not a UUID in one of those forms, then it is compared as sent', (sent) => {
    expect(canonicalUniqueId(sent)).toBe(sent);
    expect(isUuid(sent)).toBe(false);
  });
});
