import { z } from 'zod';
import {
  CallEndCause,
  CallLeadStatus,
  CampaignType,
  Enumeration,
  DateTimeFormat,
  EntryAccess,
  FIELD_TYPES,
  LeadClosure,
  LeadStatus,
  PreCallLeadStatus,
  RecordingType,
  RESOURCE_TYPES,
  VERBS,
} from '../../domain/enums';
import { parseDateTime } from '../../domain/datetime';
import { parseTimeSpan, TimeSpan } from '../../domain/timespan';
import { DuplicateCheck, DuplicateKey, OnDuplicate } from '../../domain/duplicates';
import { canonicalUniqueId } from '../../domain/uniqueId';

/**
 * The record types of `lcm load` (docs/decisions.md, Loader; the README's table): one JSON object a line with a `type`. Field
 * names are the API's; references are natural keys. Unknown fields are errors, so a typo
 * stops the load instead of silently dropping data.
 */
export function recordSchemas(zone: string) {
  const text = z.string().min(1, 'must not be empty');
  const optText = z.string().optional();
  const dateTime = z.string().transform((v, ctx) => {
    try {
      return parseDateTime(v, zone);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `is not an ISO 8601 DateTime (${(err as Error).message})` });
      return z.NEVER;
    }
  });
  const timeSpan = z.string().transform((v, ctx): TimeSpan => {
    try {
      return parseTimeSpan(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `is not a TimeSpan (${(err as Error).message})` });
      return z.NEVER;
    }
  });
  const enumName = <N extends string>(e: Enumeration<N>, allowed?: readonly N[]) =>
    z.string().transform((v, ctx) => {
      const name = e.parse(v);
      if (name === undefined || (allowed && !allowed.includes(name))) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${(allowed ?? e.names).join(', ')}` });
        return z.NEVER;
      }
      return name;
    });
  // A UUID is stored as the API writes it and reads it (lower case, no braces), so the API finds
  // it however a client spells it (docs/decisions.md, Wire conventions).
  const uniqueId = z.string().min(1).transform(canonicalUniqueId).optional();
  const idReference = text.transform(canonicalUniqueId);

  const orgUnit = z.strictObject({ type: z.literal('orgUnit'), orgCode: text, name: text, parent: optText, uniqueId });
  const user = z.strictObject({
    type: z.literal('user'),
    orgCode: text,
    username: text,
    name: text,
    parent: optText,
    email: optText,
    inboundPhoneNumber: optText,
    roles: z.array(z.string()).optional(),
    campaigns: z.array(z.string()).optional(),
    employeeNumber: optText,
    payrollNumber: optText,
    uniqueId,
  });
  const leadDefinition = z.strictObject({
    type: z.literal('leadDefinition'),
    name: text,
    uniqueId,
    fields: z
      .array(
        z.strictObject({
          name: text,
          importName: optText,
          type: z.enum(FIELD_TYPES),
          required: z.boolean().optional(),
          sortOrder: z.number().int().optional(),
          editable: z.boolean().optional(),
          access: enumName(EntryAccess).optional(),
          externalKey: z.boolean().optional(),
        }),
      )
      .min(1, 'needs at least one field'),
  });
  const campaign = z.strictObject({
    type: z.literal('campaign'),
    code: text,
    name: text,
    project: text,
    leadDefinition: text,
    campaignType: enumName(CampaignType),
    uniqueId,
    maxAttempts: z.number().int().positive().optional(),
    abandonAfter: timeSpan.optional(),
    expireAfter: timeSpan.optional(),
    privateExpireAfter: timeSpan.optional(),
    active: z.boolean().optional(),
    // Import defaults of the duplicate check (docs/decisions.md, Duplicates on import).
    duplicateCheck: enumName(DuplicateCheck).optional(),
    duplicateKey: enumName(DuplicateKey).optional(),
    duplicateWindow: timeSpan
      .refine((ts) => !ts.negative && Boolean(ts.years || ts.months || ts.days || ts.hours || ts.minutes || ts.seconds), 'must be positive')
      .optional(),
    onDuplicate: enumName(OnDuplicate).optional(),
  });
  const lead = z.strictObject({
    type: z.literal('lead'),
    campaign: text,
    data: z.record(z.string(), z.string()),
    uniqueId,
    pool: optText,
    status: enumName(LeadStatus).optional(),
    closure: enumName(LeadClosure).optional(),
    priority: z.number().int().optional(),
    uploadTime: dateTime.optional(),
    lastModifiedTime: dateTime.optional(),
    firstProcessedTime: dateTime.optional(),
    ownerOrgUnit: optText,
    uploadedByUser: optText,
    lastModifiedByUser: optText,
    firstProcessedByUser: optText,
  });
  const call = z.strictObject({
    type: z.literal('call'),
    campaign: text,
    user: text,
    organizationalUnits: z.array(text).min(1).max(5).optional(),
    uniqueId,
    uniqueLeadId: idReference,
    leadPhoneNumber: text,
    leadExternalKey: optText,
    endCause: enumName(CallEndCause),
    inProgress: z.boolean(),
    connected: z.boolean(),
    incoming: z.boolean(),
    startTime: dateTime,
    connectTime: dateTime.optional(),
    endTime: dateTime.optional(),
    previewDuration: timeSpan,
    dialingDuration: timeSpan.optional(),
    conversationDuration: timeSpan.optional(),
    wrapUpDuration: timeSpan.optional(),
    leadStatus: enumName(CallLeadStatus).optional(),
    preCallLeadStatus: enumName(PreCallLeadStatus).optional(),
    leadClosure: enumName(LeadClosure).optional(),
    campaignType: enumName(CampaignType).optional(),
    applyOutcome: z.boolean().optional(),
  });
  const recording = z.strictObject({
    type: z.literal('recording'),
    call: idReference,
    startTime: dateTime,
    endTime: dateTime.optional(),
    recordingType: enumName(RecordingType),
    fileName: text,
  });
  const readyPeriod = z.strictObject({
    type: z.literal('readyPeriod'),
    orgCode: text,
    campaign: text,
    startTime: dateTime,
    seconds: z.number().int().min(0),
    uniqueId,
  });
  const calendar = z.strictObject({ type: z.literal('calendar'), code: text, name: optText, project: text });
  const calendarEvent = z.strictObject({
    type: z.literal('calendarEvent'),
    uniqueId,
    calendarCode: text,
    leadUniqueId: z.string().transform(canonicalUniqueId),
    title: z.string(),
    notes: z.string(),
    start: dateTime,
    end: dateTime,
    source: z.string(),
    externalId: z.string(),
  });
  const savedSearch = z.strictObject({
    type: z.literal('savedSearch'),
    user: text,
    name: text,
    campaigns: z.array(text).optional(),
    projects: z.array(text).optional(),
    statuses: z.array(enumName(LeadStatus)).optional(),
    leadClosures: z.array(enumName(LeadClosure)).optional(),
    allOpenStatuses: z.boolean().optional(),
    allClosedStatuses: z.boolean().optional(),
  });
  const account = z.strictObject({
    type: z.literal('account'),
    username: text,
    password: text,
    user: text,
    projects: z.array(text),
    rights: z.partialRecord(z.enum(RESOURCE_TYPES), z.array(z.enum(VERBS))),
    entryAccess: enumName(EntryAccess),
    dateTimeFormat: enumName(DateTimeFormat).optional(),
    enabled: z.boolean().optional(),
  });
  const requestLimit = z.strictObject({
    type: z.literal('requestLimit'),
    account: text,
    service: text,
    dailyLimit: z.number().int().positive(),
  });

  return {
    orgUnit,
    user,
    leadDefinition,
    campaign,
    lead,
    call,
    recording,
    readyPeriod,
    calendar,
    calendarEvent,
    savedSearch,
    account,
    requestLimit,
  };
}

type Schemas = ReturnType<typeof recordSchemas>;
export type RecordType = keyof Schemas;
export type LoadRecord<T extends RecordType = RecordType> = z.output<Schemas[T]>;
export const RECORD_TYPES: RecordType[] = Object.keys(recordSchemas('UTC')) as RecordType[];
