import { LeadStatus, OPEN_LEAD_STATUSES, CLOSED_LEAD_STATUSES } from '../../src/domain/enums';
import { resolveLeadFilter, resolveStatuses, savedSearchLeadFilter, SavedSearchFilter } from '../../src/domain/leadFilters';

const nums = (names: readonly string[]) => names.map((n) => LeadStatus.toNumber(n as never)).sort((a, b) => a - b);

describe('resolveStatuses', () => {
  it('when nothing is asked for, then every status passes (no filter)', () => {
    expect(resolveStatuses({})).toBeUndefined();
    expect(resolveStatuses({ statuses: [], allOpenStatuses: false, allClosedStatuses: false })).toBeUndefined();
  });

  it('when AllOpenStatuses=true, then the six open statuses pass', () => {
    expect(resolveStatuses({ allOpenStatuses: true })).toEqual(nums(OPEN_LEAD_STATUSES));
    expect(OPEN_LEAD_STATUSES).toEqual(['New', 'RedialAutomatic', 'RedialManualCommon', 'RedialManualPrivate', 'VIPRedial', 'Unresolved']);
  });

  it('when AllClosedStatuses=true, then every other status passes', () => {
    expect(resolveStatuses({ allClosedStatuses: true })).toEqual(nums(CLOSED_LEAD_STATUSES));
    expect([...OPEN_LEAD_STATUSES, ...CLOSED_LEAD_STATUSES].sort()).toEqual([...LeadStatus.names].sort());
  });

  it('when named statuses and a set are combined, then their union passes', () => {
    expect(resolveStatuses({ statuses: ['Expired'], allOpenStatuses: true })).toEqual(nums([...OPEN_LEAD_STATUSES, 'Expired']));
  });

  it('when both sets are asked for, then it is no filter at all', () => {
    expect(resolveStatuses({ allOpenStatuses: true, allClosedStatuses: true })).toBeUndefined();
  });
});

describe('resolveLeadFilter', () => {
  it('when Projects is the default `*`, then no extra project filter applies', () => {
    expect(resolveLeadFilter({ projects: ['*'] })).toEqual({});
    expect(resolveLeadFilter({ projects: ['B2B*', '*'] })).toEqual({});
  });

  it('when values are blank or repeated, then they are dropped', () => {
    expect(resolveLeadFilter({ projects: [' B2B* ', '', 'B2B*'], campaigns: ['', 'C1', 'C1'], uniqueIds: [' ', 'x'] })).toEqual({
      projectPatterns: ['B2B*'],
      campaignKeys: ['C1'],
      uniqueIds: ['x'],
    });
  });

  it('when closures are given, then their numbers filter; all of them is no filter', () => {
    expect(resolveLeadFilter({ closures: ['Success', 'NotSet'] })).toEqual({ closures: [0, 1] });
    expect(resolveLeadFilter({ closures: ['NotSet', 'Success', 'NotInterested', 'InvalidLead', 'Unqualified'] })).toEqual({});
  });

  it('when modified times are given, then they are kept as given', () => {
    const from = new Date('2026-01-01T00:00:00Z');
    const to = new Date('2026-02-01T00:00:00Z');
    expect(resolveLeadFilter({ modifiedFrom: from, modifiedTo: to })).toEqual({ modifiedFrom: from, modifiedTo: to });
  });

  it('when a limit is given, then the filter carries it', () => {
    expect(resolveLeadFilter({ limit: 10 })).toEqual({ limit: 10 });
  });
});

describe('savedSearchLeadFilter', () => {
  const search: SavedSearchFilter = {
    campaigns: ['C1', 'C2'],
    projects: ['Sales*'],
    statuses: ['New'],
    leadClosures: ['Success'],
    allOpenStatuses: false,
    allClosedStatuses: true,
  };
  const from = new Date('2026-05-01T00:00:00Z');

  it('when the search runs as saved, then its campaigns, projects and status filters apply from modifiedFrom', () => {
    expect(savedSearchLeadFilter(search, { modifiedFrom: from })).toEqual({
      projectPatterns: ['Sales*'],
      campaignKeys: ['C1', 'C2'],
      modifiedFrom: from,
      statuses: nums([...CLOSED_LEAD_STATUSES, 'New']),
      closures: [1],
    });
  });

  it('when a project is given, then it replaces the campaign selection and the status filters stay', () => {
    const filter = savedSearchLeadFilter(search, { modifiedFrom: from, project: 'Retail' });
    expect(filter.projectPatterns).toEqual(['Retail']);
    expect(filter.campaignKeys).toBeUndefined();
    expect(filter.closures).toEqual([1]);
  });

  it('when modifiedTo is given, then the window ends there (exclusive) and the stored filters still apply', () => {
    const to = new Date('2026-05-03T00:00:00Z');
    const filter = savedSearchLeadFilter(search, { modifiedFrom: from, modifiedTo: to });
    expect(filter).toMatchObject({ modifiedFrom: from, modifiedTo: to, campaignKeys: ['C1', 'C2'], closures: [1] });
  });
});
