import {
  CALL_FIELDS,
  CALL_REFERENCE_CSV_NAMES,
  CallRow,
  READY_PERIOD_HEAD_FIELDS,
  READY_PERIOD_TAIL_FIELDS,
  ReadyPeriodRow,
  RECORDING_FIELDS,
  RecordingRow,
} from './callFields';
import type { DateTimeFormatName } from './enums';
import { csvCells, csvNames, objectRenderer } from './fieldTable';
import { compileIncludes, Expander, IncludeType } from './include';
import { csvQuoter } from './textEscaping';
import type { OrgSnapshot, OrgUnitRecord } from './organization';
import { CAMPAIGN, ORG_UNIT, ORG_UNIT_PROPERTIES, organizationGraph, renderCampaign, renderOrgUnit, USER } from './organizationGraph';

/**
 * Call rows (as src/data/callRepository.ts selects them) → the Call object form (includes,
 * hooks, small reads), Call JSON text and FlattenedCall CSV lines (both in the OpenAPI
 * document) for the cursor path of the exports. The plain fields come from the field table
 * (src/domain/callFields.ts); the transcoded exports (src/export/callTranscoder.ts) derive
 * their bytes from the same table, and golden tests compare those bytes with this text, which
 * is plain JSON.stringify of the object form and CSV cells of its values.
 */

export type { CallRow } from './callFields';

/** FlattenedCall columns in their documented order (the OpenAPI document, /calls/csv). */
const FLATTENED_CALL_COLUMNS = [...csvNames(CALL_FIELDS), ...CALL_REFERENCE_CSV_NAMES];

/** The org units of a stored chain key (`ou0 ou1 ...`), root first. */
function chainUnits(chain: string, units: Map<number, OrgUnitRecord>): OrgUnitRecord[] {
  const out: OrgUnitRecord[] = [];
  for (const id of chain.split(' ')) {
    const unit = units.get(Number(id));
    if (unit !== undefined) out.push(unit);
  }
  return out;
}

/**
 * Per-request memo of a rendering by key (a chain key, a campaign or user id): calls share a
 * handful of chains, campaigns and users, so each is rendered once and the text reused.
 */
function memo<K, V>(render: (key: K) => V): (key: K) => V {
  const done = new Map<K, V>();
  return (key) => {
    let value = done.get(key);
    if (value === undefined) {
      value = render(key);
      done.set(key, value);
    }
    return value;
  };
}

export interface CallSerializerOptions {
  zone: string;
  /** How DateTimes are written (default `Offset`); one per request. */
  dateTimeFormat?: DateTimeFormatName;
  /** Lower-case include names (src/domain/include.ts parseIncludeNames). */
  include: ReadonlySet<string>;
  org: OrgSnapshot;
}

/** Whether a request's include names need the users in the snapshot. */
export function callIncludesNeedUsers(include: ReadonlySet<string>): boolean {
  return include.has('user') || include.has('users');
}

/**
 * Row → Call object, with `Include` expanded through the generic engine. `organizationalUnits`
 * is always present: when no OrgUnit property is requested it is the cached flat chain;
 * otherwise the chain goes through the engine as an always-named property, so parent,
 * children and users of those units follow the include rules (docs/decisions.md, Include engine) like any other.
 */
export function callToJson(options: CallSerializerOptions): Expander<CallRow> {
  const { org } = options;
  const fields = objectRenderer(CALL_FIELDS, options.zone, options.dateTimeFormat);
  const unitsExpand = ORG_UNIT_PROPERTIES.some((p) => options.include.has(p));
  // Flat org units are shared by every row of a chain (JSON.stringify does not mind sharing).
  const flatChain = memo((chain: string) => chainUnits(chain, org.units).map(renderOrgUnit));
  const call: IncludeType<CallRow> = {
    identity: (row) => row.unique_id,
    render: (row) =>
      fields(row, {
        campaign: undefined,
        user: undefined,
        organizationalUnits: unitsExpand ? undefined : flatChain(row.ou_chain),
      }),
    properties: {
      campaign: { type: CAMPAIGN, many: false, resolve: (row) => org.campaigns.get(row.campaign_id) },
      user: { type: USER, many: false, resolve: (row) => org.users.get(row.user_id) },
      ...(unitsExpand
        ? { organizationalUnits: { type: ORG_UNIT, many: true, resolve: (row: CallRow) => chainUnits(row.ou_chain, org.units) } }
        : {}),
    },
  };
  const names = new Set(options.include);
  if (unitsExpand) names.add('organizationalunits');
  return compileIncludes<CallRow>(organizationGraph(org, { Call: call }), 'Call', names);
}

/** Row → Call JSON text: JSON.stringify of the object form. */
export function callToJsonText(options: CallSerializerOptions): (row: CallRow) => string {
  const expand = callToJson(options);
  return (row) => JSON.stringify(expand(row));
}

/** The header line of the CSV export (CRLF included). */
export function flattenedCallHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return FLATTENED_CALL_COLUMNS.map(quote).join(separator) + '\r\n';
}

/**
 * Row → one FlattenedCall CSV line (CRLF included): the fields' values of the object form
 * (absent values empty), then the campaign, user and org-unit columns, quoted and joined once
 * per campaign, user and chain of the request's snapshot.
 */
export function callToCsvLine(options: {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  separator: string;
  org: OrgSnapshot;
}): (row: CallRow) => string {
  const { org } = options;
  const s = options.separator;
  const quote = csvQuoter(s);
  const fields = objectRenderer(CALL_FIELDS, options.zone, options.dateTimeFormat);
  const cells = csvCells(CALL_FIELDS, s, quote);
  // campaignCode;campaignName;campaignProject — empty when the snapshot lacks the campaign.
  const campaign = memo((id: number) => {
    const c = org.campaigns.get(id);
    return c === undefined ? s + s : quote(c.code) + s + quote(c.name) + s + quote(c.project);
  });
  // userOrgCode;userUsername;userName
  const user = memo((id: number) => {
    const u = org.users.get(id);
    return u === undefined ? s + s : quote(u.orgCode) + s + quote(u.username) + s + quote(u.name);
  });
  // organizationalUnit0OrgCode..organizationalUnit4OrgCode
  const chain = memo((key: string) => {
    const codes = chainUnits(key, org.units).map((u) => quote(u.orgCode));
    while (codes.length < 5) codes.push('');
    return codes.join(s);
  });
  return (r) => cells(fields(r, {})) + s + campaign(r.campaign_id) + s + user(r.user_id) + s + chain(r.ou_chain) + '\r\n';
}

export type { ReadyPeriodRow, RecordingRow } from './callFields';

export function recordingToJson(zone: string, format?: DateTimeFormatName): (row: RecordingRow) => Record<string, unknown> {
  const fields = objectRenderer(RECORDING_FIELDS, zone, format);
  return (row) => fields(row, {});
}

/** Ready-period row → AgentReadyPeriod object: its fields, with the campaign (from the snapshot) after `orgCode`. */
export function readyPeriodToJson(
  org: OrgSnapshot,
  zone: string,
  format?: DateTimeFormatName,
): (row: ReadyPeriodRow) => Record<string, unknown> {
  const head = objectRenderer(READY_PERIOD_HEAD_FIELDS, zone, format);
  const tail = objectRenderer(READY_PERIOD_TAIL_FIELDS, zone, format);
  const campaigns = new Map<number, Record<string, unknown>>();
  return (row) => {
    let campaign = campaigns.get(row.campaign_id);
    if (campaign === undefined) {
      const c = org.campaigns.get(row.campaign_id);
      if (c === undefined) throw new Error(`campaign ${row.campaign_id} is not in the snapshot`);
      campaign = renderCampaign(c);
      campaigns.set(row.campaign_id, campaign);
    }
    const out = head(row, {});
    out.campaign = campaign;
    return tail(row, out);
  };
}
