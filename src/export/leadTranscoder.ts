import { ByteWriter, CsvQuoting, TupleRenderer } from './byteWriter';
import { DateTimeWriter } from './byteFormats';
import { formatDateTime } from '../domain/datetime';
import { DateTimeFormatName, LeadClosure, LeadStatus } from '../domain/enums';
import { FlatJsonObject } from './jsonObjectScan';
import { campaignOf, DataColumns, leadCsvHeader, poolOf, rawLeadsHeader, VisibleFields } from '../domain/leadSerializer';
import { enumFragments, jsonArrayRenderer } from './fieldBytes';
import type { LeadLookups } from '../domain/leadRecords';
import { bool, int64, integer, isNull, jsonbStart, timestampMs, Tuple } from './pgBinary';
import { LEAD_COPY_COLUMNS } from '../domain/leadFields';

/**
 * Binary COPY tuples of the lead exports → the API's bytes, byte for byte what the reference
 * serializers (src/domain/leadSerializer.ts: leadToJsonText, leadToCsvLine, rawLeadLines)
 * write for the same leads; golden tests compare the two. The stored jsonb text of `data` and
 * `closureData` is copied as it is whenever the reference copies it; data fields for CSV are
 * found in that text by FlatJsonObject, with the reference's JSON.parse as the fallback for
 * anything but a flat object of strings.
 */

const L = Object.fromEntries(LEAD_COPY_COLUMNS.map((name, i) => [name, i])) as Record<(typeof LEAD_COPY_COLUMNS)[number], number>;

const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** Fragments by id, rendered once each. */
function byId(render: (id: number) => Buffer): (id: number) => Buffer {
  const cache = new Map<number, Buffer>();
  return (id) => {
    let f = cache.get(id);
    if (f === undefined) cache.set(id, (f = render(id)));
    return f;
  };
}

const EMPTY = Buffer.alloc(0);

/** An optional reference column's fragment: nothing for NULL. */
function optionalId(w: ByteWriter, t: Tuple, i: number, fragment: (id: number) => Buffer): void {
  if (!isNull(t, i)) w.frag(fragment(int64(t, i)));
}

export interface LeadTranscoderOptions {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  lookups: LeadLookups;
}

// ---- JSON -------------------------------------------------------------------------------------

const JSON_STATUS = enumFragments(LeadStatus, 'lead status', (n) => `,"status":"${n}"`);
const JSON_CLOSURE = enumFragments(LeadClosure, 'lead closure', (n) => `,"closure":"${n}","priority":`);
const UNIQUE_ID = utf8('{"uniqueId":');
const PHONE = utf8(',"phoneNumber":');
const EXTERNAL_KEY = utf8(',"externalKey":');
const UPLOAD_TIME = utf8(',"uploadTime":"');
const LAST_MODIFIED_TIME = utf8('","lastModifiedTime":"');
const FIRST_PROCESSED_TIME = utf8(',"firstProcessedTime":"');
const CLOSURE_DATA = utf8(',"closureData":');

/**
 * Lead tuples → a JSON array of Lead objects with compact references, as leadToJsonText
 * writes them (the export without `Include`; with it the reference path expands the
 * references, see docs/decisions.md).
 */
export function leadJsonTranscoder(options: LeadTranscoderOptions & { visible: VisibleFields }): TupleRenderer {
  const { lookups } = options;
  const q = JSON.stringify;
  const time = new DateTimeWriter(options.zone, options.dateTimeFormat);
  const visibleSets = new Map([...options.visible].map(([id, names]) => [id, new Set(names)]));
  const none = new Set<string>();
  const campaigns = new Map<number, { text: Buffer; visible: Set<string> }>();
  const campaignText = (id: number) => {
    let c = campaigns.get(id);
    if (c === undefined) {
      const campaign = campaignOf(lookups, id);
      c = {
        text: utf8(',"campaign":{"uniqueId":' + q(campaign.uniqueId) + ',"code":' + q(campaign.code) + '},"data":'),
        visible: visibleSets.get(campaign.leadDefinitionId) ?? none,
      };
      campaigns.set(id, c);
    }
    return c;
  };
  const pool = byId((id) => utf8(',"pool":' + q(poolOf(lookups, id))));
  const reference = (name: string, map: Map<number, string>) =>
    byId((id) => {
      const orgCode = map.get(id);
      return orgCode === undefined ? EMPTY : utf8(',"' + name + '":{"orgCode":' + q(orgCode) + '}');
    });
  const owner = reference('ownerOrgUnit', lookups.units);
  const uploadedBy = reference('uploadedByUser', lookups.users);
  const lastModifiedBy = reference('lastModifiedByUser', lookups.users);
  const firstProcessedBy = reference('firstProcessedByUser', lookups.users);
  return jsonArrayRenderer((t, w) => {
    w.frag(UNIQUE_ID);
    w.jsonText(t, L.unique_id);
    w.frag(JSON_STATUS(integer(t, L.status)));
    w.frag(JSON_CLOSURE(integer(t, L.closure)));
    w.int(integer(t, L.priority));
    if (!isNull(t, L.phone_number)) {
      w.frag(PHONE);
      w.jsonText(t, L.phone_number);
    }
    if (!isNull(t, L.external_key)) {
      w.frag(EXTERNAL_KEY);
      w.jsonText(t, L.external_key);
    }
    w.frag(pool(int64(t, L.pool_id)));
    const c = campaignText(int64(t, L.campaign_id));
    w.frag(c.text);
    const dataFrom = jsonbStart(t, L.data);
    const dataTo = t.pos[L.data]! + t.len[L.data]!;
    if (bool(t, L.data_visible)) w.copy(t.buf, dataFrom, dataTo);
    else w.utf8(visibleDataText(t.buf.toString('utf8', dataFrom, dataTo), c.visible));
    w.frag(UPLOAD_TIME);
    time.write(w, timestampMs(t, L.upload_time, 'float'));
    w.frag(LAST_MODIFIED_TIME);
    time.write(w, timestampMs(t, L.last_modified_time, 'float'));
    w.byte(0x22);
    if (!isNull(t, L.first_processed_time)) {
      w.frag(FIRST_PROCESSED_TIME);
      time.write(w, timestampMs(t, L.first_processed_time, 'float'));
      w.byte(0x22);
    }
    optionalId(w, t, L.owner_org_unit_id, owner);
    optionalId(w, t, L.uploaded_by_user_id, uploadedBy);
    optionalId(w, t, L.last_modified_by_user_id, lastModifiedBy);
    optionalId(w, t, L.first_processed_by_user_id, firstProcessedBy);
    w.frag(CLOSURE_DATA);
    const closureFrom = jsonbStart(t, L.closure_data);
    w.copy(t.buf, closureFrom, t.pos[L.closure_data]! + t.len[L.closure_data]!);
    w.byte(0x7d);
  });
}

/** The visible keys of the stored data only, as leadToJsonText writes them when some are hidden. */
function visibleDataText(json: string, visibleNames: Set<string>): string {
  const q = JSON.stringify;
  const values = JSON.parse(json) as Record<string, string>;
  let out = '';
  for (const name in values) if (visibleNames.has(name)) out += (out === '' ? '{' : ',') + q(name) + ':' + q(values[name]);
  return out === '' ? '{}' : out + '}';
}

// ---- CSV --------------------------------------------------------------------------------------

/** Separators that can occur in generated values (times, digits, enum names). */
const GENERATED_ALPHABET = /[0-9A-Za-z:.+\-"\r\n]/;

/** Per lead definition: the field name of each data column, as bytes to find it in the stored text. */
interface DefinitionCells {
  names: (string | undefined)[];
  bytes: (Buffer | undefined)[];
  /** A name JSON.parse'd objects inherit (`constructor`): only the reference's own lookup gives its answer. */
  inherited: boolean;
}

function definitionCells(names: (string | undefined)[]): DefinitionCells {
  return {
    names,
    bytes: names.map((n) => (n === undefined ? undefined : utf8(n))),
    inherited: names.some((n) => n !== undefined && n in Object.prototype),
  };
}

/** The index of the member named `name` in a scanned object, or -1. */
function member(scan: FlatJsonObject, b: Buffer, name: Buffer, nameText: string): number {
  for (let k = 0; k < scan.count; k++) if (scan.keyIs(b, k, name, nameText)) return k;
  return -1;
}

/** Writes member k's string value, quoted for CSV. */
function csvValue(csv: CsvQuoting, w: ByteWriter, scan: FlatJsonObject, b: Buffer, k: number): void {
  const from = scan.valueStart[k]!;
  const to = scan.valueEnd[k]!;
  if (scan.valueEscaped[k]) csv.string(w, JSON.parse(b.toString('utf8', from - 1, to + 1)) as string);
  else csv.bytes(w, b, from, to);
}

/**
 * Lead tuples → the saved-search CSV lines, as leadToCsvLine writes them (header line
 * first): the lead columns, then one column per visible data field of the definitions in
 * scope.
 */
export function leadCsvTranscoder(options: LeadTranscoderOptions & { separator: string; columns: DataColumns }): TupleRenderer {
  const { lookups, columns, zone } = options;
  const sepText = options.separator;
  const csv = new CsvQuoting(sepText);
  const s = csv.separator;
  const quote = (v: string) => csv.quoted(v);
  const generatedSafe = !GENERATED_ALPHABET.test(sepText);
  const digitsSafe = !/[0-9-]/.test(sepText);
  const status = enumFragments(LeadStatus, 'lead status', (n) => quote(n) + sepText);
  const closure = enumFragments(LeadClosure, 'lead closure', (n) => quote(n) + sepText);
  const time = new DateTimeWriter(zone, options.dateTimeFormat);
  const timeText = (ms: number) => formatDateTime(ms, zone, options.dateTimeFormat);
  const writeTime = (w: ByteWriter, t: Tuple, i: number) => {
    if (isNull(t, i)) return;
    const ms = timestampMs(t, i, 'float');
    if (generatedSafe) time.write(w, ms);
    else csv.string(w, timeText(ms));
  };
  const pool = byId((id) => utf8(quote(poolOf(lookups, id)) + sepText));
  const campaign = byId((id) => {
    const c = campaignOf(lookups, id);
    return utf8(quote(c.uniqueId) + sepText + quote(c.code) + sepText);
  });
  const code = (map: Map<number, string>) =>
    byId((id) => {
      const orgCode = map.get(id);
      return orgCode === undefined ? EMPTY : utf8(quote(orgCode));
    });
  const unitCode = code(lookups.units);
  const userCode = code(lookups.users);
  const cellsByDefinition = new Map<number, DefinitionCells>();
  for (const [id, names] of columns.byDefinition) cellsByDefinition.set(id, definitionCells(names));
  const empty = utf8(sepText.repeat(columns.names.length) + '\r\n');
  const header = utf8(leadCsvHeader(columns, sepText));
  const scan = new FlatJsonObject();
  return {
    head: (w) => w.frag(header),
    tail: () => undefined,
    row(t, w) {
      csv.text(w, t, L.unique_id);
      w.frag(s);
      w.frag(status(integer(t, L.status)));
      w.frag(closure(integer(t, L.closure)));
      const priority = integer(t, L.priority);
      if (digitsSafe) w.int(priority);
      else csv.string(w, String(priority));
      w.frag(s);
      if (!isNull(t, L.phone_number)) csv.text(w, t, L.phone_number);
      w.frag(s);
      if (!isNull(t, L.external_key)) csv.text(w, t, L.external_key);
      w.frag(s);
      w.frag(pool(int64(t, L.pool_id)));
      const campaignId = int64(t, L.campaign_id);
      w.frag(campaign(campaignId));
      writeTime(w, t, L.upload_time);
      w.frag(s);
      writeTime(w, t, L.last_modified_time);
      w.frag(s);
      writeTime(w, t, L.first_processed_time);
      w.frag(s);
      optionalId(w, t, L.owner_org_unit_id, unitCode);
      w.frag(s);
      optionalId(w, t, L.uploaded_by_user_id, userCode);
      w.frag(s);
      optionalId(w, t, L.last_modified_by_user_id, userCode);
      w.frag(s);
      optionalId(w, t, L.first_processed_by_user_id, userCode);
      const cells = cellsByDefinition.get(campaignOf(lookups, campaignId).leadDefinitionId);
      if (cells === undefined) {
        w.frag(empty);
        return;
      }
      const b = t.buf;
      const from = jsonbStart(t, L.data);
      const to = t.pos[L.data]! + t.len[L.data]!;
      if (cells.inherited || !scan.scan(b, from, to)) {
        w.utf8(referenceCells(b.toString('utf8', from, to), cells.names, sepText, quote) + '\r\n');
        return;
      }
      for (let i = 0; i < cells.bytes.length; i++) {
        w.frag(s);
        const name = cells.bytes[i];
        if (name === undefined) continue;
        const k = member(scan, b, name, cells.names[i]!);
        if (k >= 0) csvValue(csv, w, scan, b, k);
      }
      w.byte(0x0d);
      w.byte(0x0a);
    },
  };
}

/** The data cells as leadToCsvLine writes them from JSON.parse (values of any JSON type). */
function referenceCells(json: string, names: (string | undefined)[], s: string, quote: (v: string) => string): string {
  const data = JSON.parse(json) as Record<string, string>;
  let line = '';
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const value = name === undefined ? undefined : data[name];
    line += s + (value === undefined ? '' : quote(value));
  }
  return line;
}

// ---- RawLeads -----------------------------------------------------------------------------------

/** Raw-lead tuples → `UniqueLeadId;FieldName;FieldValue` lines, as rawLeadLines writes them (header first). */
export function rawLeadTranscoder(options: { separator: string; visible: VisibleFields; lookups: LeadLookups }): TupleRenderer {
  const { lookups } = options;
  const sepText = options.separator;
  const csv = new CsvQuoting(sepText);
  const quote = (v: string) => csv.quoted(v);
  // Per definition: the visible field names in sort order, and `quote(name);` of each.
  const fields = new Map<number, { cells: DefinitionCells; prefixes: Buffer[] }>();
  for (const [id, names] of options.visible) {
    fields.set(id, { cells: definitionCells(names), prefixes: names.map((n) => utf8(sepText + quote(n) + sepText)) });
  }
  const header = utf8(rawLeadsHeader(sepText));
  const scan = new FlatJsonObject();
  return {
    head: (w) => w.frag(header),
    tail: () => undefined,
    row(t, w) {
      const f = fields.get(campaignOf(lookups, int64(t, 1)).leadDefinitionId);
      if (f === undefined) return;
      const b = t.buf;
      const from = jsonbStart(t, 2);
      const to = t.pos[2]! + t.len[2]!;
      if (f.cells.inherited || !scan.scan(b, from, to)) {
        const data = JSON.parse(b.toString('utf8', from, to)) as Record<string, string>;
        const id = quote(t.buf.toString('utf8', t.pos[0], t.pos[0]! + t.len[0]!)) + sepText;
        let out = '';
        for (const name of f.cells.names as string[]) {
          const value = data[name];
          if (value !== undefined) out += id + quote(name) + sepText + quote(value) + '\r\n';
        }
        w.utf8(out);
        return;
      }
      for (let i = 0; i < f.prefixes.length; i++) {
        const k = member(scan, b, f.cells.bytes[i]!, f.cells.names[i]!);
        if (k < 0) continue;
        csv.text(w, t, 0);
        w.frag(f.prefixes[i]!);
        csvValue(csv, w, scan, b, k);
        w.byte(0x0d);
        w.byte(0x0a);
      }
    },
  };
}
