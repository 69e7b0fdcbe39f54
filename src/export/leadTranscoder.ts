import { ByteWriter, CsvQuoting, TupleRenderer } from './byteWriter';
import { DateTimeWriter } from './byteFormats';
import type { DateTimeFormatName } from '../domain/enums';
import { FlatJsonObject } from './jsonObjectScan';
import {
  campaignOf,
  DataColumns,
  LEAD_JSON,
  leadCsvHeader,
  poolOf,
  rawLeadsHeader,
  VisibleFields,
  visibleDataText,
} from '../domain/leadSerializer';
import { csvFieldWriters, FieldWriter, jsonArrayRenderer, jsonFieldWriters } from './fieldBytes';
import type { LeadLookups } from '../domain/leadRecords';
import { bool, int64, isNull, jsonbStart, text, Tuple } from './pgBinary';
import {
  LEAD_CAMPAIGN,
  LEAD_CLOSURE_DATA,
  LEAD_COPY_COLUMNS,
  LEAD_DATA,
  LEAD_HEAD_FIELDS,
  LEAD_POOL,
  LEAD_REFERENCES,
  LEAD_TIME_FIELDS,
  RAW_LEAD_COLUMNS,
} from '../domain/leadFields';

/**
 * Binary COPY tuples of the lead exports → the API's bytes, byte for byte what the reference
 * serializers (src/domain/leadSerializer.ts: leadToJsonText, leadToCsvLine, rawLeadLines)
 * write for the same leads; golden tests compare the two. The lead's own fields are written by
 * the writers derived from its field table (src/domain/leadFields.ts, src/export/fieldBytes.ts);
 * pools, campaigns and references are rendered once per id. The stored jsonb text of `data` and
 * `closureData` is copied as it is whenever the reference copies it; data fields for CSV are
 * found in that text by FlatJsonObject, with the reference's JSON.parse as the fallback for
 * anything but a flat object of strings.
 */

/** The position of a column in the lead COPY (LEAD_COPY_COLUMNS, then `data_visible`). */
function copyIndex(column: string): number {
  const i = LEAD_COPY_COLUMNS.indexOf(column);
  if (i < 0) throw new Error(`${column} is not a column of the lead COPY`);
  return i;
}
const HEAD = copyIndex(LEAD_HEAD_FIELDS[0].column);
const CAMPAIGN_ID = copyIndex(LEAD_CAMPAIGN.column);
const POOL_ID = copyIndex(LEAD_POOL.column);
const DATA = copyIndex(LEAD_DATA.column);
const TIMES = copyIndex(LEAD_TIME_FIELDS[0].column);
const REFERENCES = LEAD_REFERENCES.map((r) => copyIndex(r.column));
const CLOSURE_DATA = copyIndex(LEAD_CLOSURE_DATA.column);
const DATA_VISIBLE = LEAD_COPY_COLUMNS.length;

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

/** Where a field's bytes end in the tuple's buffer (a jsonb field's text starts at jsonbStart). */
function fieldEnd(t: Tuple, i: number): number {
  return t.pos[i]! + t.len[i]!;
}

export interface LeadTranscoderOptions {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  lookups: LeadLookups;
}

// ---- JSON -------------------------------------------------------------------------------------

const CLOSURE_DATA_KEY = utf8(LEAD_JSON.closureData);

/**
 * Lead tuples → a JSON array of Lead objects with compact references, as leadToJsonText
 * writes them (the export without `Include`; with it the reference path expands the
 * references, see docs/decisions.md).
 */
export function leadJsonTranscoder(options: LeadTranscoderOptions & { visible: VisibleFields }): TupleRenderer {
  const { lookups } = options;
  const time = new DateTimeWriter(options.zone, options.dateTimeFormat);
  const head = jsonFieldWriters(LEAD_HEAD_FIELDS, HEAD, time, true);
  const times = jsonFieldWriters(LEAD_TIME_FIELDS, TIMES, time);
  const visibleSets = new Map([...options.visible].map(([id, names]) => [id, new Set(names)]));
  const none = new Set<string>();
  const campaigns = new Map<number, { text: Buffer; visible: Set<string> }>();
  const campaignText = (id: number) => {
    let c = campaigns.get(id);
    if (c === undefined) {
      const campaign = campaignOf(lookups, id);
      c = { text: utf8(LEAD_JSON.campaign(campaign)), visible: visibleSets.get(campaign.leadDefinitionId) ?? none };
      campaigns.set(id, c);
    }
    return c;
  };
  const pool = byId((id) => utf8(LEAD_JSON.pool(poolOf(lookups, id))));
  const references = LEAD_REFERENCES.map((r, k) => ({
    i: REFERENCES[k]!,
    fragment: byId((id) => {
      const orgCode = lookups[r.of].get(id);
      return orgCode === undefined ? EMPTY : utf8(LEAD_JSON.reference(r, orgCode));
    }),
  }));
  return jsonArrayRenderer((t, w) => {
    for (const write of head) write(t, w);
    w.frag(pool(int64(t, POOL_ID)));
    const c = campaignText(int64(t, CAMPAIGN_ID));
    w.frag(c.text);
    const dataFrom = jsonbStart(t, DATA);
    if (bool(t, DATA_VISIBLE)) w.copy(t.buf, dataFrom, fieldEnd(t, DATA));
    else w.utf8(visibleDataText(t.buf.toString('utf8', dataFrom, fieldEnd(t, DATA)), false, c.visible));
    for (const write of times) write(t, w);
    for (const r of references) optionalId(w, t, r.i, r.fragment);
    w.frag(CLOSURE_DATA_KEY);
    w.copy(t.buf, jsonbStart(t, CLOSURE_DATA), fieldEnd(t, CLOSURE_DATA));
    w.byte(0x7d);
  });
}

// ---- CSV --------------------------------------------------------------------------------------

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
  const { lookups, columns, zone, dateTimeFormat } = options;
  const sepText = options.separator;
  const csv = new CsvQuoting(sepText);
  const s = csv.separator;
  const quote = (v: string) => csv.quoted(v);
  const head = csvFieldWriters(LEAD_HEAD_FIELDS, HEAD, { csv, separator: sepText, zone, dateTimeFormat });
  const times = csvFieldWriters(LEAD_TIME_FIELDS, TIMES, { csv, separator: sepText, zone, dateTimeFormat });
  // The cells of a run, separated; the separators before and after are the caller's.
  const cells = (writers: FieldWriter[], t: Tuple, w: ByteWriter) => {
    writers[0]!(t, w);
    for (let k = 1; k < writers.length; k++) {
      w.frag(s);
      writers[k]!(t, w);
    }
  };
  const pool = byId((id) => utf8(sepText + quote(poolOf(lookups, id))));
  const campaign = byId((id) => {
    const c = campaignOf(lookups, id);
    return utf8(sepText + quote(c.uniqueId) + sepText + quote(c.code) + sepText);
  });
  const references = LEAD_REFERENCES.map((r, k) => ({
    i: REFERENCES[k]!,
    fragment: byId((id) => {
      const orgCode = lookups[r.of].get(id);
      return orgCode === undefined ? EMPTY : utf8(quote(orgCode));
    }),
  }));
  const cellsByDefinition = new Map<number, DefinitionCells>();
  for (const [id, names] of columns.byDefinition) cellsByDefinition.set(id, definitionCells(names));
  const empty = utf8(sepText.repeat(columns.names.length) + '\r\n');
  const header = utf8(leadCsvHeader(columns, sepText));
  const scan = new FlatJsonObject();
  return {
    head: (w) => w.frag(header),
    tail: () => undefined,
    row(t, w) {
      cells(head, t, w);
      w.frag(pool(int64(t, POOL_ID)));
      const campaignId = int64(t, CAMPAIGN_ID);
      w.frag(campaign(campaignId));
      cells(times, t, w);
      for (const r of references) {
        w.frag(s);
        optionalId(w, t, r.i, r.fragment);
      }
      const definition = cellsByDefinition.get(campaignOf(lookups, campaignId).leadDefinitionId);
      if (definition === undefined) {
        w.frag(empty);
        return;
      }
      const b = t.buf;
      const from = jsonbStart(t, DATA);
      const to = fieldEnd(t, DATA);
      if (definition.inherited || !scan.scan(b, from, to)) {
        w.utf8(referenceCells(b.toString('utf8', from, to), definition.names, sepText, quote) + '\r\n');
        return;
      }
      for (let i = 0; i < definition.bytes.length; i++) {
        w.frag(s);
        const name = definition.bytes[i];
        if (name === undefined) continue;
        const k = member(scan, b, name, definition.names[i]!);
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

/** The position of a column in the RawLeads COPY (RAW_LEAD_COLUMNS). */
const rawIndex = (row: (typeof RAW_LEAD_COLUMNS)[number]['row']) => RAW_LEAD_COLUMNS.findIndex((c) => c.row === row);
const RAW_UNIQUE_ID = rawIndex('uniqueId');
const RAW_CAMPAIGN_ID = rawIndex('campaignId');
const RAW_DATA = rawIndex('data');

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
      const f = fields.get(campaignOf(lookups, int64(t, RAW_CAMPAIGN_ID)).leadDefinitionId);
      if (f === undefined) return;
      const b = t.buf;
      const from = jsonbStart(t, RAW_DATA);
      const to = fieldEnd(t, RAW_DATA);
      if (f.cells.inherited || !scan.scan(b, from, to)) {
        const data = JSON.parse(b.toString('utf8', from, to)) as Record<string, string>;
        const id = quote(text(t, RAW_UNIQUE_ID)) + sepText;
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
        csv.text(w, t, RAW_UNIQUE_ID);
        w.frag(f.prefixes[i]!);
        csvValue(csv, w, scan, b, k);
        w.byte(0x0d);
        w.byte(0x0a);
      }
    },
  };
}
