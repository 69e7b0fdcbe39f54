/**
 * The one source of truth for enumerations: names travel on the wire, numbers are stored.
 * Numbers are the platform's published storage values where it has them; the others are
 * recorded in docs/decisions.md (Storage).
 */
export class Enumeration<Name extends string> {
  private readonly byName = new Map<string, number>();
  private readonly byLowerName = new Map<string, Name>();
  private readonly byNumber = new Map<number, Name>();

  constructor(
    readonly typeName: string,
    readonly values: Readonly<Record<Name, number>>,
  ) {
    for (const [name, num] of Object.entries(values) as [Name, number][]) {
      this.byName.set(name, num);
      this.byLowerName.set(name.toLowerCase(), name);
      this.byNumber.set(num, name);
    }
  }

  get names(): Name[] {
    return [...this.byName.keys()] as Name[];
  }

  /** Numeric storage value of a name (exact spelling). */
  toNumber(name: Name): number {
    const n = this.byName.get(name);
    if (n === undefined) throw new Error(`unknown ${this.typeName} ${name}`);
    return n;
  }

  /** Name of a stored number; throws on a number the enumeration lacks (a data bug). */
  toName(num: number): Name {
    const n = this.byNumber.get(num);
    if (n === undefined) throw new Error(`unknown ${this.typeName} number ${num}`);
    return n;
  }

  /** Lenient input parse: case-insensitive name; undefined when unknown. */
  parse(input: string): Name | undefined {
    return this.byLowerName.get(input.trim().toLowerCase());
  }

  has(input: string): boolean {
    return this.parse(input) !== undefined;
  }
}

export const LeadStatus = new Enumeration('LeadStatus', {
  New: 0,
  RedialAutomatic: 1,
  RedialManualCommon: 2,
  RedialManualPrivate: 3,
  VIPRedial: 10,
  Unresolved: 150,
  UserProcessed: 200,
  Depleted: 210,
  Abandoned: 300,
  Failed: 400,
  Expired: 500,
  Removed: 600,
  Anonymized: 610,
  DoNotCall: 700,
  GlobalDoNotCall: 750,
} as const);
export type LeadStatusName = (typeof LeadStatus.names)[number];

/** The open statuses (AllOpenStatuses in the OpenAPI document); every other status is closed. */
export const OPEN_LEAD_STATUSES: LeadStatusName[] = [
  'New',
  'RedialAutomatic',
  'RedialManualCommon',
  'RedialManualPrivate',
  'VIPRedial',
  'Unresolved',
];
export const CLOSED_LEAD_STATUSES: LeadStatusName[] = LeadStatus.names.filter((n) => !OPEN_LEAD_STATUSES.includes(n));

export const LeadClosure = new Enumeration('LeadClosure', {
  NotSet: 0,
  Success: 1,
  NotInterested: 2,
  InvalidLead: 3,
  Unqualified: 4,
} as const);
export type LeadClosureName = (typeof LeadClosure.names)[number];

/**
 * Call.leadStatus: the specification's CallStatus values plus the call-only ones (numbers in
 * docs/decisions.md, Storage; VIPRedial takes its LeadStatus number).
 */
export const CallLeadStatus = new Enumeration('CallLeadStatus', {
  NotSet: 0,
  RedialAutomatic: 1,
  RedialManualCommon: 2,
  RedialManualPrivate: 3,
  VIPRedial: 10,
  FollowUpRedial: 11,
  NextNumberDialed: 198,
  AlternativeNumberDialed: 199,
  UserProcessed: 200,
  Depleted: 210,
  Transferred: 220,
  ThirdPartyCall: 230,
  InternalCall: 240,
  Abandoned: 300,
  Failed: 400,
} as const);
export type CallLeadStatusName = (typeof CallLeadStatus.names)[number];

/** Call.preCallLeadStatus: LeadStatus numbers plus the two dialing states. */
export const PreCallLeadStatus = new Enumeration('PreCallLeadStatus', {
  New: 0,
  RedialAutomatic: 1,
  RedialManualCommon: 2,
  RedialManualPrivate: 3,
  VIPRedial: 10,
  Unresolved: 150,
  NextNumberDialed: 198,
  AlternativeNumberDialed: 199,
} as const);
export type PreCallLeadStatusName = (typeof PreCallLeadStatus.names)[number];

export const CallEndCause = new Enumeration('CallEndCause', {
  NotApplicable: 0,
  NormalDisconnect: 1,
  NoResponse: 2,
  Busy: 3,
  VoiceMail: 4,
  DroppedCall: 5,
  DialingCancelled: 6,
} as const);
export type CallEndCauseName = (typeof CallEndCause.names)[number];

export const CampaignType = new Enumeration('CampaignType', {
  Master: 0,
  PowerDialer: 1,
  BasketDialer: 2,
  PredictiveDialer: 3,
} as const);
export type CampaignTypeName = (typeof CampaignType.names)[number];

export const RecordingType = new Enumeration('RecordingType', {
  FullRecording: 0,
  PartialRecording: 1,
} as const);

/** Lead definition entry access; the order None < Partner < Full is the numeric order. */
export const EntryAccess = new Enumeration('EntryAccess', {
  None: 0,
  Partner: 1,
  Full: 2,
} as const);
export type EntryAccessName = (typeof EntryAccess.names)[number];

/**
 * How an account's answers write DateTimes (docs/decisions.md, Wire): `Offset`
 * (`2026-05-06T10:16:41.000+02:00`, the default) or `Local` (platform wall time, seven
 * fraction digits, no offset: `2026-05-06T10:16:41.0000000`).
 */
export const DateTimeFormat = new Enumeration('DateTimeFormat', {
  Offset: 0,
  Local: 1,
} as const);
export type DateTimeFormatName = (typeof DateTimeFormat.names)[number];

export const FIELD_TYPES = ['text', 'number', 'date', 'datetime', 'boolean', 'phone', 'email'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const RESOURCE_TYPES = [
  'Account',
  'Calls',
  'Campaigns',
  'Leads',
  'Organization',
  'LeadDefinitions',
  'SimpleLeads',
  'Calendars',
  'CalendarEvents',
  'WebHooks',
  'DoNoCallNumbers',
  'EntryGroupData',
  'Activities',
  'LeadSegments',
] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const VERBS = ['Get', 'Post', 'Put', 'Delete'] as const;
export type Verb = (typeof VERBS)[number];
