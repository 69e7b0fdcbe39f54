import { ByteWriter, CsvQuoting, TupleRenderer } from './byteWriter';
import { DateTimeWriter, writeMillis } from './byteFormats';
import { callToJson, CallRow, flattenedCallHeader } from '../domain/callSerializer';
import {
  CallEndCause,
  CallLeadStatus,
  CampaignType,
  DateTimeFormatName,
  Enumeration,
  LeadClosure,
  PreCallLeadStatus,
} from '../domain/enums';
import { formatDateTime } from '../domain/datetime';
import { formatMillis } from '../domain/timespan';
import { bool, integer, int64, isNull, timestampMs, Tuple } from './pgBinary';
import type { OrgSnapshot, OrgUnitRecord } from '../domain/organization';
import { CALL_COPY_COLUMNS } from '../domain/callFields';

/**
 * Binary COPY tuples of the calls export → the API's bytes, byte for byte what the reference
 * serializers (src/domain/callSerializer.ts: callToJsonText, callToCsvLine,
 * readyPeriodToJson) write for the same rows; golden tests compare the two over generated
 * data. Text fields are copied as bytes (escaped only where they must be), numbers and times
 * written as digits, enum names and every campaign, user and org-unit chain pre-rendered once
 * per request.
 */

const C = Object.fromEntries(CALL_COPY_COLUMNS.map((name, i) => [name, i])) as Record<(typeof CALL_COPY_COLUMNS)[number], number>;
const OU0 = C.ou0_id;

export interface CallTranscoderOptions {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  org: OrgSnapshot;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** Per stored number, a fragment holding the enum's name (`undefined` for numbers the enumeration lacks). */
function enumFragments(e: Enumeration<string>, render: (name: string) => string): (Buffer | undefined)[] {
  const out: (Buffer | undefined)[] = [];
  for (const name of e.names) out[e.toNumber(name)] = utf8(render(name));
  return out;
}

function enumFragment(table: (Buffer | undefined)[], n: number, what: string): Buffer {
  const f = table[n];
  if (f === undefined) throw new Error(`unknown ${what} number ${n}`);
  return f;
}

/**
 * Pre-rendered text per (campaign, user, org-unit chain) of a call, rendered once per distinct
 * combination. `byUser` false: the text depends on the chain alone.
 */
class ReferenceFragments {
  private readonly entries = new Map<number, ReferenceEntry[]>();
  private last: ReferenceEntry | undefined;
  private readonly ou = [0, 0, 0, 0, 0];

  constructor(
    private readonly keyed: { campaign: boolean; user: boolean },
    private readonly render: (campaignId: number, userId: number, units: number[]) => string,
  ) {}

  get(t: Tuple): Buffer {
    const campaign = this.keyed.campaign ? int64(t, C.campaign_id) : 0;
    const user = this.keyed.user ? int64(t, C.user_id) : 0;
    const ou = this.ou;
    let deepest = 0;
    for (let i = 0; i < 5; i++) {
      const v = isNull(t, OU0 + i) ? -1 : int64(t, OU0 + i);
      ou[i] = v;
      if (v >= 0) deepest = v;
    }
    const last = this.last;
    if (last !== undefined && last.campaign === campaign && last.user === user && sameChain(last.ou, ou)) return last.text;
    const key = this.keyed.user ? user : deepest;
    let list = this.entries.get(key);
    if (list === undefined) this.entries.set(key, (list = []));
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e.campaign === campaign && sameChain(e.ou, ou)) {
        this.last = e;
        return e.text;
      }
    }
    const units = ou.filter((v) => v >= 0);
    const text = Buffer.from(this.render(int64(t, C.campaign_id), int64(t, C.user_id), units), 'utf8');
    const entry: ReferenceEntry = { campaign, user, ou: [...ou], text };
    list.push(entry);
    this.last = entry;
    return text;
  }
}

interface ReferenceEntry {
  campaign: number;
  user: number;
  ou: number[];
  text: Buffer;
}

function sameChain(a: number[], b: number[]): boolean {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3] && a[4] === b[4];
}

/** A call row with only what the include engine reads for the complex properties. */
function referenceRow(campaignId: number, userId: number, units: number[]): CallRow {
  return {
    unique_id: '',
    unique_lead_id: '',
    lead_phone_number: '',
    lead_external_key: null,
    end_cause: CallEndCause.toNumber(CallEndCause.names[0]!),
    in_progress: false,
    connected: false,
    incoming: false,
    start_ms: 0,
    connect_ms: null,
    end_ms: null,
    preview_ms: 0,
    dialing_ms: null,
    conversation_ms: null,
    wrap_up_ms: null,
    lead_status: null,
    pre_call_lead_status: null,
    lead_closure: null,
    campaign_type: null,
    campaign_id: campaignId,
    user_id: userId,
    ou_chain: units.join(' '),
  };
}

// ---- JSON -------------------------------------------------------------------------------------

const JSON_END_CAUSE = enumFragments(CallEndCause, (n) => `,"endCause":"${n}"`);
const JSON_LEAD_STATUS = enumFragments(CallLeadStatus, (n) => `,"leadStatus":"${n}"`);
const JSON_PRE_CALL_LEAD_STATUS = enumFragments(PreCallLeadStatus, (n) => `,"preCallLeadStatus":"${n}"`);
const JSON_LEAD_CLOSURE = enumFragments(LeadClosure, (n) => `,"leadClosure":"${n}"`);
const JSON_CAMPAIGN_TYPE = enumFragments(CampaignType, (n) => `,"campaignType":"${n}"`);
const JSON_BOOL = (name: string) => [utf8(`,"${name}":false`), utf8(`,"${name}":true`)];
const IN_PROGRESS = JSON_BOOL('inProgress');
const CONNECTED = JSON_BOOL('connected');
const INCOMING = JSON_BOOL('incoming');
const F = (s: string) => utf8(s);
const UNIQUE_ID = F(',"uniqueId":');
const UNIQUE_LEAD_ID = F(',"uniqueLeadId":');
const LEAD_PHONE_NUMBER = F(',"leadPhoneNumber":');
const LEAD_EXTERNAL_KEY = F(',"leadExternalKey":');
const START_TIME = F(',"startTime":"');
const CONNECT_TIME = F(',"connectTime":"');
const END_TIME = F(',"endTime":"');
const PREVIEW = F(',"previewDuration":"');
const DIALING = F(',"dialingDuration":"');
const CONVERSATION = F(',"conversationDuration":"');
const WRAP_UP = F(',"wrapUpDuration":"');

/**
 * Call tuples → a JSON array of Call objects, as callToJsonText writes them, for every
 * `Include`: the complex properties (`campaign`, `user`, `organizationalUnits`, with whatever
 * nested names ask for) come first in a Call object and depend only on the call's campaign,
 * user and org-unit chain, so the include engine (callToJson) renders them once per
 * combination and the transcoder writes the call's own fields after them.
 */
export function callJsonTranscoder(options: CallTranscoderOptions & { include: ReadonlySet<string> }): TupleRenderer {
  const expand = callToJson({ zone: options.zone, dateTimeFormat: options.dateTimeFormat, include: options.include, org: options.org });
  const time = new DateTimeWriter(options.zone, options.dateTimeFormat);
  const keyed = options.include.size > 0;
  const references = new ReferenceFragments({ campaign: keyed, user: keyed }, (campaignId, userId, units) => {
    const call = expand(referenceRow(campaignId, userId, units));
    // `{` + the three complex properties, in their order, absent ones left out.
    const text = JSON.stringify({ campaign: call.campaign, user: call.user, organizationalUnits: call.organizationalUnits });
    return text.slice(0, text.length - 1);
  });
  let first = true;
  return {
    head: (w) => w.byte(0x5b),
    tail: (w) => w.byte(0x5d),
    row(t, w) {
      if (first) first = false;
      else w.byte(0x2c);
      w.frag(references.get(t));
      w.frag(UNIQUE_ID);
      w.jsonText(t, C.unique_id);
      w.frag(UNIQUE_LEAD_ID);
      w.jsonText(t, C.unique_lead_id);
      w.frag(LEAD_PHONE_NUMBER);
      w.jsonText(t, C.lead_phone_number);
      if (!isNull(t, C.lead_external_key)) {
        w.frag(LEAD_EXTERNAL_KEY);
        w.jsonText(t, C.lead_external_key);
      }
      w.frag(enumFragment(JSON_END_CAUSE, integer(t, C.end_cause), 'end cause'));
      w.frag(IN_PROGRESS[+bool(t, C.in_progress)]!);
      w.frag(CONNECTED[+bool(t, C.connected)]!);
      w.frag(INCOMING[+bool(t, C.incoming)]!);
      w.frag(START_TIME);
      time.write(w, timestampMs(t, C.start_time, 'floor'));
      w.byte(0x22);
      if (!isNull(t, C.connect_time)) {
        w.frag(CONNECT_TIME);
        time.write(w, timestampMs(t, C.connect_time, 'floor'));
        w.byte(0x22);
      }
      if (!isNull(t, C.end_time)) {
        w.frag(END_TIME);
        time.write(w, timestampMs(t, C.end_time, 'floor'));
        w.byte(0x22);
      }
      w.frag(PREVIEW);
      writeMillis(w, integer(t, C.preview_ms));
      w.byte(0x22);
      duration(w, t, C.dialing_ms, DIALING);
      duration(w, t, C.conversation_ms, CONVERSATION);
      duration(w, t, C.wrap_up_ms, WRAP_UP);
      optionalEnum(w, t, C.lead_status, JSON_LEAD_STATUS, 'call lead status');
      optionalEnum(w, t, C.pre_call_lead_status, JSON_PRE_CALL_LEAD_STATUS, 'pre-call lead status');
      optionalEnum(w, t, C.lead_closure, JSON_LEAD_CLOSURE, 'lead closure');
      optionalEnum(w, t, C.campaign_type, JSON_CAMPAIGN_TYPE, 'campaign type');
      w.byte(0x7d);
    },
  };
}

function duration(w: ByteWriter, t: Tuple, i: number, name: Buffer): void {
  if (isNull(t, i)) return;
  w.frag(name);
  writeMillis(w, integer(t, i));
  w.byte(0x22);
}

function optionalEnum(w: ByteWriter, t: Tuple, i: number, table: (Buffer | undefined)[], what: string): void {
  if (!isNull(t, i)) w.frag(enumFragment(table, integer(t, i), what));
}

// ---- CSV --------------------------------------------------------------------------------------

/** Separators that can occur in generated values (times, durations, enum names, booleans) make those quotable. */
const GENERATED_ALPHABET = /[0-9A-Za-z:.+\-"\r\n]/;

/**
 * Call tuples → FlattenedCall CSV lines, as callToCsvLine writes them (header line first).
 * With a separator that generated values can contain, times and durations go through the
 * reference formatters and the quoting function (the slow path for an odd separator).
 */
export function callCsvTranscoder(options: CallTranscoderOptions & { separator: string }): TupleRenderer {
  const { org, zone } = options;
  const separator = options.separator;
  const csv = new CsvQuoting(separator);
  const s = csv.separator;
  const sepText = separator;
  const generatedSafe = !GENERATED_ALPHABET.test(separator);
  const gen = (v: string) => (generatedSafe ? v : csv.quoted(v));
  const fragments = (e: Enumeration<string>) => enumFragments(e, (n) => gen(n));
  const endCause = fragments(CallEndCause);
  const leadStatus = fragments(CallLeadStatus);
  const preCall = fragments(PreCallLeadStatus);
  const closure = fragments(LeadClosure);
  const campaignType = fragments(CampaignType);
  const bools = [Buffer.from(gen('false')), Buffer.from(gen('true'))];
  const time = new DateTimeWriter(zone, options.dateTimeFormat);
  // The slow path for separators found in generated values.
  const writeTime = (w: ByteWriter, ms: number) =>
    generatedSafe ? time.write(w, ms) : w.utf8(gen(formatDateTime(ms, zone, options.dateTimeFormat)));
  const writeDuration = (w: ByteWriter, ms: number) => (generatedSafe ? writeMillis(w, ms) : w.utf8(gen(formatMillis(ms))));
  const q = (v: string) => csv.quoted(v);
  const references = new ReferenceFragments({ campaign: true, user: true }, (campaignId, userId, units) => {
    const c = org.campaigns.get(campaignId);
    const u = org.users.get(userId);
    const codes = units
      .map((id) => org.units.get(id))
      .filter((x): x is OrgUnitRecord => x !== undefined)
      .map((x) => q(x.orgCode));
    while (codes.length < 5) codes.push('');
    return (
      sepText +
      (c === undefined ? sepText + sepText : q(c.code) + sepText + q(c.name) + sepText + q(c.project)) +
      sepText +
      (u === undefined ? sepText + sepText : q(u.orgCode) + sepText + q(u.username) + sepText + q(u.name)) +
      sepText +
      codes.join(sepText) +
      '\r\n'
    );
  });
  const header = Buffer.from(flattenedCallHeader(separator), 'utf8');
  return {
    head: (w) => w.frag(header),
    tail: () => undefined,
    row(t, w) {
      csv.text(w, t, C.unique_id);
      w.frag(s);
      csv.text(w, t, C.unique_lead_id);
      w.frag(s);
      csv.text(w, t, C.lead_phone_number);
      w.frag(s);
      if (!isNull(t, C.lead_external_key)) csv.text(w, t, C.lead_external_key);
      w.frag(s);
      w.frag(enumFragment(endCause, integer(t, C.end_cause), 'end cause'));
      w.frag(s);
      w.frag(bools[+bool(t, C.in_progress)]!);
      w.frag(s);
      w.frag(bools[+bool(t, C.connected)]!);
      w.frag(s);
      w.frag(bools[+bool(t, C.incoming)]!);
      w.frag(s);
      writeTime(w, timestampMs(t, C.start_time, 'floor'));
      w.frag(s);
      if (!isNull(t, C.connect_time)) writeTime(w, timestampMs(t, C.connect_time, 'floor'));
      w.frag(s);
      if (!isNull(t, C.end_time)) writeTime(w, timestampMs(t, C.end_time, 'floor'));
      w.frag(s);
      writeDuration(w, integer(t, C.preview_ms));
      w.frag(s);
      if (!isNull(t, C.dialing_ms)) writeDuration(w, integer(t, C.dialing_ms));
      w.frag(s);
      if (!isNull(t, C.conversation_ms)) writeDuration(w, integer(t, C.conversation_ms));
      w.frag(s);
      if (!isNull(t, C.wrap_up_ms)) writeDuration(w, integer(t, C.wrap_up_ms));
      w.frag(s);
      if (!isNull(t, C.lead_status)) w.frag(enumFragment(leadStatus, integer(t, C.lead_status), 'call lead status'));
      w.frag(s);
      if (!isNull(t, C.pre_call_lead_status)) w.frag(enumFragment(preCall, integer(t, C.pre_call_lead_status), 'pre-call lead status'));
      w.frag(s);
      if (!isNull(t, C.lead_closure)) w.frag(enumFragment(closure, integer(t, C.lead_closure), 'lead closure'));
      w.frag(s);
      if (!isNull(t, C.campaign_type)) w.frag(enumFragment(campaignType, integer(t, C.campaign_type), 'campaign type'));
      w.frag(references.get(t));
    },
  };
}

// ---- agent ready periods ------------------------------------------------------------------------

const RP_CAMPAIGN_TYPE = enumFragments(CampaignType, (n) => `,"campaignType":"${n}"}`);

/** Ready-period tuples → a JSON array, as readyPeriodToJson and JSON.stringify write it. */
export function readyPeriodJsonTranscoder(options: CallTranscoderOptions): TupleRenderer {
  const { org } = options;
  const time = new DateTimeWriter(options.zone, options.dateTimeFormat);
  const campaigns = new Map<number, Buffer>();
  const campaignText = (id: number): Buffer => {
    let text = campaigns.get(id);
    if (text === undefined) {
      const c = org.campaigns.get(id);
      if (c === undefined) throw new Error(`campaign ${id} is not in the snapshot`);
      const campaign = {
        uniqueId: c.uniqueId,
        name: c.name,
        code: c.code,
        project: c.project,
        leadDefinitionUniqueId: c.leadDefinitionUniqueId,
        active: c.active,
      };
      text = Buffer.from(',"campaign":' + JSON.stringify(campaign) + ',"startTime":"', 'utf8');
      campaigns.set(id, text);
    }
    return text;
  };
  const UNIQUE = F('{"uniqueId":');
  const ORG_CODE = F(',"orgCode":');
  const SECONDS = F('","seconds":');
  let first = true;
  return {
    head: (w) => w.byte(0x5b),
    tail: (w) => w.byte(0x5d),
    row(t, w) {
      if (first) first = false;
      else w.byte(0x2c);
      w.frag(UNIQUE);
      w.jsonText(t, 0);
      w.frag(ORG_CODE);
      w.jsonText(t, 1);
      w.frag(campaignText(int64(t, 2)));
      time.write(w, timestampMs(t, 3, 'floor'));
      w.frag(SECONDS);
      w.int(integer(t, 4));
      w.frag(enumFragment(RP_CAMPAIGN_TYPE, integer(t, 5), 'campaign type'));
    },
  };
}
