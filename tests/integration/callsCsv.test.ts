import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import request from 'supertest';
import iconv from 'iconv-lite';
import { csvFormatter } from '../../src/streams/csv';
import { useTestWorld } from '../harness/useTestWorld';
import type { ProblemFieldError } from '../../src/http/problem';

/** GET /api/calls/csv: FlattenedCall rows, RFC 4180, encodings, separators and the file name. */

const { t, w } = useTestWorld();
let awkwardCampaign: string;
let accentUser: string;
let emojiUnit: string;

const HEADER =
  'uniqueId;uniqueLeadId;leadPhoneNumber;leadExternalKey;endCause;inProgress;connected;incoming;startTime;connectTime;endTime;' +
  'previewDuration;dialingDuration;conversationDuration;wrapUpDuration;leadStatus;preCallLeadStatus;leadClosure;campaignType;' +
  'campaignCode;campaignName;campaignProject;userOrgCode;userUsername;userName;' +
  'organizationalUnit0OrgCode;organizationalUnit1OrgCode;organizationalUnit2OrgCode;organizationalUnit3OrgCode;organizationalUnit4OrgCode';

const WINDOW = { StartTime: '2026-05-06T10:00:00', TimeSpan: 'PT2H' };

beforeAll(async () => {
  awkwardCampaign = `AWK-${w.id}`;
  accentUser = `accent-${w.id}`;
  emojiUnit = `Salg Ærø 📞 ${w.id}`;
  await t.load(
    { type: 'orgUnit', orgCode: emojiUnit, name: 'Salg', parent: w.units.root },
    {
      type: 'campaign',
      code: awkwardCampaign,
      name: 'Sale; "Big"\nNew',
      project: w.projects.b2b,
      leadDefinition: w.leadDefinition,
      campaignType: 'BasketDialer',
    },
    { type: 'user', orgCode: accentUser, username: `accent-user-${w.id}`, name: 'Åse Éclair æøå', parent: w.units.team },
    {
      type: 'call',
      uniqueId: `${w.id}-full`,
      campaign: w.campaigns.b2b,
      user: w.users.agent,
      uniqueLeadId: `lead-${w.id}`,
      leadPhoneNumber: '+4512345678',
      leadExternalKey: 'CUST-1',
      endCause: 'NormalDisconnect',
      inProgress: false,
      connected: true,
      incoming: true,
      startTime: '2026-05-06T10:00:00+02:00',
      connectTime: '2026-05-06T10:00:07.250+02:00',
      endTime: '2026-05-06T10:12:49.250+02:00',
      previewDuration: 'PT5S',
      dialingDuration: 'PT7.25S',
      conversationDuration: 'PT12M42S',
      wrapUpDuration: 'PT30S',
      leadStatus: 'UserProcessed',
      preCallLeadStatus: 'New',
      leadClosure: 'Success',
    },
    {
      type: 'call',
      uniqueId: `${w.id}-awkward`,
      campaign: awkwardCampaign,
      user: accentUser,
      uniqueLeadId: `lead2-${w.id}`,
      leadPhoneNumber: '+45 1234,5678',
      endCause: 'Busy',
      inProgress: false,
      connected: false,
      incoming: false,
      startTime: '2026-05-06T11:00:00+02:00',
      previewDuration: 'PT0S',
    },
    {
      type: 'call',
      uniqueId: `${w.id}-retail`,
      campaign: w.campaigns.retail,
      user: w.users.other,
      uniqueLeadId: `lead3-${w.id}`,
      leadPhoneNumber: '+4587654321',
      endCause: 'NoResponse',
      inProgress: false,
      connected: false,
      incoming: false,
      startTime: '2026-05-06T11:30:00+02:00',
      previewDuration: 'PT1S',
    },
  );
});

function csv(query: Record<string, string>, auth = w.accounts.full.auth) {
  return request(t.app)
    .get('/api/calls/csv')
    .query(query)
    .set('Authorization', auth)
    .buffer(true)
    .parse((res, callback) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => callback(null, Buffer.concat(chunks)));
    });
}

const lines = (res: request.Response) => (res.body as Buffer).toString('utf8').split('\r\n');
/** The problem+json of a refused CSV request (read as a Buffer, as the CSV answers are). */
const problemErrors = (res: request.Response) => (JSON.parse((res.body as Buffer).toString()) as { errors: ProblemFieldError[] }).errors;

/** What fast-csv writes for the header and rows: the oracle of the hand-written CSV writer. */
async function fastCsv(headers: string[], separator: string, rows: string[][]): Promise<string> {
  const chunks: Buffer[] = [];
  await pipeline(Readable.from(rows, { objectMode: true }), csvFormatter({ headers, separator }), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) chunks.push(chunk);
  });
  return Buffer.concat(chunks).toString('utf8');
}

describe('GET /api/calls/csv', () => {
  it('when the export is asked, then the header row lists the FlattenedCall fields in their documented order and every line ends with CRLF', async () => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    const text = (res.body as Buffer).toString('utf8');
    expect(text.startsWith(HEADER + '\r\n')).toBe(true);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text.replace(/\r\n/g, '')).not.toMatch(/\r(?!\n)/);
  });

  it('when a call has every field, then its row holds them in column order, times and durations as in JSON', async () => {
    const res = await csv({ OrgCode: w.users.agent, ...WINDOW });
    expect(lines(res)[1]).toBe(
      [
        `${w.id}-full`,
        `lead-${w.id}`,
        '+4512345678',
        'CUST-1',
        'NormalDisconnect',
        'false',
        'true',
        'true',
        '2026-05-06T10:00:00.000+02:00',
        '2026-05-06T10:00:07.250+02:00',
        '2026-05-06T10:12:49.250+02:00',
        'PT5S',
        'PT7.25S',
        'PT12M42S',
        'PT30S',
        'UserProcessed',
        'New',
        'Success',
        'PowerDialer',
        w.campaigns.b2b,
        'B2B campaign',
        w.projects.b2b,
        w.users.agent,
        `agent-${w.id}`,
        'Agent Ærø',
        w.units.root,
        w.units.sales,
        w.units.team,
        '',
        '',
      ].join(';'),
    );
  });

  it('when values hold the separator, quotes or a line break, then they are quoted with quotes doubled and absent values are empty', async () => {
    const res = await csv({ OrgCode: accentUser, ...WINDOW });
    const text = (res.body as Buffer).toString('utf8');
    expect(text).toBe(
      HEADER +
        '\r\n' +
        [
          `${w.id}-awkward`,
          `lead2-${w.id}`,
          '+45 1234,5678',
          '',
          'Busy',
          'false',
          'false',
          'false',
          '2026-05-06T11:00:00.000+02:00',
          '',
          '',
          'PT0S',
          '',
          '',
          '',
          '',
          '',
          '',
          'BasketDialer',
          awkwardCampaign,
          '"Sale; ""Big""\nNew"',
          w.projects.b2b,
          accentUser,
          `accent-user-${w.id}`,
          'Åse Éclair æøå',
          w.units.root,
          w.units.sales,
          w.units.team,
          '',
          '',
        ].join(';') +
        '\r\n',
    );
  });

  it('when values hold separators, quotes, CR, LF, æøå or are absent, then the file is what fast-csv writes for the same fields, with ; and with ,', async () => {
    const unit = `Oracle ${w.id} "u";,\r\næøå`;
    const user = `oracle-${w.id}`;
    const campaign = `ORC-${w.id}`;
    await t.load(
      { type: 'orgUnit', orgCode: unit, name: 'Oracle unit', parent: w.units.team },
      {
        type: 'campaign',
        code: campaign,
        name: 'Oracle; "camp",\r\nÆØÅ',
        project: w.projects.b2b,
        leadDefinition: w.leadDefinition,
        campaignType: 'PowerDialer',
      },
      { type: 'user', orgCode: user, username: `oracle-user-${w.id}`, name: 'Ørsted, "Åse";\rx\ny', parent: unit },
      {
        type: 'call',
        uniqueId: `${w.id}-orc-1`,
        campaign,
        user,
        uniqueLeadId: `lead;"1"-${w.id}`,
        leadPhoneNumber: '+45 1234,5678',
        leadExternalKey: 'CR\rhere',
        endCause: 'NormalDisconnect',
        inProgress: false,
        connected: true,
        incoming: false,
        startTime: '2026-05-06T10:05:00+02:00',
        connectTime: '2026-05-06T10:05:03+02:00',
        endTime: '2026-05-06T10:06:00+02:00',
        previewDuration: 'PT1S',
        dialingDuration: 'PT3S',
        conversationDuration: 'PT57S',
        wrapUpDuration: 'PT2S',
        leadStatus: 'UserProcessed',
        preCallLeadStatus: 'New',
        leadClosure: 'Success',
      },
      {
        type: 'call',
        uniqueId: `${w.id}-orc-2`,
        campaign,
        user,
        uniqueLeadId: `æøå ÆØÅ-${w.id}`,
        leadPhoneNumber: '"4512"',
        leadExternalKey: 'line\nbreak',
        endCause: 'Busy',
        inProgress: false,
        connected: false,
        incoming: false,
        startTime: '2026-05-06T10:10:00+02:00',
        previewDuration: 'PT0S',
      },
      {
        type: 'call',
        uniqueId: `${w.id}-orc-3`,
        campaign,
        user,
        uniqueLeadId: `crlf-${w.id}`,
        leadPhoneNumber: '4512;34',
        leadExternalKey: 'both\r\nend,;"',
        endCause: 'NoResponse',
        inProgress: false,
        connected: false,
        incoming: true,
        startTime: '2026-05-06T10:20:00+02:00',
        previewDuration: 'PT0S',
      },
    );
    const shared = [
      'PowerDialer',
      campaign,
      'Oracle; "camp",\r\nÆØÅ',
      w.projects.b2b,
      user,
      `oracle-user-${w.id}`,
      'Ørsted, "Åse";\rx\ny',
      w.units.root,
      w.units.sales,
      w.units.team,
      unit,
      '',
    ];
    const rows = [
      [
        `${w.id}-orc-1`,
        `lead;"1"-${w.id}`,
        '+45 1234,5678',
        'CR\rhere',
        'NormalDisconnect',
        'false',
        'true',
        'false',
        '2026-05-06T10:05:00.000+02:00',
        '2026-05-06T10:05:03.000+02:00',
        '2026-05-06T10:06:00.000+02:00',
        'PT1S',
        'PT3S',
        'PT57S',
        'PT2S',
        'UserProcessed',
        'New',
        'Success',
        ...shared,
      ],
      [
        `${w.id}-orc-2`,
        `æøå ÆØÅ-${w.id}`,
        '"4512"',
        'line\nbreak',
        'Busy',
        'false',
        'false',
        'false',
        '2026-05-06T10:10:00.000+02:00',
        '',
        '',
        'PT0S',
        '',
        '',
        '',
        '',
        '',
        '',
        ...shared,
      ],
      [
        `${w.id}-orc-3`,
        `crlf-${w.id}`,
        '4512;34',
        'both\r\nend,;"',
        'NoResponse',
        'false',
        'false',
        'true',
        '2026-05-06T10:20:00.000+02:00',
        '',
        '',
        'PT0S',
        '',
        '',
        '',
        '',
        '',
        '',
        ...shared,
      ],
    ];
    for (const separator of [';', ',']) {
      const res = await csv({ OrgCode: user, ...WINDOW, CsvFieldSeparator: separator });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect((res.body as Buffer).toString('utf8')).toBe(await fastCsv(HEADER.split(';'), separator, rows));
    }
  });

  it('when Encoding is spelt another way (cp1252, utf8), then the charset is its registered name', async () => {
    const spellings: [string, string][] = [
      ['cp1252', 'windows-1252'],
      ['utf8', 'utf-8'],
      ['latin1', 'iso-8859-1'],
    ];
    for (const [encoding, charset] of spellings) {
      const res = await csv({ OrgCode: accentUser, ...WINDOW, encoding });
      expect(res.headers['content-type']).toBe(`text/csv; charset=${charset}`);
    }
  });

  it('when Encoding is windows-1252, then æ ø å é are single bytes and the charset says so', async () => {
    const res = await csv({ OrgCode: accentUser, ...WINDOW, encoding: 'windows-1252' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=windows-1252');
    const body = res.body as Buffer;
    const name = Buffer.from([0xc5, 0x73, 0x65, 0x20, 0xc9, 0x63, 0x6c, 0x61, 0x69, 0x72, 0x20, 0xe6, 0xf8, 0xe5]); // Åse Éclair æøå
    expect(body.indexOf(name)).toBeGreaterThan(0);
    expect(body.indexOf(Buffer.from('Åse', 'utf8'))).toBe(-1);
    expect(iconv.decode(body, 'windows-1252')).toContain(';Åse Éclair æøå;');
  });

  it.each(['klingon-8', 'ø', 'foo bar', ' '])(
    'when Encoding is %j (unknown, or not spelt as a charset name), then it is a 400 naming Encoding once',
    async (Encoding) => {
      const res = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding });
      expect(res.status).toBe(400);
      const problem = JSON.parse((res.body as Buffer).toString()) as { detail: string; errors: ProblemFieldError[] };
      expect(problem.errors).toEqual([
        { parameter: 'Encoding', message: 'is not a known encoding (for example utf-8, windows-1252, iso-8859-1)' },
      ]);
      expect(problem.detail.split('is not a known encoding')).toHaveLength(2);
    },
  );

  it.each([
    ['UTF-16', 'fffe', 'utf16le'],
    ['utf-32', 'fffe0000', 'utf32le'],
  ])(
    'when Encoding is %s (no byte order in its name), then the file starts with a little-endian byte order mark',
    async (encoding, bom, decodeAs) => {
      const res = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding: encoding });
      expect(res.status).toBe(200);
      const body = res.body as Buffer;
      expect(body.subarray(0, bom.length / 2).toString('hex')).toBe(bom);
      expect(iconv.decode(body.subarray(bom.length / 2), decodeAs).split('\r\n')[0]).toBe(HEADER);
    },
  );

  it.each([
    ['utf-16le', 'utf16le'],
    ['utf-16be', 'utf16be'],
    ['utf-32le', 'utf32le'],
    ['utf-32be', 'utf32be'],
    ['utf-8', 'utf8'],
  ])('when Encoding is %s, then the file has no byte order mark', async (encoding, decodeAs) => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding: encoding });
    expect(res.status).toBe(200);
    expect(iconv.decode(res.body as Buffer, decodeAs, { stripBOM: false }).split('\r\n')[0]).toBe(HEADER);
  });

  it('when CsvFieldSeparator is a comma, then fields are split by commas and values holding one are quoted', async () => {
    const res = await csv({ OrgCode: accentUser, ...WINDOW, CsvFieldSeparator: ',' });
    const [header, row] = lines(res);
    expect(header).toBe(HEADER.replace(/;/g, ','));
    expect(row!.startsWith(`${w.id}-awkward,lead2-${w.id},"+45 1234,5678",,Busy,`)).toBe(true);
    // The campaign name holds ';' but no ',' now; it still holds a quote and a line break.
    expect((res.body as Buffer).toString()).toContain(',"Sale; ""Big""\nNew",');
  });

  it.each(['\t', 'tab', 'TAB', '\\t'])('when CsvFieldSeparator is a tab (sent as %j), then fields are split by tabs', async (separator) => {
    const res = await csv({ OrgCode: accentUser, ...WINDOW, csvfieldseparator: separator });
    expect(res.status).toBe(200);
    expect(lines(res)[0]).toBe(HEADER.replace(/;/g, '\t'));
  });

  it('when CsvFieldSeparator cannot be written in the Encoding, then it is a 400 naming it; one it can write splits the fields', async () => {
    const refused = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding: 'windows-1252', CsvFieldSeparator: '😀' });
    expect(refused.status).toBe(400);
    expect(problemErrors(refused)).toEqual([{ parameter: 'CsvFieldSeparator', message: 'cannot be written in the chosen Encoding' }]);
    const section = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding: 'windows-1252', CsvFieldSeparator: '§' });
    expect(section.status).toBe(200);
    expect(iconv.decode(section.body as Buffer, 'windows-1252').split('\r\n')[0]).toBe(HEADER.split(';').join('§'));
  });

  it('when CsvFieldSeparator is U+FFFD in an Encoding that is not Unicode, then it is a 400 naming it (it would be written as ?)', async () => {
    for (const Encoding of ['windows-1252', 'iso-8859-1', 'ibm865']) {
      const refused = await request(t.app)
        .get(`/api/calls/csv?OrgCode=${encodeURIComponent(w.units.root)}&StartTime=${WINDOW.StartTime}&TimeSpan=${WINDOW.TimeSpan}`)
        .query(`Encoding=${Encoding}&CsvFieldSeparator=%EF%BF%BD`)
        .set('Authorization', w.accounts.full.auth);
      expect({ Encoding, status: refused.status }).toEqual({ Encoding, status: 400 });
      expect((refused.body as { errors: ProblemFieldError[] }).errors).toEqual([
        { parameter: 'CsvFieldSeparator', message: 'cannot be written in the chosen Encoding' },
      ]);
    }
    // An encoding of all of Unicode writes it as itself.
    const utf16 = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding: 'utf-16le', CsvFieldSeparator: '\uFFFD' });
    expect(utf16.status).toBe(200);
    expect(iconv.decode(utf16.body as Buffer, 'utf-16le').split('\r\n')[0]).toBe(HEADER.split(';').join('\uFFFD'));
  });

  it('when Encoding is unknown or blank and a CsvFieldSeparator is given, then it is a 400 naming Encoding alone, once', async () => {
    for (const Encoding of [' ', 'no-such-charset', 'ø']) {
      const res = await csv({ OrgCode: w.units.root, ...WINDOW, Encoding, CsvFieldSeparator: ';' });
      expect(res.status).toBe(400);
      expect(problemErrors(res).map((e) => e.parameter)).toEqual(['Encoding']);
    }
  });

  it('when CsvFieldSeparator is two characters or a quote, then it is a 400 naming it', async () => {
    for (const sep of ['::', '"']) {
      const res = await csv({ OrgCode: w.units.root, ...WINDOW, CsvFieldSeparator: sep });
      expect(res.status).toBe(400);
      expect(problemErrors(res)[0]!.parameter).toBe('CsvFieldSeparator');
    }
  });

  it('when the org code holds a slash and æøå, then the attachment is named Calls-{OrgCode}-{start}-{end}.csv in platform time, ASCII fallback and UTF-8 form', async () => {
    const res = await csv({ OrgCode: w.units.team, StartTime: '2026-05-06T08:00:00Z', TimeSpan: 'PT2H' });
    expect(res.status).toBe(200);
    const disposition = res.headers['content-disposition'] as string;
    const safe = w.units.team.replace('/', '_');
    expect(disposition).toMatch(/^attachment; /);
    // The ASCII form drops the marks and spells the letters that have none (ø → o); never a `?`.
    const ascii = safe.replace(/æ/g, 'ae').replace(/ø/g, 'o').replace(/å/g, 'a');
    expect(disposition).toContain(`filename="Calls-${ascii}-20260506100000-20260506120000.csv"`);
    expect(disposition).not.toMatch(/filename="[^"]*\?/);
    expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(`Calls-${safe}-20260506100000-20260506120000.csv`)}`);
  });

  it('when the org code holds an emoji, then the ASCII fallback spells it as one `_` and filename* as it is', async () => {
    const res = await csv({ OrgCode: emojiUnit, StartTime: '2026-05-06T08:00:00Z', TimeSpan: 'PT2H' });
    expect(res.status).toBe(200);
    const disposition = res.headers['content-disposition'] as string;
    expect(disposition).toContain(`filename="Calls-Salg AEro _ ${w.id}-20260506100000-20260506120000.csv"`);
    expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(`Calls-${emojiUnit}-20260506100000-20260506120000.csv`)}`);
  });

  it('when the window holds no call, then the file is the header row alone', async () => {
    const res = await csv({ OrgCode: w.units.root, StartTime: '2020-01-01', TimeSpan: 'P1D' });
    expect((res.body as Buffer).toString()).toBe(HEADER + '\r\n');
  });

  it('when the account sees only B2B projects, then Retail calls are not in the file', async () => {
    const all = await csv({ OrgCode: w.units.root, ...WINDOW });
    expect((all.body as Buffer).toString()).toContain(`${w.id}-retail`);
    const b2b = await csv({ OrgCode: w.units.root, ...WINDOW }, w.accounts.b2b.auth);
    const text = (b2b.body as Buffer).toString();
    expect(text).toContain(`${w.id}-full`);
    expect(text).not.toContain(`${w.id}-retail`);
    expect(text).not.toContain(w.projects.retail);
  });

  it('when Limit is given, then at most that many rows follow the header', async () => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW, Limit: '1' });
    expect(lines(res).filter((l) => l !== '')).toHaveLength(2);
  });

  it('when the org code is neither a user nor a unit, then it is a 400 naming OrgCode', async () => {
    const res = await csv({ OrgCode: `nobody-${w.id}`, ...WINDOW });
    expect(res.status).toBe(400);
    expect(problemErrors(res)[0]!.parameter).toBe('OrgCode');
  });

  it('when Accept names text/csv with a charset, then the file comes (the charset is the Encoding parameter)', async () => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW }).set('Accept', 'text/csv; charset=windows-1252');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(lines(res)[0]).toBe(HEADER);
  });

  it('when the client accepts only text/html, then it is a 406', async () => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW }).set('Accept', 'text/html');
    expect(res.status).toBe(406);
    expect(res.headers.vary).toMatch(/\bAccept\b/);
  });

  it.each([
    ['HttpClient', 'application/json'],
    ['old RestSharp', 'application/json, text/json, text/x-json, text/javascript, application/xml, text/xml'],
  ])('when the client sends %s’s Accept, which allows JSON, then the path’s CSV comes', async (_client, accept) => {
    const res = await csv({ OrgCode: w.units.root, ...WINDOW }).set('Accept', accept);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers.vary).toMatch(/\bAccept\b/);
    expect(lines(res)[0]).toBe(HEADER);
  });

  it('when the client accepts only XML, then it is a 406', async () => {
    expect((await csv({ OrgCode: w.units.root, ...WINDOW }).set('Accept', 'application/xml, text/xml')).status).toBe(406);
  });
});
