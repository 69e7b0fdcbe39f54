import { eventSelector, projectUniqueId, readableEventTypes, sseEvent } from '../../src/domain/liveEvents';
import { HOOK_EVENTS, HookEventName } from '../../src/domain/hooks';

describe('readableEventTypes', () => {
  it('when the account has the Get right on Leads only, then only the lead events are readable', () => {
    expect(readableEventTypes({ Leads: ['Get', 'Put'], Calls: ['Put'] })).toEqual(HOOK_EVENTS.filter((e) => e.startsWith('lead.')));
  });

  it('when the account has no rights, then no event is readable', () => {
    expect(readableEventTypes({})).toEqual([]);
  });
});

describe('eventSelector', () => {
  const all = new Set<HookEventName>(HOOK_EVENTS);
  const lead = (project: string | null, campaignCode: string | null = 'C1') => ({ type: 'lead.created', project, campaignCode });

  it('when the event’s project is outside the account’s project rights, then it is left out', () => {
    const selects = eventSelector({ types: all, projectRights: ['B2B*'] });
    expect(selects(lead('B2B Sales'))).toBe(true);
    expect(selects(lead('Retail'))).toBe(false);
    expect(selects(lead(null))).toBe(false);
  });

  it('when the kind is not selected, then it is left out', () => {
    const selects = eventSelector({ types: new Set<HookEventName>(['call.ended']), projectRights: ['*'] });
    expect(selects(lead('B2B'))).toBe(false);
    expect(selects({ type: 'call.ended', project: 'B2B', campaignCode: 'C1' })).toBe(true);
    expect(selects({ type: 'hook.test', project: 'B2B', campaignCode: 'C1' })).toBe(false);
  });

  it('when Projects is given, then it narrows by pattern or project unique id, never beyond the rights', () => {
    const byPattern = eventSelector({ types: all, projectRights: ['B2B*', 'Retail'], projects: ['b2b s*'] });
    expect(byPattern(lead('B2B Sales'))).toBe(true);
    expect(byPattern(lead('B2B Other'))).toBe(false);
    expect(byPattern(lead('Retail'))).toBe(false);
    const byId = eventSelector({ types: all, projectRights: ['B2B*'], projects: [projectUniqueId('B2B Sales').toUpperCase()] });
    expect(byId(lead('b2b sales'))).toBe(true);
    expect(byId(lead('B2B Other'))).toBe(false);
    const outside = eventSelector({ types: all, projectRights: ['B2B*'], projects: ['Retail'] });
    expect(outside(lead('Retail'))).toBe(false);
  });

  it('when Campaigns is given, then only those campaigns’ events come, and calendar events (no campaign) do not', () => {
    const selects = eventSelector({ types: all, projectRights: ['*'], campaignCodes: new Set(['C1']) });
    expect(selects(lead('P', 'C1'))).toBe(true);
    expect(selects(lead('P', 'C2'))).toBe(false);
    expect(selects({ type: 'calendarEvent.created', project: 'P', campaignCode: null })).toBe(false);
  });
});

describe('projectUniqueId', () => {
  it('when a name is given, then the id is the md5-based UUID of its lower-cased name, as SQL derives it', () => {
    // select md5('project:' || lower('B2B Sales'))::uuid::text
    expect(projectUniqueId('B2B Sales')).toBe(projectUniqueId('b2b sales'));
    expect(projectUniqueId('B2B Sales')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe('sseEvent', () => {
  it('when an event is framed, then it is id, event and one data line, ended by a blank line', () => {
    expect(sseEvent(42, 'lead.created', '{"a":"x\\ny"}')).toBe('id: 42\nevent: lead.created\ndata: {"a":"x\\ny"}\n\n');
  });
});
