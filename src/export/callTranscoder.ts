import { CsvQuoting, TupleRenderer } from './byteWriter';
import { DateTimeWriter } from './byteFormats';
import { callToJson, flattenedCallHeader } from '../domain/callSerializer';
import { renderCampaign } from '../domain/organizationGraph';
import { CALL_FIELDS, CallRow, READY_PERIOD_HEAD_FIELDS, READY_PERIOD_TAIL_FIELDS } from '../domain/callFields';
import { CallEndCause, DateTimeFormatName } from '../domain/enums';
import { csvFieldWriters, FieldWriter, jsonArrayRenderer, jsonFieldWriters } from './fieldBytes';
import { int64, isNull, Tuple } from './pgBinary';
import type { OrgSnapshot, OrgUnitRecord } from '../domain/organization';

/**
 * Binary COPY tuples of the calls export → the API's bytes, byte for byte what the reference
 * serializers (src/domain/callSerializer.ts: callToJsonText, callToCsvLine,
 * readyPeriodToJson) write for the same rows; golden tests compare the two over generated
 * data. The call's own fields are written by the writers derived from its field table
 * (src/domain/callFields.ts, src/export/fieldBytes.ts); every campaign, user and org-unit
 * chain is pre-rendered once per request.
 */

// The COPY columns: the fields of CALL_FIELDS, then CALL_REFERENCE_COLUMNS.
const CAMPAIGN_ID = CALL_FIELDS.length;
const USER_ID = CAMPAIGN_ID + 1;
const OU0 = CAMPAIGN_ID + 2;

export interface CallTranscoderOptions {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  org: OrgSnapshot;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');

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
    const campaign = this.keyed.campaign ? int64(t, CAMPAIGN_ID) : 0;
    const user = this.keyed.user ? int64(t, USER_ID) : 0;
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
    const text = Buffer.from(this.render(int64(t, CAMPAIGN_ID), int64(t, USER_ID), units), 'utf8');
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

/**
 * Call tuples → a JSON array of Call objects, as callToJsonText writes them, for every
 * `Include`: the complex properties (`campaign`, `user`, `organizationalUnits`, with whatever
 * nested names ask for) come first in a Call object and depend only on the call's campaign,
 * user and org-unit chain, so the include engine (callToJson) renders them once per
 * combination and the transcoder writes the call's own fields after them.
 */
export function callJsonTranscoder(options: CallTranscoderOptions & { include: ReadonlySet<string> }): TupleRenderer {
  const expand = callToJson({ zone: options.zone, dateTimeFormat: options.dateTimeFormat, include: options.include, org: options.org });
  const keyed = options.include.size > 0;
  const references = new ReferenceFragments({ campaign: keyed, user: keyed }, (campaignId, userId, units) => {
    const call = expand(referenceRow(campaignId, userId, units));
    // `{` + the three complex properties, in their order, absent ones left out.
    const text = JSON.stringify({ campaign: call.campaign, user: call.user, organizationalUnits: call.organizationalUnits });
    return text.slice(0, text.length - 1);
  });
  const fields = jsonFieldWriters(CALL_FIELDS, 0, new DateTimeWriter(options.zone, options.dateTimeFormat));
  return jsonArrayRenderer((t, w) => {
    w.frag(references.get(t));
    for (const write of fields) write(t, w);
    w.byte(0x7d);
  });
}

// ---- CSV --------------------------------------------------------------------------------------

/**
 * Call tuples → FlattenedCall CSV lines, as callToCsvLine writes them (header line first).
 * With a separator that generated values can contain, times and durations go through the
 * reference formatters and the quoting function (the slow path for an odd separator).
 */
export function callCsvTranscoder(options: CallTranscoderOptions & { separator: string }): TupleRenderer {
  const { org, separator } = options;
  const csv = new CsvQuoting(separator);
  const s = csv.separator;
  const sepText = separator;
  const fields: FieldWriter[] = csvFieldWriters(CALL_FIELDS, 0, {
    csv,
    separator,
    zone: options.zone,
    dateTimeFormat: options.dateTimeFormat,
  });
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
      fields[0]!(t, w);
      for (let k = 1; k < fields.length; k++) {
        w.frag(s);
        fields[k]!(t, w);
      }
      w.frag(references.get(t));
    },
  };
}

// ---- agent ready periods ------------------------------------------------------------------------

// The COPY columns: READY_PERIOD_HEAD_FIELDS, the campaign id, READY_PERIOD_TAIL_FIELDS.
const RP_CAMPAIGN_ID = READY_PERIOD_HEAD_FIELDS.length;

/** Ready-period tuples → a JSON array, as readyPeriodToJson and JSON.stringify write it. */
export function readyPeriodJsonTranscoder(options: CallTranscoderOptions): TupleRenderer {
  const { org } = options;
  const time = new DateTimeWriter(options.zone, options.dateTimeFormat);
  const head = jsonFieldWriters(READY_PERIOD_HEAD_FIELDS, 0, time, true);
  const tail = jsonFieldWriters(READY_PERIOD_TAIL_FIELDS, RP_CAMPAIGN_ID + 1, time);
  const campaigns = new Map<number, Buffer>();
  const campaignText = (id: number): Buffer => {
    let text = campaigns.get(id);
    if (text === undefined) {
      const c = org.campaigns.get(id);
      if (c === undefined) throw new Error(`campaign ${id} is not in the snapshot`);
      text = utf8(',"campaign":' + JSON.stringify(renderCampaign(c)));
      campaigns.set(id, text);
    }
    return text;
  };
  return jsonArrayRenderer((t, w) => {
    for (const write of head) write(t, w);
    w.frag(campaignText(int64(t, RP_CAMPAIGN_ID)));
    for (const write of tail) write(t, w);
    w.byte(0x7d);
  });
}
