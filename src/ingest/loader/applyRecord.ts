import type { Knex } from 'knex';
import type { LoadRecord, RecordType } from './recordSchemas';
import { LoadReferences } from './references';
import type { Applier, ApplyContext } from './appliers/applier';
import { applyOrgUnit, applyUser } from './appliers/organization';
import { applyCampaign, applyLead, applyLeadDefinition } from './appliers/campaigns';
import { applyCall, applyReadyPeriod, applyRecording } from './appliers/calls';
import { applyCalendar, applyCalendarEvent } from './appliers/calendars';
import { applyAccount, applyRequestLimit, applySavedSearch } from './appliers/accounts';

/** One applier per record kind: a kind without one, or with the wrong one, does not compile. */
const APPLIERS: { [T in RecordType]: Applier<T> } = {
  orgUnit: applyOrgUnit,
  user: applyUser,
  leadDefinition: applyLeadDefinition,
  campaign: applyCampaign,
  lead: applyLead,
  call: applyCall,
  recording: applyRecording,
  readyPeriod: applyReadyPeriod,
  calendar: applyCalendar,
  calendarEvent: applyCalendarEvent,
  savedSearch: applySavedSearch,
  account: applyAccount,
  requestLimit: applyRequestLimit,
};

/**
 * Upserts records inside one transaction, each through the applier of its kind. References are
 * natural keys resolved once for the file (LoadReferences); a record keyed by `uniqueId`
 * without one gets a new id.
 */
export class RecordApplier {
  private readonly ctx: ApplyContext;

  constructor(trx: Knex.Transaction, zone: string, now: () => Date = () => new Date()) {
    this.ctx = { trx, zone, now, refs: new LoadReferences(trx) };
  }

  apply(record: LoadRecord): Promise<void> {
    // The map pairs each kind with its applier; TypeScript cannot follow that through the union.
    return (APPLIERS[record.type] as Applier<RecordType>)(record, this.ctx);
  }
}
