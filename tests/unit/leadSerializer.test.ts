import type { LeadLookups, LeadRow } from '../../src/domain/leadRecords';
import type { LeadFieldRule } from '../../src/domain/leadData';
import {
  dataColumns,
  leadCsvHeader,
  leadToCsvLine,
  leadToJson,
  leadToJsonText,
  leadRowFor,
  rawLeadLines,
  visibleFieldsByDefinition,
} from '../../src/domain/leadSerializer';

const ZONE = 'Europe/Copenhagen';
const field = (name: string, sortOrder: number, access: LeadFieldRule['access'] = 'None'): LeadFieldRule => ({
  name,
  importName: null,
  type: 'text',
  required: false,
  access,
  externalKey: false,
  sortOrder,
});
const definitions = new Map<number, LeadFieldRule[]>([
  [1, [field('Secret', 9, 'Full'), field('Name', 1), field('Revenue', 5, 'Partner'), field('Phone', 2)]],
  [2, [field('name', 1), field('City', 3)]],
]);
// Campaign 7 uses definition 1, campaign 8 definition 2, campaign 9 a definition without fields.
const lookups: LeadLookups = {
  campaigns: new Map([
    [7, { uniqueId: 'C-UID', code: 'C1', leadDefinitionId: 1 }],
    [8, { uniqueId: 'C8', code: 'C "8"', leadDefinitionId: 2 }],
    [9, { uniqueId: 'C9', code: 'C9', leadDefinitionId: 99 }],
  ]),
  pools: new Map([
    [5, '(auto) 2026-05-06'],
    [6, 'Pool; "six"'],
  ]),
  units: new Map([[1, 'TRYG Forsikring A/S']]),
  users: new Map([
    [2, 'u@x'],
    [3, 'f'],
    [4, 'm'],
  ]),
  definitions,
};
const emptyOrg = { units: new Map(), childrenOf: new Map(), users: new Map(), usersOf: new Map(), campaigns: new Map() };

function row(overrides: Partial<LeadRow> = {}): LeadRow {
  return {
    uniqueId: 'L1',
    status: 200,
    closure: 1,
    priority: 3,
    phoneNumber: '+45 1234',
    externalKey: 'K "1"',
    campaignId: 7,
    poolId: 5,
    dataJson: '{"Name": "Åse \\"A\\"\\n", "Phone": "+45 1234", "Stale": "old field", "Secret": "s", "Revenue": "10"}',
    dataVisible: false,
    uploadTime: Date.UTC(2026, 4, 6, 8, 16, 41, 5),
    lastModifiedTime: Date.UTC(2026, 11, 24, 23, 0, 0),
    firstProcessedTime: null,
    ownerOrgUnitId: 1,
    uploadedByUserId: 2,
    lastModifiedByUserId: null,
    firstProcessedByUserId: null,
    closureDataJson: '[{"a": 1}]',
    ...overrides,
  };
}

describe('lead JSON', () => {
  it('when a lead is rendered for a Full account, then data has every defined field in stored order and no stale key', () => {
    const visible = visibleFieldsByDefinition(definitions, 'Full');
    const out = leadToJson({ zone: ZONE, visible, lookups, include: new Set(), org: emptyOrg })(row());
    expect(Object.keys(out.data as object)).toEqual(['Name', 'Phone', 'Secret', 'Revenue']);
    expect(out).toMatchObject({
      status: 'UserProcessed',
      closure: 'Success',
      uploadTime: '2026-05-06T10:16:41.005+02:00',
      lastModifiedTime: '2026-12-25T00:00:00.000+01:00',
      ownerOrgUnit: { orgCode: 'TRYG Forsikring A/S' },
      closureData: [{ a: 1 }],
    });
    expect(JSON.parse(JSON.stringify(out))).not.toHaveProperty('firstProcessedTime');
  });

  it.each(['None', 'Partner', 'Full'] as const)('when the account has %s access, then only fields up to that level are shown', (access) => {
    const visible = visibleFieldsByDefinition(definitions, access);
    const out = leadToJson({ zone: ZONE, visible, lookups, include: new Set(), org: emptyOrg })(row());
    const expected = { None: ['Name', 'Phone'], Partner: ['Name', 'Phone', 'Revenue'], Full: ['Name', 'Phone', 'Secret', 'Revenue'] }[
      access
    ];
    expect(Object.keys(out.data as object)).toEqual(expected);
  });

  it('when the text fast path renders any row, then it is the same JSON as the object path', () => {
    for (const access of ['None', 'Partner', 'Full'] as const) {
      const visible = visibleFieldsByDefinition(definitions, access);
      const viaObject = leadToJson({ zone: ZONE, visible, lookups, include: new Set(), org: emptyOrg });
      const viaText = leadToJsonText(ZONE, visible, lookups);
      const rows = [
        row(),
        row({
          phoneNumber: null,
          externalKey: null,
          firstProcessedTime: Date.UTC(2026, 2, 29, 1, 0, 0),
          firstProcessedByUserId: 3,
          lastModifiedByUserId: 4,
        }),
        row({
          campaignId: 8,
          poolId: 6,
          dataJson: '{"City": "Malmö", "name": "x"}',
          ownerOrgUnitId: null,
          uploadedByUserId: null,
          closureDataJson: '[]',
        }),
        row({ campaignId: 9, dataJson: '{"A": "b"}' }),
        row({ campaignId: 8, dataJson: '{"City": "Malmö", "name": "x"}', dataVisible: true }),
        row({ dataJson: '{"Name": "only visible", "Phone": "1"}', dataVisible: true }),
        row({ dataJson: '{}', dataVisible: true }),
      ];
      for (const r of rows) expect(JSON.parse(viaText(r))).toEqual(JSON.parse(JSON.stringify(viaObject(r))));
    }
  });
});

describe('lead CSV', () => {
  it('when definitions differ, then the columns are every visible field by sort order, one per name', () => {
    const columns = dataColumns(definitions, 'Partner');
    expect(columns.names).toEqual(['Name', 'Phone', 'City', 'Revenue']);
    expect(leadCsvHeader(columns, ';')).toBe(
      'uniqueId;status;closure;priority;phoneNumber;externalKey;pool;campaignUniqueId;campaignCode;uploadTime;lastModifiedTime;firstProcessedTime;' +
        'ownerOrgUnitOrgCode;uploadedByUserOrgCode;lastModifiedByUserOrgCode;firstProcessedByUserOrgCode;Name;Phone;City;Revenue\r\n',
    );
  });

  it('when a row is written, then values are quoted where needed and cells of other definitions stay empty', () => {
    const columns = dataColumns(definitions, 'Partner');
    const line = leadToCsvLine({ zone: ZONE, separator: ';', columns, lookups });
    expect(line(row())).toBe(
      'L1;UserProcessed;Success;3;+45 1234;"K ""1""";(auto) 2026-05-06;C-UID;C1;2026-05-06T10:16:41.005+02:00;2026-12-25T00:00:00.000+01:00;;' +
        'TRYG Forsikring A/S;u@x;;;"Åse ""A""\n";+45 1234;;10\r\n',
    );
    expect(line(row({ campaignId: 8, dataJson: '{"name": "n", "City": "Malmö"}' })).endsWith(';n;;Malmö;\r\n')).toBe(true);
  });
});

describe('RawLeads lines', () => {
  it('when a lead is written, then there is one line per visible field with a value, in sort order', () => {
    const lines = rawLeadLines({ separator: ';', visible: visibleFieldsByDefinition(definitions, 'None'), lookups });
    const raw = { uniqueId: 'L1', campaignId: 7, data: { Secret: 's', Phone: '+45 1234', Name: 'Åse "A"\n', Stale: 'x' } };
    expect(lines(raw)).toBe('L1;Name;"Åse ""A""\n"\r\nL1;Phone;+45 1234\r\n');
    expect(lines({ ...raw, campaignId: 9 })).toBe('');
  });
});

describe('a snapshot row for a reader (leadRowFor)', () => {
  it('when the reader sees the fields the phone number and key come from, and data holds those values under them, then both stay', () => {
    const r = row({ externalKey: 's' });
    expect(leadRowFor(r, { phone: 'Phone', key: 'Secret' })).toBe(r);
  });

  it('when the reader does not see a field, then its value is NULL', () => {
    expect(leadRowFor(row({ externalKey: 's' }), { phone: null, key: 'Secret' })).toMatchObject({ phoneNumber: null, externalKey: 's' });
    expect(leadRowFor(row({ externalKey: 's' }), { phone: 'Phone', key: null })).toMatchObject({
      phoneNumber: '+45 1234',
      externalKey: null,
    });
  });

  it('when data holds another value under the field (the value came from another field before the definition changed), then it is NULL', () => {
    expect(leadRowFor(row({ phoneNumber: '+45 9999', externalKey: 'old field' }), { phone: 'Phone', key: 'Name' })).toMatchObject({
      phoneNumber: null,
      externalKey: null,
    });
    expect(leadRowFor(row({ externalKey: 'old field' }), { phone: 'Phone', key: 'Stale' })).toMatchObject({ externalKey: 'old field' });
  });
});
