import { parseDateTime } from '../../src/domain/datetime';
import {
  CallEndCause,
  CallEndCauseName,
  CallLeadStatus,
  CLOSED_LEAD_STATUSES,
  LeadStatus,
  LeadStatusName,
  OPEN_LEAD_STATUSES,
} from '../../src/domain/enums';
import {
  administrativeStatus,
  AGENT_ACTIONS,
  agentMove,
  assertTransitionAllowed,
  callLeadStatusFor,
  CampaignLifecycleSettings,
  CallOutcome,
  isTransitionAllowed,
  LifecycleError,
  NO_LIMITS,
  preCallLeadStatusFor,
  recordCallOutcome,
  restartsStatusClock,
  sweepDeadline,
  sweepDecision,
} from '../../src/domain/lifecycle';
import { parseTimeSpan } from '../../src/domain/timespan';

const CPH = 'Europe/Copenhagen';
const ALL = LeadStatus.names;
const ADMIN: LeadStatusName[] = ['Removed', 'Anonymized', 'DoNotCall', 'GlobalDoNotCall'];
const NOT_ADMIN = ALL.filter((s) => !ADMIN.includes(s));
const NO_CONTACT: CallEndCauseName[] = ['NoResponse', 'Busy', 'VoiceMail'];
const CONTACT_OR_OTHER: CallEndCauseName[] = ['NormalDisconnect', 'DroppedCall', 'DialingCancelled', 'NotApplicable'];

const settings = (p: Partial<CampaignLifecycleSettings> = {}): CampaignLifecycleSettings => ({ ...NO_LIMITS, ...p });
const lead = (status: LeadStatusName, attempts = 0) => ({ status, attempts });
const at = (s: string) => parseDateTime(s, CPH);

describe('row: New or RedialAutomatic, call ends NoResponse/Busy/VoiceMail → RedialAutomatic', () => {
  for (const from of ['New', 'RedialAutomatic'] as const) {
    it.each(NO_CONTACT)(`when a ${from} lead's call ends %s, then the lead and the call are RedialAutomatic`, (endCause) => {
      const r = recordCallOutcome(lead(from, 1), { endCause }, settings());
      expect(r.leadStatus).toBe('RedialAutomatic');
      expect(r.callLeadStatus).toBe('RedialAutomatic');
      expect(r.preCallLeadStatus).toBe(from);
      expect(r.attempts).toBe(2);
      expect(r.statusChanged).toBe(from === 'New');
    });
  }

  it.each(['RedialManualCommon', 'RedialManualPrivate'] as const)(
    'when a %s lead is not answered, then it never moves to RedialAutomatic',
    (from) => {
      for (const endCause of NO_CONTACT) {
        const r = recordCallOutcome(lead(from), { endCause }, settings());
        expect(r.leadStatus).toBe(from);
        expect(r.callLeadStatus).toBe(from);
      }
      expect(isTransitionAllowed(from, 'RedialAutomatic')).toBe(false);
    },
  );

  it('when VIPRedial or Unresolved leads are not answered, then they keep their status', () => {
    expect(recordCallOutcome(lead('VIPRedial'), { endCause: 'Busy' }, settings()).leadStatus).toBe('VIPRedial');
    expect(recordCallOutcome(lead('Unresolved'), { endCause: 'Busy' }, settings()).leadStatus).toBe('Unresolved');
  });

  it.each(CONTACT_OR_OTHER)('when a New lead call ends %s without agent action, then it stays New and the call is NotSet', (endCause) => {
    const r = recordCallOutcome(lead('New'), { endCause }, settings());
    expect(r.leadStatus).toBe('New');
    expect(r.callLeadStatus).toBe('NotSet');
    expect(r.attempts).toBe(0);
  });

  it('when another status is asked to move to RedialAutomatic, then it is not allowed', () => {
    for (const from of ALL) expect(isTransitionAllowed(from, 'RedialAutomatic')).toBe(from === 'New' || from === 'RedialAutomatic');
  });
});

describe('rows: agent schedules a redial → RedialManualCommon / RedialManualPrivate / VIPRedial', () => {
  const cases = [
    ['redialCommon', 'RedialManualCommon'],
    ['redialPrivate', 'RedialManualPrivate'],
    ['redialVip', 'VIPRedial'],
  ] as const;

  for (const [action, to] of cases) {
    it.each(NOT_ADMIN)(`when the agent does ${action} on a %s lead, then it becomes ${to}`, (from) => {
      const r = recordCallOutcome(lead(from), { endCause: 'NormalDisconnect', agentAction: action }, settings());
      expect(r.leadStatus).toBe(to);
      expect(r.callLeadStatus).toBe(to);
      expect(agentMove(from, action)).toBe(to);
    });
  }

  it('when the agent schedules a redial after no answer, then the agent wins over RedialAutomatic and Depleted', () => {
    const r = recordCallOutcome(lead('New', 4), { endCause: 'NoResponse', agentAction: 'redialPrivate' }, settings({ maxAttempts: 5 }));
    expect(r.leadStatus).toBe('RedialManualPrivate');
    expect(r.attempts).toBe(5);
  });

  it('when a processed lead is rescheduled, then its closure is cleared', () => {
    const r = recordCallOutcome(
      { status: 'UserProcessed', attempts: 0, closure: 'Success' },
      { endCause: 'NormalDisconnect', agentAction: 'redialCommon' },
      settings(),
    );
    expect(r.closure).toBe('NotSet');
    expect(r.callLeadClosure).toBeNull();
  });
});

describe('row: agent does not save the lead → Unresolved (call: Abandoned)', () => {
  it.each(NOT_ADMIN)('when a %s lead is not saved, then it is Unresolved and the call Abandoned', (from) => {
    const r = recordCallOutcome(lead(from), { endCause: 'NormalDisconnect', agentAction: 'notSaved' }, settings());
    expect(r.leadStatus).toBe('Unresolved');
    expect(r.callLeadStatus).toBe('Abandoned');
  });
});

describe('row: agent closes the lead normally → UserProcessed (+ closure)', () => {
  it('when the agent closes with an inferred closure, then the lead and the call carry it', () => {
    const r = recordCallOutcome(
      lead('RedialAutomatic'),
      { endCause: 'NormalDisconnect', agentAction: 'close', closure: 'Success' },
      settings(),
    );
    expect(r).toEqual({
      leadStatus: 'UserProcessed',
      closure: 'Success',
      attempts: 0,
      statusChanged: true,
      restartStatusClock: true,
      callLeadStatus: 'UserProcessed',
      callLeadClosure: 'Success',
      preCallLeadStatus: 'RedialAutomatic',
    });
  });

  it('when the agent closes without a closure, then the closure is NotSet', () => {
    const r = recordCallOutcome(lead('New'), { endCause: 'NormalDisconnect', agentAction: 'close' }, settings());
    expect(r.closure).toBe('NotSet');
    expect(r.callLeadClosure).toBe('NotSet');
  });

  it.each(NOT_ADMIN)('when a %s lead is closed, then it is UserProcessed', (from) => {
    expect(agentMove(from, 'close')).toBe('UserProcessed');
  });

  it('when a closure is given without closing, then it is ignored', () => {
    const r = recordCallOutcome(lead('New'), { endCause: 'NormalDisconnect', agentAction: 'redialCommon', closure: 'Success' }, settings());
    expect(r.closure).toBe('NotSet');
  });

  it('when a processed lead is called again without an action, then it stays processed with its closure', () => {
    const r = recordCallOutcome(
      { status: 'UserProcessed', attempts: 0, closure: 'NotInterested' },
      { endCause: 'NoResponse' },
      settings({ maxAttempts: 1 }),
    );
    expect(r.leadStatus).toBe('UserProcessed');
    expect(r.closure).toBe('NotInterested');
    expect(r.callLeadStatus).toBe('UserProcessed');
    expect(r.callLeadClosure).toBe('NotInterested');
    expect(r.preCallLeadStatus).toBeNull();
  });
});

describe('row: called a configured number of times without contact → Depleted', () => {
  it('when the last allowed attempt is not answered, then the lead is Depleted', () => {
    const r = recordCallOutcome(lead('RedialAutomatic', 2), { endCause: 'Busy' }, settings({ maxAttempts: 3 }));
    expect(r.leadStatus).toBe('Depleted');
    expect(r.callLeadStatus).toBe('Depleted');
    expect(r.attempts).toBe(3);
  });

  it('when attempts remain, then the lead is redialled automatically', () => {
    expect(recordCallOutcome(lead('New', 0), { endCause: 'Busy' }, settings({ maxAttempts: 3 })).leadStatus).toBe('RedialAutomatic');
    expect(recordCallOutcome(lead('RedialAutomatic', 1), { endCause: 'Busy' }, settings({ maxAttempts: 3 })).leadStatus).toBe(
      'RedialAutomatic',
    );
  });

  it('when a lead is called over and over with no maximum, then it is never Depleted', () => {
    let l = lead('New');
    for (let i = 0; i < 100; i++) {
      const r = recordCallOutcome(l, { endCause: 'NoResponse' }, settings());
      l = { status: r.leadStatus, attempts: r.attempts };
    }
    expect(l).toEqual({ status: 'RedialAutomatic', attempts: 100 });
  });

  it('when a manual common or private redial runs out of attempts, then it is Depleted', () => {
    expect(recordCallOutcome(lead('RedialManualCommon', 4), { endCause: 'VoiceMail' }, settings({ maxAttempts: 5 })).leadStatus).toBe(
      'Depleted',
    );
    expect(recordCallOutcome(lead('RedialManualPrivate', 4), { endCause: 'VoiceMail' }, settings({ maxAttempts: 5 })).leadStatus).toBe(
      'Depleted',
    );
  });

  it('when a VIP redial runs out of attempts, then it stays VIPRedial', () => {
    const r = recordCallOutcome(lead('VIPRedial', 9), { endCause: 'NoResponse' }, settings({ maxAttempts: 5 }));
    expect(r.leadStatus).toBe('VIPRedial');
    expect(r.attempts).toBe(10);
    expect(isTransitionAllowed('VIPRedial', 'Depleted')).toBe(false);
  });

  it('when calls had contact, then they do not count as attempts', () => {
    for (const endCause of CONTACT_OR_OTHER) {
      const r = recordCallOutcome(lead('RedialAutomatic', 4), { endCause }, settings({ maxAttempts: 5 }));
      expect(r.attempts).toBe(4);
      expect(r.leadStatus).toBe('RedialAutomatic');
    }
  });

  it('when a closed lead is not answered, then it is not Depleted', () => {
    for (const from of CLOSED_LEAD_STATUSES) expect(isTransitionAllowed(from, 'Depleted')).toBe(from === 'Depleted');
  });
});

describe('row: Unresolved not resolved within a configured time → Abandoned', () => {
  const s = settings({ abandonAfter: parseTimeSpan('PT8H') });
  const since = at('2026-05-06T08:00');

  it('when the time has passed, then the lead is Abandoned', () => {
    expect(sweepDecision({ status: 'Unresolved', statusChangedTime: since }, s, at('2026-05-06T16:00:00.001'), CPH)).toBe('Abandoned');
  });

  it('when the deadline is reached exactly, then the lead is Abandoned', () => {
    expect(sweepDecision({ status: 'Unresolved', statusChangedTime: since }, s, at('2026-05-06T16:00'), CPH)).toBe('Abandoned');
  });

  it('when the time has not passed, then the lead stays', () => {
    expect(sweepDecision({ status: 'Unresolved', statusChangedTime: since }, s, at('2026-05-06T15:59:59.999'), CPH)).toBeNull();
  });

  it('when the campaign has no abandon time, then the lead never becomes Abandoned', () => {
    expect(
      sweepDecision(
        { status: 'Unresolved', statusChangedTime: since },
        settings({ expireAfter: parseTimeSpan('PT1S') }),
        at('2099-01-01'),
        CPH,
      ),
    ).toBeNull();
  });

  it('when another status is old, then the abandon time does not apply', () => {
    for (const status of ALL.filter((x) => x !== 'Unresolved')) {
      expect(sweepDecision({ status, statusChangedTime: since }, s, at('2099-01-01'), CPH)).not.toBe('Abandoned');
      expect(isTransitionAllowed(status, 'Abandoned')).toBe(status === 'Abandoned');
    }
  });
});

describe('row: system finds the lead unreachable for another reason → Failed', () => {
  it.each(OPEN_LEAD_STATUSES)('when a %s lead is unreachable, then it is Failed', (from) => {
    const r = recordCallOutcome(lead(from), { endCause: 'NotApplicable', failed: true }, settings());
    expect(r.leadStatus).toBe('Failed');
    expect(r.callLeadStatus).toBe('Failed');
  });

  it('when the failure comes with an agent action, then Failed wins', () => {
    expect(
      recordCallOutcome(lead('New'), { endCause: 'NoResponse', failed: true, agentAction: 'redialCommon' }, settings()).leadStatus,
    ).toBe('Failed');
  });

  it('when a closed lead is unreachable, then its outcome is kept', () => {
    const r = recordCallOutcome(
      { status: 'UserProcessed', attempts: 0, closure: 'Success' },
      { endCause: 'NotApplicable', failed: true },
      settings(),
    );
    expect(r.leadStatus).toBe('UserProcessed');
    expect(isTransitionAllowed('UserProcessed', 'Failed')).toBe(false);
  });
});

describe('row: not closed within the campaign time limit → Expired (not VIPRedial)', () => {
  const since = at('2026-05-01T12:00');
  const s = settings({ expireAfter: parseTimeSpan('P7D'), privateExpireAfter: parseTimeSpan('P30D') });

  it.each(['New', 'RedialAutomatic', 'RedialManualCommon'] as const)('when a %s lead passes expireAfter, then it is Expired', (status) => {
    expect(sweepDecision({ status, statusChangedTime: since }, s, at('2026-05-08T12:00'), CPH)).toBe('Expired');
    expect(sweepDecision({ status, statusChangedTime: since }, s, at('2026-05-08T11:59:59.999'), CPH)).toBeNull();
  });

  it('when a private redial passes expireAfter but not privateExpireAfter, then it stays', () => {
    expect(sweepDecision({ status: 'RedialManualPrivate', statusChangedTime: since }, s, at('2026-05-20T12:00'), CPH)).toBeNull();
    expect(sweepDecision({ status: 'RedialManualPrivate', statusChangedTime: since }, s, at('2026-05-31T12:00'), CPH)).toBe('Expired');
  });

  it('when only privateExpireAfter is set, then common leads never expire and private ones do', () => {
    const p = settings({ privateExpireAfter: parseTimeSpan('P1D') });
    expect(sweepDecision({ status: 'New', statusChangedTime: since }, p, at('2099-01-01'), CPH)).toBeNull();
    expect(sweepDecision({ status: 'RedialManualPrivate', statusChangedTime: since }, p, at('2026-05-02T12:00'), CPH)).toBe('Expired');
  });

  it('when the lead is a VIP redial, then it never expires', () => {
    expect(sweepDecision({ status: 'VIPRedial', statusChangedTime: since }, s, at('2099-01-01'), CPH)).toBeNull();
    expect(sweepDeadline({ status: 'VIPRedial', statusChangedTime: since }, s, CPH)).toBeNull();
    expect(isTransitionAllowed('VIPRedial', 'Expired')).toBe(false);
  });

  it('when the campaign has no limit, then leads never expire', () => {
    for (const status of OPEN_LEAD_STATUSES) {
      expect(sweepDecision({ status, statusChangedTime: since }, NO_LIMITS, at('2099-01-01'), CPH)).toBeNull();
    }
  });

  it('when a lead is closed, then it does not expire', () => {
    for (const status of CLOSED_LEAD_STATUSES) {
      expect(
        sweepDecision({ status, statusChangedTime: since }, settings({ expireAfter: parseTimeSpan('PT1S') }), at('2099-01-01'), CPH),
      ).toBeNull();
      expect(isTransitionAllowed(status, 'Expired')).toBe(status === 'Expired');
    }
  });

  it('when an Unresolved lead is old, then it is abandoned, not expired', () => {
    expect(sweepDecision({ status: 'Unresolved', statusChangedTime: since }, s, at('2099-01-01'), CPH)).toBeNull();
    expect(isTransitionAllowed('Unresolved', 'Expired')).toBe(false);
  });

  it('when the limit is in days across a DST change, then it is calendar days in the zone', () => {
    const d = sweepDeadline(
      { status: 'New', statusChangedTime: at('2026-03-28T12:00') },
      settings({ expireAfter: parseTimeSpan('P1D') }),
      CPH,
    );
    expect(d).toEqual({ to: 'Expired', at: at('2026-03-29T12:00') });
    expect(d!.at.getTime() - at('2026-03-28T12:00').getTime()).toBe(23 * 3_600_000);
  });

  it('when the limit is in months, then it is a calendar month', () => {
    const d = sweepDeadline(
      { status: 'RedialManualPrivate', statusChangedTime: at('2026-01-31T09:00') },
      settings({ privateExpireAfter: parseTimeSpan('P1M') }),
      CPH,
    );
    expect(d!.at).toEqual(at('2026-02-28T09:00'));
  });
});

describe('rows: administrative moves → Removed, Anonymized, DoNotCall, GlobalDoNotCall', () => {
  for (const target of ['Removed', 'DoNotCall', 'GlobalDoNotCall'] as const) {
    it.each(ALL.filter((s) => s !== 'Anonymized'))(`when an administrator sets ${target} on a %s lead, then it is ${target}`, (from) => {
      expect(administrativeStatus(from, target)).toBe(target);
    });
  }

  it.each(ALL)('when a person asks to be forgotten on a %s lead, then it is Anonymized', (from) => {
    expect(administrativeStatus(from, 'Anonymized')).toBe('Anonymized');
  });

  it('when a lead is Anonymized, then no other status can be set', () => {
    for (const to of ALL.filter((s) => s !== 'Anonymized')) {
      expect(isTransitionAllowed('Anonymized', to)).toBe(false);
    }
    expect(() => administrativeStatus('Anonymized', 'Removed')).toThrow(LifecycleError);
  });

  it('when the target is not administrative, then it is refused', () => {
    expect(() => administrativeStatus('New', 'UserProcessed' as never)).toThrow(LifecycleError);
  });

  it.each(ADMIN)('when a %s lead is called, then the lead is untouched and the call NotSet', (from) => {
    const r = recordCallOutcome(
      { status: from, attempts: 2 },
      { endCause: 'NoResponse', agentAction: 'redialCommon' },
      settings({ maxAttempts: 1 }),
    );
    expect(r.leadStatus).toBe(from);
    expect(r.attempts).toBe(2);
    expect(r.callLeadStatus).toBe('NotSet');
    expect(r.statusChanged).toBe(false);
  });

  it.each(ADMIN)('when an agent acts on a %s lead outside a call, then it is refused', (from) => {
    for (const action of AGENT_ACTIONS) expect(() => agentMove(from, action)).toThrow(LifecycleError);
  });

  it('when a lead would move back to New, then it is not allowed', () => {
    for (const from of ALL.filter((s) => s !== 'New')) expect(isTransitionAllowed(from, 'New')).toBe(false);
    expect(() => assertTransitionAllowed('Expired', 'New')).toThrow(/cannot move from Expired to New/);
  });
});

describe('CallStatus rules (docs/decisions.md, Lead lifecycle)', () => {
  it('when the lead is Unresolved at wrap-up, then the call status is Abandoned', () => {
    expect(callLeadStatusFor('Unresolved')).toBe('Abandoned');
  });

  it('when the call status is set from the lead status, then each lead status maps as specified', () => {
    const expected: Record<LeadStatusName, string> = {
      New: 'NotSet',
      RedialAutomatic: 'RedialAutomatic',
      RedialManualCommon: 'RedialManualCommon',
      RedialManualPrivate: 'RedialManualPrivate',
      VIPRedial: 'VIPRedial',
      Unresolved: 'Abandoned',
      UserProcessed: 'UserProcessed',
      Depleted: 'Depleted',
      Abandoned: 'Abandoned',
      Failed: 'Failed',
      Expired: 'NotSet',
      Removed: 'NotSet',
      Anonymized: 'NotSet',
      DoNotCall: 'NotSet',
      GlobalDoNotCall: 'NotSet',
    };
    for (const s of ALL) {
      expect(callLeadStatusFor(s)).toBe(expected[s]);
      expect(CallLeadStatus.has(callLeadStatusFor(s))).toBe(true);
    }
  });

  it('when a call is followed by a call to an alternative number, then the call is AlternativeNumberDialed and the lead unchanged', () => {
    const r = recordCallOutcome(lead('New', 0), { endCause: 'NoResponse', alternativeNumber: true }, settings({ maxAttempts: 1 }));
    expect(r.callLeadStatus).toBe('AlternativeNumberDialed');
    expect(r.leadStatus).toBe('New');
    expect(r.statusChanged).toBe(false);
    expect(r.attempts).toBe(1);
  });

  it('when the follow-up call to the alternative number is made, then its pre-call status says so', () => {
    const r = recordCallOutcome(
      lead('New', 1),
      { endCause: 'NormalDisconnect', agentAction: 'close', followUp: 'alternativeNumber' },
      settings(),
    );
    expect(r.preCallLeadStatus).toBe('AlternativeNumberDialed');
    expect(r.leadStatus).toBe('UserProcessed');
    expect(preCallLeadStatusFor('RedialAutomatic', 'nextNumber')).toBe('NextNumberDialed');
  });

  it('when a call is created by a transfer, then it is Transferred and the lead unchanged', () => {
    const r = recordCallOutcome(
      lead('RedialAutomatic', 3),
      { endCause: 'NormalDisconnect', transferred: true, agentAction: 'close' },
      settings(),
    );
    expect(r.callLeadStatus).toBe('Transferred');
    expect(r.leadStatus).toBe('RedialAutomatic');
    expect(r.attempts).toBe(3);
  });

  it('when AlternativeNumberDialed and Transferred are looked up as lead statuses, then they do not exist', () => {
    expect(LeadStatus.has('AlternativeNumberDialed')).toBe(false);
    expect(LeadStatus.has('Transferred')).toBe(false);
  });

  it('when the leadClosure of the call is asked, then it is present only for UserProcessed', () => {
    for (const action of AGENT_ACTIONS) {
      const r = recordCallOutcome(lead('New'), { endCause: 'NormalDisconnect', agentAction: action, closure: 'Success' }, settings());
      expect(r.callLeadClosure).toBe(action === 'close' ? 'Success' : null);
    }
  });

  it('when the pre-call status is asked, then open statuses are kept and closed ones have none', () => {
    for (const s of OPEN_LEAD_STATUSES) expect(preCallLeadStatusFor(s)).toBe(s);
    for (const s of CLOSED_LEAD_STATUSES) expect(preCallLeadStatusFor(s)).toBeNull();
  });
});

describe('status clock', () => {
  it('when a lead moves among New, RedialAutomatic and RedialManualCommon, then the expiry clock keeps running', () => {
    expect(restartsStatusClock('New', 'RedialAutomatic')).toBe(false);
    expect(restartsStatusClock('RedialAutomatic', 'RedialManualCommon')).toBe(false);
    expect(recordCallOutcome(lead('New'), { endCause: 'Busy' }, settings()).restartStatusClock).toBe(false);
  });

  it('when a lead enters another status, then the clock starts again', () => {
    expect(restartsStatusClock('RedialAutomatic', 'RedialManualPrivate')).toBe(true);
    expect(restartsStatusClock('New', 'Unresolved')).toBe(true);
    expect(restartsStatusClock('Unresolved', 'RedialManualCommon')).toBe(true);
    expect(restartsStatusClock('New', 'UserProcessed')).toBe(true);
  });

  it('when the status stays, then the clock keeps running', () => {
    for (const s of ALL) expect(restartsStatusClock(s, s)).toBe(false);
  });
});

describe('every outcome', () => {
  it('when any call outcome is recorded on any lead, then the result is an allowed move with consistent call fields', () => {
    const flags: Partial<CallOutcome>[] = [{}, { failed: true }, { alternativeNumber: true }, { transferred: true }];
    const actions = [undefined, ...AGENT_ACTIONS];
    const bad: string[] = [];
    for (const status of ALL) {
      for (const endCause of CallEndCause.names) {
        for (const agentAction of actions) {
          for (const f of flags) {
            for (const maxAttempts of [null, 1, 3]) {
              const r = recordCallOutcome(
                { status, attempts: 1 },
                { endCause, agentAction, closure: 'Success', ...f },
                settings({ maxAttempts }),
              );
              const ok =
                isTransitionAllowed(status, r.leadStatus) &&
                CallLeadStatus.has(r.callLeadStatus) &&
                (r.callLeadClosure !== null) === (r.callLeadStatus === 'UserProcessed') &&
                (r.leadStatus === 'UserProcessed' || r.closure === 'NotSet' || ADMIN.includes(r.leadStatus)) &&
                !['Unresolved', 'Removed', 'Anonymized'].includes(r.callLeadStatus) &&
                r.statusChanged === (r.leadStatus !== status);
              if (!ok) bad.push(JSON.stringify({ status, endCause, agentAction, f, maxAttempts, r }));
            }
          }
        }
      }
    }
    expect(bad).toEqual([]);
  });
});
