import fc from 'fast-check';
import { hostileJson, hostileString, hugeString, nest, ODD_ACCEPT, ODD_CONTENT_TYPE } from './hostileValues';

/**
 * Fuzz cases generated from the OpenAPI document the app serves (tests/integration/fuzz.test.ts).
 * Every operation is split into targets — each query/path/header parameter, each body property,
 * and request-wide ones (Accept, Content-Type, raw body, duplicate and unknown parameters,
 * malformed paths, credentials) — and case `index` aims at target `index mod targets`, with the
 * other parameters valid so that the hostile value gets as far into the app as it can.
 * A case depends only on (seed, index): fast-check's `gen()` is sampled with seed + index, so
 * one case can be replayed without generating the others.
 */

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  example?: unknown;
  description?: string;
  required?: string[];
  maxLength?: number;
};

type Parameter = { name: string; in: 'query' | 'path' | 'header'; required?: boolean; schema?: JsonSchema; $ref?: string };

export interface FuzzOperation {
  method: string;
  /** Path template under the server URL, e.g. `/calendars/{CalendarCode}/events`. */
  path: string;
  parameters: Parameter[];
  bodyContentTypes: string[];
  bodySchema?: JsonSchema;
  isPublic: boolean;
}

export interface FuzzTarget {
  operation: FuzzOperation;
  kind:
    | 'parameter'
    | 'bodyProperty'
    | 'bodyEntry'
    | 'accept'
    | 'contentType'
    | 'rawBody'
    | 'duplicateParameter'
    | 'unknownParameter'
    | 'malformedPath'
    | 'credentials'
    | 'otherHeaders';
  name?: string;
}

/** What the world of the test offers: credentials and values that exist. */
export interface FuzzWorld {
  auth: { full: string; b2b: string; none: string };
  /** A valid value for a parameter or body property, by operation and name; undefined: derived from the schema. */
  valid(operation: FuzzOperation, name: string, where: 'query' | 'path' | 'header' | 'body'): unknown;
  maxDepth: number;
}

export interface FuzzCase {
  seed: number;
  index: number;
  operation: string;
  target: string;
  account: string;
  method: string;
  /** Path and query as sent (Latin-1: one char per byte). */
  url: string;
  headers: [string, string][];
  /** The body as a JS string; `bodyBytes` says how it became bytes. */
  body?: string;
  bodyBytes?: 'utf8' | 'latin1';
}

/** From FuzzWorld.valid: leave this body property out of valid bodies. */
export const OMIT = Symbol('omit');

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export function operationsOf(doc: {
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
}): FuzzOperation[] {
  const resolve = <T extends { $ref?: string }>(x: T): T => {
    if (!x?.$ref) return x;
    const [, , kind, name] = x.$ref.split('/');
    return resolve(doc.components[kind!]![name!] as T);
  };
  const out: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as
        { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema?: JsonSchema }> }; security?: unknown[] } | undefined;
      if (!op) continue;
      const content = op.requestBody?.content ?? {};
      const json = content['application/json'] ?? Object.values(content)[0];
      out.push({
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters ?? []).map((p) => resolve(p)),
        bodyContentTypes: Object.keys(content),
        bodySchema: json?.schema ? deref(json.schema, resolve) : undefined,
        isPublic: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return out;
}

function deref(schema: JsonSchema, resolve: <T extends { $ref?: string }>(x: T) => T): JsonSchema {
  const s = resolve(schema);
  return {
    ...s,
    ...(s.properties ? { properties: Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, deref(v, resolve)])) } : {}),
    ...(s.items ? { items: deref(s.items, resolve) } : {}),
    ...(s.anyOf ? { anyOf: s.anyOf.map((x) => deref(x, resolve)) } : {}),
  };
}

/** The object schema of a body (an object, or an object-or-array union), if any. */
function bodyObject(schema: JsonSchema | undefined): JsonSchema | undefined {
  if (!schema) return undefined;
  if (schema.properties) return schema;
  for (const option of schema.anyOf ?? []) if (option.properties) return option;
  if (schema.items) return bodyObject(schema.items);
  return undefined;
}

export function targetsOf(operations: FuzzOperation[]): FuzzTarget[] {
  const out: FuzzTarget[] = [];
  for (const operation of operations) {
    for (const p of operation.parameters) out.push({ operation, kind: 'parameter', name: `${p.in}:${p.name}` });
    const object = bodyObject(operation.bodySchema);
    for (const [name, schema] of Object.entries(object?.properties ?? {})) {
      out.push({ operation, kind: 'bodyProperty', name });
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') out.push({ operation, kind: 'bodyEntry', name });
    }
    if (operation.bodySchema && !object) out.push({ operation, kind: 'bodyEntry', name: '' }); // bulk import: rows of data objects
    if (operation.bodySchema) out.push({ operation, kind: 'contentType' });
    out.push(
      { operation, kind: 'rawBody' },
      { operation, kind: 'otherHeaders' },
      { operation, kind: 'accept' },
      { operation, kind: 'unknownParameter' },
      { operation, kind: 'malformedPath' },
    );
    if (operation.parameters.some((p) => p.in === 'query')) out.push({ operation, kind: 'duplicateParameter' });
    if (!operation.isPublic) out.push({ operation, kind: 'credentials' });
  }
  return out;
}

type Gen = <T>(arb: () => fc.Arbitrary<T>) => T;

/** One of the given values. */
const pick = <T>(g: Gen, values: readonly T[]): T => g(() => fc.constantFrom(...values));
const chance = (g: Gen, percent: number): boolean => g(() => fc.integer({ min: 1, max: 100 })) <= percent;

/** UTF-8 bytes of each code point, lone surrogates included (WTF-8), as a Latin-1 string. */
function wtf8(value: string): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) out += String.fromCharCode(cp);
    else if (cp < 0x800) out += String.fromCharCode(0xc0 | (cp >> 6), 0x80 | (cp & 63));
    else if (cp < 0x10000) out += String.fromCharCode(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
    else out += String.fromCharCode(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63));
  }
  return out;
}

const hex = (c: number) => '%' + c.toString(16).toUpperCase().padStart(2, '0');

/** Percent-encodes a value for a query or path; `raw` leaves bytes that a sloppy client would leave. */
function encodeComponent(value: string, style: 'strict' | 'loose' | 'raw'): string {
  let out = '';
  for (const ch of wtf8(value)) {
    const c = ch.charCodeAt(0);
    const unreserved = /[A-Za-z0-9\-._~]/.test(ch);
    if (unreserved) out += ch;
    else if (style === 'loose' && c > 0x20 && c < 0x7f && !'&#%+?/'.includes(ch)) out += ch;
    else if (style === 'loose' && c === 0x20) out += '+';
    else if (style === 'raw' && c > 0x20 && c !== 0x7f && !'&#%?/'.includes(ch)) out += ch;
    else out += hex(c);
  }
  return out;
}

const INVALID_PERCENT = [
  '%ED%A0%80',
  '%ED%BF%BF',
  '%FF',
  '%C0%80',
  '%C3',
  '%E2%82',
  '%F4%90%80%80',
  '%',
  '%G1',
  '%2',
  '%u0041',
  '%%',
  '%00',
  '%0D%0A',
];

/** A valid value for a parameter or property from the schema alone. */
function fromSchema(schema: JsonSchema | undefined): unknown {
  if (!schema) return 'x';
  if (schema.example !== undefined) return schema.example;
  if (schema.enum?.length) return schema.enum[0];
  const listed = /One of ([^.]+)\./.exec(schema.items?.description ?? schema.description ?? '');
  if (listed) {
    const first = listed[1]!.split(/,\s*/)[0]!.replace(/`/g, '').trim();
    return schema.type === 'array' ? [first] : first;
  }
  const option = schema.anyOf?.find((o) => o.type !== 'null');
  if (option) return fromSchema(option);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [fromSchema(schema.items)];
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([k]) => schema.required?.includes(k))
          .map(([k, v]) => [k, fromSchema(v)]),
      );
    default:
      return 'x';
  }
}

function asText(value: unknown): string {
  if (Array.isArray(value)) return value.map(asText).join(',');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function validParameter(world: FuzzWorld, op: FuzzOperation, p: Parameter): string {
  const known = world.valid(op, p.name, p.in);
  return asText(known !== undefined && known !== OMIT ? known : fromSchema(p.schema));
}

function validBody(world: FuzzWorld, op: FuzzOperation): unknown {
  const object = bodyObject(op.bodySchema);
  if (!object) return world.valid(op, '(body)', 'body') ?? fromSchema(op.bodySchema);
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(object.properties ?? {})) {
    const known = world.valid(op, name, 'body');
    if (known !== OMIT) out[name] = known !== undefined ? known : fromSchema(schema);
  }
  return out;
}

/** Puts a hostile value somewhere in a body (a property, or an entry of a map-valued property, or a row of a bulk body). */
function hostileBody(g: Gen, world: FuzzWorld, op: FuzzOperation, target: FuzzTarget): unknown {
  const body = validBody(world, op);
  const value = (valid: unknown) => g(() => hostileJson(valid, world.maxDepth));
  if (target.kind === 'bodyProperty') {
    const b = body as Record<string, unknown>;
    if (chance(g, 15)) delete b[target.name!];
    else b[target.name!] = value(b[target.name!]);
    return b;
  }
  // An entry of a map (lead data, a bulk row): a hostile value, a hostile key, or a value over
  // the lead value limit (in a bulk row also over the row limit).
  const mapOf = (container: Record<string, unknown>) => {
    const keys = Object.keys(container);
    const key = keys.length > 0 ? pick(g, keys) : 'Name';
    if (chance(g, 30)) container[g(() => hostileString(key, { maxLength: 3000 }))] = container[key] ?? 'x';
    else if (chance(g, 15)) container[key] = g(() => hugeString());
    else container[key] = value(container[key] ?? 'x');
    return container;
  };
  if (target.name) {
    const b = body as Record<string, unknown>;
    const inner = b[target.name];
    b[target.name] =
      inner && typeof inner === 'object' && !Array.isArray(inner) ? mapOf({ ...(inner as Record<string, unknown>) }) : value(inner);
    return b;
  }
  const rows = Array.isArray(body) ? [...(body as unknown[])] : [body];
  const at = g(() => fc.nat({ max: rows.length - 1 }));
  const row = rows[at];
  rows[at] = row && typeof row === 'object' ? mapOf({ ...(row as Record<string, unknown>) }) : value(row);
  return rows;
}

/** A body in the wire form of its content type: JSON, NDJSON rows, or CSV. */
function serialize(body: unknown, contentType: string): string {
  if (contentType.startsWith('application/x-ndjson')) return (Array.isArray(body) ? body : [body]).map((r) => JSON.stringify(r)).join('\n');
  if (contentType.startsWith('text/csv')) {
    const rows = (Array.isArray(body) ? body : [body]) as Record<string, unknown>[];
    const columns = [...new Set(rows.flatMap((r) => (r && typeof r === 'object' ? Object.keys(r) : [])))];
    const cell = (v: unknown) => `"${asText(v).replace(/"/g, '""')}"`;
    return [columns.map(cell).join(';'), ...rows.map((r) => columns.map((c) => cell(r?.[c] ?? '')).join(';'))].join('\r\n');
  }
  return JSON.stringify(body);
}

const RAW_BODIES = (validJson: string, validValue: unknown, maxDepth: number): fc.Arbitrary<{ text: string; bytes?: 'latin1' }> =>
  fc.oneof(
    fc
      .constantFrom(
        '',
        ' ',
        'null',
        '[]',
        '{}',
        '"text"',
        '1e999',
        '-0',
        'true',
        'NaN',
        'hello',
        '<xml/>',
        'a=b&c=d',
        '{"a":1,}',
        "{'a':1}",
        '{"a":1}//x',
        '\u0000',
        '{"a":"\\u0000"}',
        '{"a":"\\ud800"}',
        '{"a":"\\udc00\\ud800"}',
        '{"__proto__":{"polluted":1}}',
        '{"constructor":{"prototype":{"polluted":1}}}',
      )
      .map((text) => ({ text })),
    fc.nat({ max: Math.max(0, validJson.length - 1) }).map((cut) => ({ text: validJson.slice(0, cut) })),
    fc.integer({ min: maxDepth - 1, max: maxDepth + 5 }).map((d) => ({ text: JSON.stringify(nest(validValue, d)) })),
    fc.constantFrom('[', '{"a":').map((open) => ({ text: open.repeat(20000) })),
    fc.constantFrom('[', '{"a":').map((open) => ({ text: open.repeat(5000) + '1' + (open === '[' ? ']' : '}').repeat(5000) })),
    fc.constant({ text: '\uFEFF' + validJson }),
    fc.constant({ text: validJson + validJson }),
    fc.constant({ text: validJson.replace(/"([A-Za-z]+)":/, '"$1":1,"$1":') }),
    fc.constant({ text: validJson.replace(/"([a-z])/, (_m, c: string) => `"${c.toUpperCase()}`) }),
    fc.constant({ text: `{"x":"${'a'.repeat(150_000)}"}` }),
    fc
      .constantFrom('\xED\xA0\x80', '\xFF\xFE', '\xC0\x80', '\xE2\x82')
      .map((bad) => ({ text: wtf8(validJson).replace(/":"/, `":"${bad}`), bytes: 'latin1' as const })),
    fc.constant({ text: Buffer.from(validJson, 'utf16le').toString('latin1'), bytes: 'latin1' as const }),
    fc.string({ unit: 'binary', maxLength: 200 }).map((text) => ({ text })),
  );

/** Headers the API does not ask for but a client may send, some of them read by Node or Express before the app. */
const OTHER_HEADERS: [string, string][] = [
  ['Expect', '100-continue'],
  ['Expect', 'foo'],
  ['Content-Encoding', 'gzip'],
  ['Content-Encoding', 'deflate'],
  ['Content-Encoding', 'br'],
  ['Content-Encoding', 'x-bogus'],
  ['Content-Encoding', 'gzip, gzip'],
  ['Content-Encoding', 'identity'],
  ['Accept-Encoding', 'br;q=abc, *;q=0'],
  ['Accept-Encoding', 'x'.repeat(2000)],
  ['Accept-Charset', 'utf-16'],
  ['Accept-Language', '*;q=x'],
  ['If-None-Match', '"x", W/'],
  ['If-Modified-Since', 'yesterday'],
  ['Range', 'bytes=0-1,5-'],
  ['Range', 'rows=1-2'],
  ['X-Forwarded-For', '999.1.1.1, ::ffff:zz'],
  ['X-Forwarded-Proto', 'gopher'],
  ['X-Forwarded-Host', 'evil.example\u0000'],
  ['X-HTTP-Method-Override', 'DELETE'],
  ['X-Request-Id', 'x'.repeat(3000)],
  ['X-Request-Id', '\u00ff\u00fe'],
  ['Origin', 'null'],
  ['Cookie', 'a=b; a=c; ;;'],
  ['Forwarded', 'for="[::1'],
  ['Prefer', 'respond-async, wait=-1'],
  ['Prefer', 'datetime=local, datetime=utc'],
  ['Content-Type', 'application/json'],
  ['Authorization', 'Basic Og=='],
  ['Host', 'other.example'],
  ['Connection', 'keep-alive, Upgrade'],
  ['Upgrade', 'websocket'],
  ['Transfer-Encoding', 'gzip'],
  ['TE', 'trailers'],
  ['Via', '1.1 x'],
];

const ODD_AUTH = (full: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(
      '',
      'Basic',
      'Basic ',
      'Basic !!!',
      'Basic ====',
      'Bearer x',
      'basic ' + full.slice(6),
      'Basic  ' + full.slice(6),
      full + 'x',
      full.slice(0, -2),
      'Digest a=b',
      'Basic ' + 'A'.repeat(6000),
    ),
    fc
      .constantFrom(
        'nocolon',
        ':',
        'user:',
        ':pass',
        'u\u0000:p',
        'u:p\u0000',
        'ü\u00ff:p',
        'ℌ€:p',
        '\uD800:x',
        'a:b:c',
        'x'.repeat(3000) + ':y',
      )
      .map((pair) => 'Basic ' + Buffer.from(wtf8(pair), 'latin1').toString('base64')),
    fc.constantFrom('ü:p', 'x:ü').map((pair) => 'Basic ' + Buffer.from(pair, 'latin1').toString('base64')),
  );

/** Turns a JS header value into Latin-1 bytes as a client would send it: UTF-8, lone surrogates and control characters as they are. */
const headerBytes = (value: string): string => wtf8(value);

export function buildCase(seed: number, index: number, targets: FuzzTarget[], world: FuzzWorld): FuzzCase {
  const [gen] = fc.sample(fc.gen(), { seed: (seed + index) | 0, numRuns: 1 });
  const g: Gen = (arb) => gen!(arb);
  const target = targets[index % targets.length]!;
  const op = target.operation;

  // Who asks: mostly the account with every right, often the limited one, sometimes none.
  let account: string =
    op.isPublic && !chance(g, 20) ? 'anonymous' : pick(g, ['full', 'full', 'full', 'b2b', 'b2b', 'none', 'anonymous'] as const);
  const headers: [string, string][] = [];
  if (target.kind === 'credentials') {
    account = 'odd';
    headers.push(['Authorization', headerBytes(g(() => ODD_AUTH(world.auth.full)))]);
  } else if (account !== 'anonymous') {
    headers.push(['Authorization', world.auth[account as 'full' | 'b2b' | 'none']]);
  }

  // Parameters: valid unless targeted; optional ones now and then left out.
  const query: [string, string][] = [];
  let path = op.path;
  let description = target.kind + (target.name !== undefined ? `:${target.name}` : '');
  for (const p of op.parameters) {
    const isTarget = target.kind === 'parameter' && target.name === `${p.in}:${p.name}`;
    const valid = validParameter(world, op, p);
    if (!isTarget && !p.required && chance(g, 40)) continue;
    if (isTarget && !p.required && chance(g, 5)) continue;
    let value = isTarget ? g(() => hostileString(valid, { maxLength: p.in === 'header' ? 6000 : 2500 })) : valid;
    const style = isTarget ? pick(g, ['strict', 'strict', 'loose', 'raw'] as const) : 'strict';
    let encoded = encodeComponent(value, style);
    if (isTarget && p.in !== 'header' && chance(g, 15)) {
      const bad = pick(g, INVALID_PERCENT);
      encoded = encodeComponent(valid, 'strict') + bad;
      value = `${valid} + ${bad}`;
    }
    if (p.in === 'query') query.push([p.name, encoded]);
    else if (p.in === 'path') path = path.replace(`{${p.name}}`, () => encoded);
    else headers.push([p.name, headerBytes(value)]);
  }

  if (target.kind === 'duplicateParameter') {
    const names = op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
    const name = pick(g, names);
    const variant = pick(g, [name, name.toLowerCase(), name.toUpperCase()]);
    const second = pick(g, [
      '1',
      '2',
      '',
      '-1',
      'x',
      encodeComponent(
        validParameter(
          world,
          op,
          op.parameters.find((p) => p.name === name)!,
        ),
        'strict',
      ),
    ]);
    query.splice(
      g(() => fc.nat({ max: query.length })),
      0,
      [variant, second],
    );
    if (chance(g, 30)) query.push([`${name}[]`, 'x'], [`${name}[a]`, 'y']);
    description += `:${name}`;
  }
  if (target.kind === 'unknownParameter') {
    const extra = pick(g, [
      'Unknown',
      '__proto__',
      'constructor',
      'prototype',
      'hasOwnProperty',
      'a[b]',
      'a[]',
      'toString',
      '',
      '%',
      '%ED%A0%80',
      'x'.repeat(1000),
    ]);
    query.push([
      extra.startsWith('%') ? extra : encodeComponent(extra, 'strict'),
      encodeComponent(
        g(() => hostileString('1', { maxLength: 1000 })),
        'strict',
      ),
    ]);
    if (chance(g, 30)) query.push(['__proto__[polluted]', '1'], ['constructor[prototype][polluted]', '1']);
  }
  if (target.kind === 'malformedPath') {
    path = pick(g, [
      op.path,
      path + '/',
      path + '//',
      path.replace(/\/[^/]*$/, '/%'),
      path.replace(/\/[^/]*$/, '/%zz'),
      path.replace(/\/[^/]*$/, '/%ED%A0%80'),
      path.replace(/\/[^/]*$/, '/%00'),
      path.replace(/\/[^/]*$/, '/..%2F..%2F'),
      path + '/%2e%2e/%2e%2e/etc/passwd',
      path.toUpperCase(),
      path + ';jsessionid=1',
      path + '.json',
      path.replace(/\/[^/]*$/, '/' + 'a'.repeat(3000)),
      path.replace(/^\//, '//'),
      path + '%20',
      path + '#frag',
    ]);
  }

  // The body: the operation's own, hostile where targeted; sometimes a body where none belongs.
  let body: string | undefined;
  let bodyBytes: 'utf8' | 'latin1' | undefined;
  let contentType: string | undefined;
  let value: unknown = {};
  if (op.bodySchema) {
    contentType = pick(g, op.bodyContentTypes);
    value = target.kind === 'bodyProperty' || target.kind === 'bodyEntry' ? hostileBody(g, world, op, target) : validBody(world, op);
    body = serialize(value, contentType);
  }
  if (target.kind === 'contentType') contentType = pick(g, ODD_CONTENT_TYPE);
  if (target.kind === 'rawBody') {
    const raw = g(() => RAW_BODIES(body ?? '{}', value, world.maxDepth));
    body = raw.text;
    bodyBytes = raw.bytes;
    contentType ??= pick(g, ['application/json', 'application/json', 'text/plain', 'application/octet-stream']);
    if (chance(g, 15)) contentType = pick(g, ODD_CONTENT_TYPE);
  }
  if (body !== undefined && contentType !== undefined && !(target.kind === 'contentType' && chance(g, 10)))
    headers.push(['Content-Type', headerBytes(contentType)]);

  if (target.kind === 'otherHeaders') {
    const count = g(() => fc.integer({ min: 1, max: 3 }));
    for (let i = 0; i < count; i++) headers.push(pick(g, OTHER_HEADERS));
  }
  if (target.kind === 'accept') headers.push(['Accept', headerBytes(pick(g, ODD_ACCEPT))]);
  else if (chance(g, 15))
    headers.push(['Accept', pick(g, ['application/json', 'text/csv', 'text/html', '*/*', 'application/problem+json'])]);
  if (chance(g, 5)) headers.push(['X-Rate-Limit-Fair-Use-Policy', 'Minute rated']);

  const url =
    '/api' + path + (query.length > 0 ? '?' + query.map(([k, v]) => (v === '' && chance(g, 30) ? k : `${k}=${v}`)).join('&') : '');
  return {
    seed,
    index,
    operation: `${op.method} ${op.path}`,
    target: description,
    account,
    method: op.method,
    url,
    headers,
    body,
    bodyBytes,
  };
}

/** The body bytes of a case, as they go on the wire. */
export function bodyBytes(c: FuzzCase): Buffer | undefined {
  return c.body === undefined ? undefined : Buffer.from(c.bodyBytes === 'latin1' ? c.body : wtf8(c.body), 'latin1');
}

/**
 * A case as a developer pastes it: a curl command line (bash quoting) and the case as JSON
 * (body as a JSON string). A body over 4 kB is written to a file by `saveBody` and named.
 */
export function replayable(c: FuzzCase, baseUrl: string, saveBody: (bytes: Buffer) => string): string {
  const q = (s: string) =>
    `$'${s.replace(/[\\']/g, '\\$&').replace(/[^\x20-\x7e]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
  const headerArgs = c.headers.map(([k, v]) => `-H ${q(`${k}: ${v}`)}`).join(' ');
  const bytes = bodyBytes(c);
  const file = bytes && bytes.length > 4000 ? saveBody(bytes) : undefined;
  const bodyArg = bytes === undefined ? '' : file ? ` --data-binary @${file}` : ` --data-binary ${q(bytes.toString('latin1'))}`;
  const json = JSON.stringify({
    seed: c.seed,
    index: c.index,
    operation: c.operation,
    target: c.target,
    account: c.account,
    method: c.method,
    url: c.url,
    headers: c.headers,
    ...(file ? { bodyFile: file } : { body: c.body, bodyBytes: c.bodyBytes }),
  });
  return `curl -sS -i -X ${c.method} ${headerArgs} ${q(baseUrl + c.url)}${bodyArg}\n${json}`;
}
