import type { Readable } from 'node:stream';
import { useTestApp } from '../harness/useTestWorld';
import { createExportFixture, ExportFixture } from '../harness/exportFixture';
import { ExportSession, poolConnections } from '../../src/data/exportSession';
import { transcodeCopy } from '../../src/export/copyTranscode';
import { callCopySql, leadCopySql, rawLeadCopySql, readyPeriodCopySql } from '../../src/data/exportQueries';
import { streamCalls, streamReadyPeriods } from '../../src/data/callRepository';
import type { CallSubject } from '../../src/domain/callSubject';
import { loadOrgSnapshot } from '../../src/data/organizationRepository';
import { loadLeadLookups, openLeadCursor, openRawLeadCursor } from '../../src/data/leadRepository';
import { projectScope } from '../../src/data/projectScope';
import { jsonArrayText, rowsToText } from '../../src/streams/rowsToText';
import {
  callToCsvLine,
  callToJsonText,
  flattenedCallHeader,
  readyPeriodToJson,
  ReadyPeriodRow,
  CallRow,
} from '../../src/domain/callSerializer';
import { callCsvTranscoder, callJsonTranscoder, readyPeriodJsonTranscoder } from '../../src/export/callTranscoder';
import { leadCsvTranscoder, leadJsonTranscoder, rawLeadTranscoder } from '../../src/export/leadTranscoder';
import {
  dataColumns,
  leadCsvHeader,
  leadToCsvLine,
  leadToJsonText,
  leadVisibilityByCampaign,
  rawLeadLines,
  rawLeadsHeader,
  visibleFieldsByDefinition,
} from '../../src/domain/leadSerializer';
import type { LeadRow, RawLeadRow } from '../../src/domain/leadRecords';
import type { DateTimeFormatName, EntryAccessName } from '../../src/domain/enums';
import type { TupleRenderer } from '../../src/export/byteWriter';
import type { LeadFilter } from '../../src/domain/leadFilters';

/**
 * The transcoded exports (binary COPY → bytes) against the reference serializers (cursor rows
 * → text), byte for byte, over generated data with every field shape (tests/harness/exportFixture.ts):
 * every include, separators of every kind, each entry access, filters.
 */

const ZONE = 'Europe/Copenhagen';
const t = useTestApp();
let f: ExportFixture;

beforeAll(async () => {
  f = await createExportFixture(t, { calls: 1500, leads: 600 });
}, 120_000);

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks);
}

/** Where two outputs first differ, with some context, for a readable failure. */
function firstDifference(a: Buffer, b: Buffer): string | undefined {
  if (a.equals(b)) return undefined;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const around = (x: Buffer) => JSON.stringify(x.subarray(Math.max(0, i - 80), i + 80).toString('utf8'));
  return `differ at byte ${i} of ${a.length}/${b.length}:\nreference  ${around(a)}\ntranscoded ${around(b)}`;
}

/** Runs a transcoder over the COPY of `sql` in an export session whose reads come first. */
async function transcoded<T>(
  prepare: (db: ExportSession['db']) => Promise<T>,
  sql: (x: T) => string,
  renderer: (x: T) => TupleRenderer,
): Promise<Buffer> {
  const session = await ExportSession.open(poolConnections(t.db));
  let copy: Readable;
  let x: T;
  try {
    x = await prepare(session.db);
    copy = await session.copy(sql(x));
  } catch (err) {
    await session.close();
    throw err;
  }
  const out = await collect(transcodeCopy(copy, renderer(x)));
  await session.closed;
  return out;
}

const pool = () => (t.db.client as { pool: { numUsed(): number } }).pool;

describe('transcoded calls exports equal the reference serializers', () => {
  const subject = async (): Promise<CallSubject> => ({
    kind: 'unit',
    unitId: (await t.db<{ id: number; org_code: string }>('org_units').where({ org_code: f.root }).first('id'))!.id,
    level: 0,
  });
  const window = async (limit?: number) => ({
    subject: await subject(),
    start: f.window.start,
    end: f.window.end,
    ...(limit ? { limit } : {}),
  });

  const includes = [
    '',
    'campaign',
    'user',
    'campaign,user',
    'Campaign,USER,unknown',
    'parent',
    'children',
    'users',
    'campaigns',
    'organizationalunits',
    'campaign,user,parent,children,users,campaigns',
    'user,campaigns,parent',
  ];

  const modes: DateTimeFormatName[] = ['Offset', 'Local'];

  it.each(modes.flatMap((m) => includes.map((i) => [i, m])))('JSON with Include=%s, DateTime %s', async (includeText, dateTimeFormat) => {
    const include = new Set(
      includeText
        .split(',')
        .filter(Boolean)
        .map((s) => s.toLowerCase()),
    );
    const mode = dateTimeFormat as DateTimeFormatName;
    const scope = projectScope(['*']);
    const w = await window();
    const org = await loadOrgSnapshot(t.db, scope);
    const reference = await collect(
      jsonArrayText<CallRow>(await streamCalls(t.db, { ...w, scope }), callToJsonText({ zone: ZONE, dateTimeFormat: mode, include, org })),
    );
    const out = await transcoded(
      (db) => loadOrgSnapshot(db, scope),
      (o) => callCopySql(t.db, w, [...o.campaigns.keys()]),
      (o) => callJsonTranscoder({ zone: ZONE, dateTimeFormat: mode, include, org: o }),
    );
    expect((JSON.parse(reference.toString()) as unknown[]).length).toBe(f.calls);
    expect(firstDifference(reference, out)).toBeUndefined();
  });

  it.each(modes.flatMap((m) => [';', ',', '\t', ' ', '|', '.', '-', 'x', '§', 'æ', '😀'].map((s) => [s, m])))(
    'CSV with separator %j, DateTime %s',
    async (separator, dateTimeFormat) => {
      const mode = dateTimeFormat as DateTimeFormatName;
      const scope = projectScope(['*']);
      const w = await window();
      const org = await loadOrgSnapshot(t.db, scope);
      const reference = await collect(
        rowsToText<CallRow>(await streamCalls(t.db, { ...w, scope }), {
          head: flattenedCallHeader(separator),
          format: callToCsvLine({ zone: ZONE, dateTimeFormat: mode, separator, org }),
          utf8: true,
        }),
      );
      const out = await transcoded(
        (db) => loadOrgSnapshot(db, scope),
        (o) => callCopySql(t.db, w, [...o.campaigns.keys()]),
        (o) => callCsvTranscoder({ zone: ZONE, dateTimeFormat: mode, separator, org: o }),
      );
      expect(firstDifference(reference, out)).toBeUndefined();
    },
  );

  it('when the account sees one project and a Limit applies, then both paths keep the same rows', async () => {
    const scope = projectScope([`GP-${f.id} Main*`]);
    const w = await window(700);
    const include = new Set(['campaign', 'user']);
    const org = await loadOrgSnapshot(t.db, scope);
    const reference = await collect(
      jsonArrayText<CallRow>(await streamCalls(t.db, { ...w, scope }), callToJsonText({ zone: ZONE, include, org })),
    );
    const out = await transcoded(
      (db) => loadOrgSnapshot(db, scope),
      (o) => callCopySql(t.db, w, [...o.campaigns.keys()]),
      (o) => callJsonTranscoder({ zone: ZONE, include, org: o }),
    );
    const rows = JSON.parse(reference.toString()) as unknown[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(f.calls);
    expect(firstDifference(reference, out)).toBeUndefined();
  });

  it('when a user is the subject, then both paths agree; an empty window is [] and a bare header', async () => {
    const scope = projectScope(['*']);
    const userId = (await t.db<{ id: number; org_code: string }>('users').where({ org_code: f.users[0] }).first('id'))!.id;
    const byUser = { subject: { kind: 'user' as const, userId }, start: f.window.start, end: f.window.end };
    const empty = { subject: await subject(), start: new Date('2001-01-01T00:00:00Z'), end: new Date('2001-01-02T00:00:00Z') };
    for (const w of [byUser, empty]) {
      const org = await loadOrgSnapshot(t.db, scope);
      const reference = await collect(
        jsonArrayText<CallRow>(await streamCalls(t.db, { ...w, scope }), callToJsonText({ zone: ZONE, include: new Set(), org })),
      );
      const out = await transcoded(
        (db) => loadOrgSnapshot(db, scope),
        (o) => callCopySql(t.db, w, [...o.campaigns.keys()]),
        (o) => callJsonTranscoder({ zone: ZONE, include: new Set(), org: o }),
      );
      expect(firstDifference(reference, out)).toBeUndefined();
    }
    const csv = await transcoded(
      (db) => loadOrgSnapshot(db, scope),
      (o) => callCopySql(t.db, empty, [...o.campaigns.keys()]),
      (o) => callCsvTranscoder({ zone: ZONE, separator: ';', org: o }),
    );
    expect(csv.toString()).toBe(flattenedCallHeader(';'));
  });

  it.each(modes.map((m) => [m]))('ready periods, DateTime %s: both paths agree', async (mode) => {
    const scope = projectScope(['*']);
    const w = { from: new Date('2026-04-01T00:00:00Z'), to: new Date('2026-07-01T00:00:00Z') };
    const org = await loadOrgSnapshot(t.db, scope, { users: false });
    const toPeriod = readyPeriodToJson(org, ZONE, mode);
    const reference = await collect(
      jsonArrayText<ReadyPeriodRow>(await streamReadyPeriods(t.db, { ...w, scope }), (r) => JSON.stringify(toPeriod(r))),
    );
    const out = await transcoded(
      (db) => loadOrgSnapshot(db, scope, { users: false }),
      (o) => readyPeriodCopySql(t.db, w, [...o.campaigns.keys()]),
      (o) => readyPeriodJsonTranscoder({ zone: ZONE, dateTimeFormat: mode, org: o }),
    );
    expect((JSON.parse(reference.toString()) as unknown[]).length).toBeGreaterThanOrEqual(60);
    expect(firstDifference(reference, out)).toBeUndefined();
  });

  afterAll(() => expect(pool().numUsed()).toBe(0));
});

describe('transcoded lead exports equal the reference serializers', () => {
  const filters = (): [string, LeadFilter][] => [
    ['every lead of the fixture', { projectPatterns: [f.projectPattern] }],
    [
      'open statuses, modified in May',
      {
        projectPatterns: [f.projectPattern],
        statuses: [0, 1, 2, 3, 10, 150],
        modifiedFrom: new Date('2026-05-01T00:00:00Z'),
        modifiedTo: new Date('2026-05-15T00:00:00Z'),
      },
    ],
    ['one campaign, two closures', { projectPatterns: [f.projectPattern], campaignKeys: [f.campaigns[1]!], closures: [1, 2] }],
  ];
  const accesses: EntryAccessName[] = ['Full', 'Partner', 'None'];

  const modes: DateTimeFormatName[] = ['Offset', 'Local'];

  it.each(modes.flatMap((m) => accesses.flatMap((a) => [0, 1, 2].map((i) => [a, i, m]))))(
    'JSON, entry access %s, filter %i, DateTime %s',
    async (access, i, m) => {
      const mode = m as DateTimeFormatName;
      const [, filter] = filters()[i as number]!;
      const scope = projectScope(['*']);
      const lookups = await loadLeadLookups(t.db, filter, scope);
      const visible = visibleFieldsByDefinition(lookups.definitions, access as EntryAccessName);
      const reference = await collect(
        jsonArrayText<LeadRow>(
          await openLeadCursor(t.db, filter, scope, access as EntryAccessName),
          leadToJsonText(ZONE, visible, lookups, mode),
        ),
      );
      const out = await transcoded(
        (db) => loadLeadLookups(db, filter, scope),
        (l) => leadCopySql(t.db, filter, leadVisibilityByCampaign(l, access as EntryAccessName)),
        (l) =>
          leadJsonTranscoder({
            zone: ZONE,
            dateTimeFormat: mode,
            lookups: l,
            visible: visibleFieldsByDefinition(l.definitions, access as EntryAccessName),
          }),
      );
      if (i === 0) expect((JSON.parse(reference.toString()) as unknown[]).length).toBe(f.leads);
      expect(firstDifference(reference, out)).toBeUndefined();
    },
  );

  it.each(
    accesses
      .flatMap((a) => [';', ',', '\t', '|', '§', '😀'].map((s) => [a, s, 'Offset']))
      .concat([
        ['Full', ';', 'Local'],
        ['Partner', '.', 'Local'],
        ['None', '-', 'Offset'],
      ]),
  )('CSV, entry access %s, separator %j, DateTime %s', async (access, separator, m) => {
    const mode = m as DateTimeFormatName;
    const [, filter] = filters()[0]!;
    const scope = projectScope(['*']);
    const lookups = await loadLeadLookups(t.db, filter, scope);
    const columns = dataColumns(lookups.definitions, access as EntryAccessName);
    const reference = await collect(
      rowsToText<LeadRow>(await openLeadCursor(t.db, filter, scope, access as EntryAccessName), {
        head: leadCsvHeader(columns, separator),
        format: leadToCsvLine({ zone: ZONE, dateTimeFormat: mode, separator: separator, columns, lookups }),
        utf8: true,
      }),
    );
    const out = await transcoded(
      (db) => loadLeadLookups(db, filter, scope),
      (l) => leadCopySql(t.db, filter, leadVisibilityByCampaign(l, access as EntryAccessName)),
      (l) =>
        leadCsvTranscoder({
          zone: ZONE,
          dateTimeFormat: mode,
          separator: separator,
          lookups: l,
          columns: dataColumns(l.definitions, access as EntryAccessName),
        }),
    );
    expect(firstDifference(reference, out)).toBeUndefined();
  });

  it.each(accesses.flatMap((a) => [';', ',', '§'].map((s) => [a, s])))(
    'RawLeads, entry access %s, separator %j',
    async (access, separator) => {
      const [, filter] = filters()[0]!;
      const scope = projectScope(['*']);
      const lookups = await loadLeadLookups(t.db, filter, scope);
      const visible = visibleFieldsByDefinition(lookups.definitions, access as EntryAccessName);
      const reference = await collect(
        rowsToText<RawLeadRow>(await openRawLeadCursor(t.db, filter, scope), {
          head: rawLeadsHeader(separator),
          format: rawLeadLines({ separator: separator, visible, lookups }),
          utf8: true,
        }),
      );
      const out = await transcoded(
        (db) => loadLeadLookups(db, filter, scope),
        (l) => rawLeadCopySql(t.db, filter, [...l.campaigns.keys()]),
        (l) =>
          rawLeadTranscoder({
            separator: separator,
            lookups: l,
            visible: visibleFieldsByDefinition(l.definitions, access as EntryAccessName),
          }),
      );
      expect(out.length).toBeGreaterThan(1000);
      expect(firstDifference(reference, out)).toBeUndefined();
    },
  );
});
