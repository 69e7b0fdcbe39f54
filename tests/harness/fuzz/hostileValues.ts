import fc from 'fast-check';

/**
 * Hostile values for the fuzz suite (tests/integration/fuzz.test.ts), as fast-check arbitraries.
 * Strings are JS strings and may hold lone surrogates; how they travel (percent-encoded,
 * raw header bytes, escaped in JSON) is decided where the request is built.
 */

const LONE_SURROGATES = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'];
const ABOVE_LATIN1 = ['€', 'ā', 'Ω', '中文', '😀', '\uFFFE', '\uFFFF', '\uFEFF', '\u2028', '\u202E', 'İ', 'ﬀ', '\u0301'];
const NUMBERS = [
  '0',
  '-0',
  '-1',
  '-2147483649',
  '2147483648',
  '9007199254740993',
  '99999999999999999999999999',
  '1e308',
  '1e309',
  '-1e309',
  '0x10',
  '0X1F',
  '0b101',
  '0o17',
  '1e3',
  '1E-7',
  '16.0',
  '.5',
  '5.',
  '+16',
  ' 16',
  '16 ',
  '１６',
  'NaN',
  'Infinity',
  '-Infinity',
  '1_000',
  '1,5',
  '٣',
];
const DATES = [
  '2026-13-45T99:99:99',
  '0000-01-01T00:00:00',
  '+275760-09-13T00:00:00Z',
  '-000001-01-01',
  '9999-12-31T23:59:59.999999999+14:00',
  '2026-05-06T08:00:00+99:00',
  '2026-02-30',
  '2026-05-06T08:00:00Z[Europe/Nowhere]',
  'P99999999Y',
  'PT-1H',
  'P',
  'PT',
  'p1d',
  'P1Y2M3W4DT5H6M7.5S',
  'PT0S',
  'P1000000D',
  'now',
  'today',
  '1700000000',
  '2026-W19-3',
  '2026-03-29T02:30:00',
];
/**
 * DateTimes at and just beyond the edges of the range inputs may take (1900-01-01 to
 * 9999-12-31 in platform time): local mean time, year 0, -14:00 pushing 9999 into 10000.
 */
const DATE_EDGES = [
  '0001-01-01',
  '0001-01-01T00:00:00',
  '1899-12-31T23:59:59',
  '1899-12-31T22:59:59.999Z',
  '1900-01-01',
  '1899-12-31T23:00:00Z',
  '1900-01-01T00:00:00-14:00',
  '9999-12-31',
  '9999-12-31T23:59:59.999',
  '9999-12-31T22:59:59.999Z',
  '9999-12-31T23:59:59-14:00',
  '9999-12-31T23:59:59+14:00',
  '9999-12-31T23:59:59.999999Z',
];
const looksLikeDateTime = (value: string) => /^\d{4}-\d{2}-\d{2}/.test(value);

/** Values over the lead value limit (64 KiB) and, in a bulk body, over the row limit (1 MiB). */
export function hugeString(): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom(66_000, 140_000, 1_100_000), fc.constantFrom('x', 'æ', '😀', '"', '\n'))
    .map(([bytes, c]) => c.repeat(Math.ceil(bytes / Buffer.byteLength(c))));
}

const SYNTAX = [
  "' OR 1=1 --",
  '"; drop table leads; --',
  '%',
  '%%',
  '%25',
  '_',
  '*',
  '**',
  '?',
  '\\',
  '"',
  "'",
  '<script>alert(1)</script>',
  '${x}',
  '{{x}}',
  '../../etc/passwd',
  '/',
  '//',
  'null',
  'undefined',
  'true',
  'false',
  '[]',
  '{}',
  '[object Object]',
  '__proto__',
  'constructor',
  ',',
  ',,,',
  ';',
  '\t',
  ' ',
  '  padded  ',
  'a,b,c',
  'utf-8',
  'UTF-16LE',
  'x-user-defined',
  'base64',
];

const controlChar = fc
  .oneof(fc.integer({ min: 0, max: 0x1f }), fc.constant(0x7f), fc.integer({ min: 0x80, max: 0x9f }))
  .map((c) => String.fromCharCode(c));

/** A value with something hostile put before, inside or after it. */
function spliced(base: string, inserted: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(inserted, fc.nat({ max: base.length })).map(([s, at]) => base.slice(0, at) + s + base.slice(at));
}

/** Long strings: long enough to pass any length limit, short enough for a request line (8 kB of URL stays below Node's 16 kB head limit). */
function longString(maxLength: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.integer({ min: 201, max: maxLength }), fc.constantFrom('x', 'æ', '€', '%', ' ', '😀'))
    .map(([n, c]) => c.repeat(Math.ceil(n / c.length)));
}

/** A hostile string, often built on a valid value so that it gets past the parameters checked before it. */
export function hostileString(valid: string, options: { maxLength: number }): fc.Arbitrary<string> {
  return fc.oneof(
    // A DateTime parameter or field gets the edges of the range often: they were 500s.
    { weight: looksLikeDateTime(valid) ? 6 : 0, arbitrary: fc.constantFrom(...DATE_EDGES) },
    spliced(valid, controlChar),
    spliced(valid, fc.constantFrom('\r\n', '\r\nX-Injected: 1', '\u0000', '\n\n')),
    spliced(valid, fc.constantFrom(...ABOVE_LATIN1)),
    spliced(valid, fc.constantFrom(...LONE_SURROGATES)),
    fc.constantFrom(...LONE_SURROGATES, ...ABOVE_LATIN1),
    fc.constantFrom(...NUMBERS),
    fc.constantFrom(...DATES, ...DATE_EDGES),
    fc.constantFrom(...SYNTAX),
    fc.constantFrom('', ' ', valid + valid, valid.toUpperCase(), valid.toLowerCase(), valid.slice(0, -1)),
    longString(options.maxLength),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
  );
}

/** A hostile JSON value for a body property: wrong types, hostile strings, big and nested values. */
export function hostileJson(valid: unknown, maxDepth: number): fc.Arbitrary<unknown> {
  const asString = typeof valid === 'string' ? valid : (JSON.stringify(valid) ?? '');
  return fc.oneof(
    { weight: 4, arbitrary: hostileString(asString, { maxLength: 30000 }) },
    fc.constantFrom<unknown>(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      -0.0,
      1e308,
      -1e308,
      2 ** 53 + 2,
      2147483648,
      -2147483649,
      [],
      {},
      [null],
      { a: 1 },
      ['x', 'y'],
    ),
    fc.constantFrom<unknown>(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1e-320),
    fc.jsonValue({ maxDepth: 3 }),
    fc.integer({ min: maxDepth - 1, max: maxDepth + 3 }).map((depth) => nest(asString, depth)),
    fc.constant([valid, valid]),
    fc.constant({ value: valid }),
  );
}

/** A value inside `depth` levels of alternating arrays and objects. */
export function nest(value: unknown, depth: number): unknown {
  let out = value;
  for (let i = 0; i < depth; i++) out = i % 2 === 0 ? [out] : { a: out };
  return out;
}

export const ODD_ACCEPT = [
  '',
  '*/*',
  '*',
  'text/csv',
  'text/html',
  'application/xml',
  'application/problem+json',
  'text/plain',
  'image/png',
  'application/json;q=0',
  'text/html;q=0, application/json;q=0',
  'application/*',
  'text/*;q=0.5',
  'a/b/c',
  ';;;',
  ',,,',
  'application/json;q=abc',
  'application/json;q=2',
  'application/json; charset=latin1',
  'text/csv; charset=utf-16',
  'text/csv; charset="',
  'text/csv;header=absent',
  'APPLICATION/JSON',
  'application/json, text/csv;q=0.9, */*;q=0.1',
  'x'.repeat(4000),
  'application/json;' + 'q=1;'.repeat(500),
  'application/jsonæ',
  'text/\u00ff',
];

export const ODD_CONTENT_TYPE = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json; charset=utf-16',
  'application/json; charset=utf-16le',
  'application/json; charset=latin1',
  'application/json; charset=iso-8859-1',
  'application/json; charset=ascii',
  'application/json; charset=foo',
  'application/json; charset="',
  'application/json; charset=',
  'application/json; charset=utf-8; charset=latin1',
  'application/json;;',
  'application/json; foo',
  'application/JSON',
  'application/merge-patch+json',
  'application/vnd.api+json',
  'application/x-ndjson',
  'application/x-ndjson; charset=windows-1252',
  'text/csv',
  'text/csv; charset=windows-1252',
  'text/csv; charset=utf-16',
  'text/plain',
  'text/plain; charset=utf-8',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'multipart/form-data',
  'application/octet-stream',
  '',
  '*/*',
  'application/*',
  'a/b/c',
  'json',
  ';',
  'application/json\u00ff',
  'application/json; charset=utf-8\u00e6',
];
