import request from 'supertest';
import { useTestApp } from '../harness/useTestWorld';
import { createExportFixture, ExportFixture } from '../harness/exportFixture';
import { CsvRowParser } from '../../src/streams/csvRows';

/**
 * Every bulk export endpoint, answered by two apps over the same data: one on the binary COPY
 * transcoder (the default), one with EXPORT_TRANSCODER=false (the reference serializers over a
 * cursor). Status, headers and body bytes must be the same, for includes, subjects, limits,
 * filters, entry access levels, separators and encodings, over generated data with every field
 * shape (tests/harness/exportFixture.ts).
 */

const fast = useTestApp();
const reference = useTestApp({ EXPORT_TRANSCODER: 'false' });
let f: ExportFixture;
const NOW = new Date('2026-05-07T12:00:00Z');

beforeAll(async () => {
  f = await createExportFixture(fast, { calls: 1200, leads: 500, seed: 23 });
  fast.setNow(NOW);
  reference.setNow(NOW);
}, 120_000);

function binary(res: request.Response, callback: (err: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => callback(null, Buffer.concat(chunks)));
}

async function both(path: string, auth: string, prefer?: string): Promise<{ status: number; bytes: number; body: Buffer }> {
  fast.setNow(NOW);
  reference.setNow(NOW);
  const get = (app: typeof fast) => {
    const r = request(app.app).get(path).set('Authorization', auth);
    if (prefer) r.set('Prefer', prefer);
    return r.buffer(true).parse(binary);
  };
  const [a, b] = await Promise.all([get(fast), get(reference)]);
  const headers = (r: request.Response) => ({
    status: r.status,
    type: r.headers['content-type'],
    disposition: r.headers['content-disposition'],
    encoding: r.headers['content-encoding'],
    applied: r.headers['preference-applied'],
  });
  expect(headers(a)).toEqual(headers(b));
  const x = a.body as Buffer;
  const y = b.body as Buffer;
  if (!x.equals(y)) {
    let i = 0;
    while (i < x.length && i < y.length && x[i] === y[i]) i++;
    throw new Error(
      `${path}: bodies differ at byte ${i} of ${x.length}/${y.length}: ${JSON.stringify(x.subarray(Math.max(0, i - 60), i + 60).toString('latin1'))} vs ${JSON.stringify(y.subarray(Math.max(0, i - 60), i + 60).toString('latin1'))}`,
    );
  }
  return { status: a.status, bytes: x.length, body: x };
}

const q = (params: Record<string, string>) => new URLSearchParams(params).toString();
const WINDOW = () => ({ StartTime: '1900-01-01T00:00:00Z', TimeSpan: 'P8099Y' });

describe('calls family: transcoder and reference answer the same bytes', () => {
  it.each(['', 'campaign', 'user', 'campaign,user', 'parent,children', 'user,campaigns,users'])(
    'GET /api/calls with Include=%j',
    async (include) => {
      const r = await both(
        `/api/calls?${q({ OrgCode: f.root, ...WINDOW(), ...(include ? { Include: include } : {}) })}`,
        f.accounts.full.auth,
      );
      expect(r.status).toBe(200);
      expect(r.bytes).toBeGreaterThan(100_000);
    },
  );

  it('GET /api/calls, /api/calls/csv and agentreadyperiods with Prefer: datetime=local', async () => {
    const local = await both(`/api/calls?${q({ OrgCode: f.root, ...WINDOW(), Include: 'user' })}`, f.accounts.full.auth, 'datetime=local');
    expect(local.bytes).toBeGreaterThan(100_000);
    expect(local.body.toString()).toMatch(/"startTime":"2026-05-\d\dT\d\d:\d\d:\d\d\.\d{7}"/);
    await both(`/api/calls/csv?${q({ OrgCode: f.root, ...WINDOW(), Encoding: 'windows-1252' })}`, f.accounts.full.auth, 'datetime=local');
    await both(`/api/calls/agentreadyperiods?${q({ FromTime: '2026-04-01', TimeSpan: 'P90D' })}`, f.accounts.full.auth, 'datetime=local');
  });

  it('GET /api/calls for one user, with a Limit, for the restricted account', async () => {
    expect((await both(`/api/calls?${q({ OrgCode: f.users[0]!, ...WINDOW(), Limit: '300' })}`, f.accounts.restricted.auth)).status).toBe(
      200,
    );
    expect((await both(`/api/calls?${q({ OrgCode: f.root, ...WINDOW() })}`, f.accounts.restricted.auth)).status).toBe(200);
  });

  it('GET /api/users/{OrgCode}/calls and /api/organizationalunits/{OrgCode}/calls', async () => {
    expect((await both(`/api/users/${encodeURIComponent(f.users[1]!)}/calls?${q(WINDOW())}`, f.accounts.full.auth)).status).toBe(200);
    expect(
      (
        await both(
          `/api/organizationalunits/${encodeURIComponent(f.units.a2)}/calls?${q({ ...WINDOW(), Include: 'campaign' })}`,
          f.accounts.full.auth,
        )
      ).status,
    ).toBe(200);
  });

  it('when the window is empty or the org code unknown, then both answer alike', async () => {
    expect((await both(`/api/calls?${q({ OrgCode: f.root, StartTime: '2001-01-01', TimeSpan: 'P1D' })}`, f.accounts.full.auth)).bytes).toBe(
      2,
    );
    expect((await both(`/api/calls?${q({ OrgCode: `nobody-${f.id}`, ...WINDOW() })}`, f.accounts.full.auth)).status).toBe(400);
    expect((await both(`/api/users/${encodeURIComponent(f.units.a1)}/calls?${q(WINDOW())}`, f.accounts.full.auth)).status).toBe(404);
  });

  it.each([
    [';', 'utf-8'],
    [',', 'windows-1252'],
    ['\t', 'iso-8859-1'],
    ['|', 'utf-16le'],
    ['§', 'shift_jis'],
    ['x', 'UTF8'],
    [';', 'ibm850'],
  ])('GET /api/calls/csv with separator %j in %s', async (separator, encoding) => {
    const r = await both(
      `/api/calls/csv?${q({ OrgCode: f.root, ...WINDOW(), CsvFieldSeparator: separator, Encoding: encoding })}`,
      f.accounts.full.auth,
    );
    expect(r.status).toBe(200);
    expect(r.bytes).toBeGreaterThan(100_000);
  });

  it('GET /api/calls/agentreadyperiods', async () => {
    const r = await both(`/api/calls/agentreadyperiods?${q({ FromTime: '2026-04-01', TimeSpan: 'P90D' })}`, f.accounts.full.auth);
    expect(r.status).toBe(200);
    expect(r.bytes).toBeGreaterThan(5000);
  });
});

describe('lead exports: transcoder and reference answer the same bytes', () => {
  const accounts = () => [f.accounts.full.auth, f.accounts.partner.auth, f.accounts.none.auth, f.accounts.restricted.auth];

  it.each([0, 1, 2, 3])('GET /api/simpleleads for account %i, with filters', async (i) => {
    const auth = accounts()[i]!;
    expect((await both(`/api/simpleleads?${q({ Projects: f.projectPattern })}`, auth)).bytes).toBeGreaterThan(i === 3 ? 1000 : 50_000);
    await both(
      `/api/simpleleads?${q({ Projects: f.projectPattern, AllOpenStatuses: 'true', ModifiedFrom: '2026-05-01', ModifiedTo: '2026-05-20' })}`,
      auth,
    );
    await both(
      `/api/simpleleads?${q({ Projects: f.projectPattern, Campaigns: f.campaigns[1]!, LeadClosures: 'Success,NotInterested' })}`,
      auth,
    );
  });

  it('GET /api/simpleleads with Include (the reference path on both) and with no lead', async () => {
    await both(`/api/simpleleads?${q({ Projects: f.projectPattern, Include: 'campaign,uploadedByUser' })}`, f.accounts.full.auth);
    expect((await both(`/api/simpleleads?${q({ Projects: `nothing-${f.id}` })}`, f.accounts.full.auth)).bytes).toBe(2);
  });

  it('the lead exports with Prefer: datetime=local', async () => {
    await both(`/api/simpleleads?${q({ Projects: f.projectPattern })}`, f.accounts.partner.auth, 'datetime=local');
    await both(`/api/leads/csv?${q({ searchName: f.savedSearch, modifiedFrom: '1900-01-01' })}`, f.accounts.full.auth, 'datetime=local');
  });

  it('GET /api/leads (saved search) as JSON', async () => {
    expect((await both(`/api/leads?${q({ searchName: f.savedSearch, modifiedFrom: '1900-01-01' })}`, f.accounts.partner.auth)).status).toBe(
      200,
    );
  });

  it.each([
    [';', 'utf-8', 0],
    [',', 'windows-1252', 1],
    ['\t', 'utf-16le', 2],
    ['§', 'iso-8859-1', 0],
  ])('GET /api/leads/csv with separator %j in %s (account %i)', async (separator, encoding, i) => {
    const path = `/api/leads/csv?${q({ searchName: f.savedSearch, modifiedFrom: '1900-01-01', CsvFieldSeparator: separator, Encoding: encoding })}`;
    expect((await both(path, accounts()[i]!)).bytes).toBeGreaterThan(20_000);
  });

  it('when the account does not reach the phone or the external-key field, then both paths leave phoneNumber and externalKey out, in JSON and CSV', async () => {
    type Lead = { campaign: { code: string }; phoneNumber?: string; externalKey?: string };
    const json = async (auth: string) =>
      JSON.parse((await both(`/api/simpleleads?${q({ Projects: f.projectPattern })}`, auth)).body.toString('utf8')) as Lead[];
    const csv = async (auth: string) => {
      const path = `/api/leads/csv?${q({ searchName: f.savedSearch, modifiedFrom: '1900-01-01' })}`;
      const parser = new CsvRowParser(';', 1 << 20);
      const [header, ...rows] = [...parser.write((await both(path, auth)).body.toString('utf8')), ...parser.end()].map((r) =>
        'values' in r ? r.values : [],
      );
      const cells = (name: string) => rows.map((r) => r[header!.indexOf(name)]!);
      return { phones: cells('phoneNumber'), keys: cells('externalKey') };
    };
    const count = (values: (string | undefined)[]) => values.filter((v) => v !== undefined && v !== '').length;

    // Full sees both where they are set, but not in the third campaign, whose definition has neither field.
    const full = await json(f.accounts.full.auth);
    expect(count(full.map((l) => l.phoneNumber))).toBeGreaterThan(100);
    expect(count(full.map((l) => l.externalKey))).toBeGreaterThan(100);
    const third = full.filter((l) => l.campaign.code === f.campaigns[2]);
    expect(third.length).toBeGreaterThan(10);
    expect(count(third.flatMap((l) => [l.phoneNumber, l.externalKey]))).toBe(0);
    // Partner reaches the phone field, not the key field; None neither (a phone field it does see is not the first).
    const partner = await json(f.accounts.partner.auth);
    expect(count(partner.map((l) => l.phoneNumber))).toBe(count(full.map((l) => l.phoneNumber)));
    expect(count(partner.map((l) => l.externalKey))).toBe(0);
    const none = await json(f.accounts.none.auth);
    expect(count(none.flatMap((l) => [l.phoneNumber, l.externalKey]))).toBe(0);

    const fullCsv = await csv(f.accounts.full.auth);
    expect(count(fullCsv.phones)).toBeGreaterThan(100);
    expect(count(fullCsv.keys)).toBeGreaterThan(100);
    const partnerCsv = await csv(f.accounts.partner.auth);
    expect(count(partnerCsv.phones)).toBe(count(fullCsv.phones));
    expect(count(partnerCsv.keys)).toBe(0);
    const noneCsv = await csv(f.accounts.none.auth);
    expect(count([...noneCsv.phones, ...noneCsv.keys])).toBe(0);
  });

  it.each([
    [';', 'utf-8', 0],
    [',', 'windows-1252', 1],
    ['|', 'shift_jis', 2],
  ])('GET /api/rawleads with separator %j in %s (account %i)', async (separator, encoding, i) => {
    const path = `/api/rawleads?${q({ Projects: f.projectPattern, CsvFieldSeparator: separator, Encoding: encoding })}`;
    expect((await both(path, accounts()[i]!)).bytes).toBeGreaterThan(10_000);
  });
});
