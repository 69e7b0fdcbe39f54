import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { z } from 'zod';
import { useTestWorld } from '../harness/useTestWorld';
import { buildOpenApiDocument, OpenApiDocument } from '../../src/http/openapi';
import { isListSchema } from '../../src/http/requestParsing';
import type { Endpoint } from '../../src/http/endpoint';

/**
 * The OpenAPI contract: the document at /api/openapi.json names exactly the routes Express
 * serves, passes an OpenAPI 3.1 validator, and carries each endpoint's parameters, bodies,
 * representations, errors, security and rate-limit headers. It walks whatever endpoints
 * src/http/routes.ts lists, so new endpoints are covered without editing this file.
 */
const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;
type Operation = {
  operationId?: string;
  security?: unknown[];
  parameters?: {
    $ref?: string;
    name?: string;
    in?: string;
    required?: boolean;
    style?: string;
    explode?: boolean;
    schema?: Record<string, unknown>;
  }[];
  requestBody?: { required?: boolean; content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }>; headers?: Record<string, unknown> }>;
  'x-service'?: string;
};

/** `METHOD /api/path/{Param}` for every route registered on the Express app. */
function expressRoutes(app: Express): string[] {
  const out: string[] = [];
  const root = (app as unknown as { router: { stack: Layer[] } }).router;
  type Layer = { rawPath?: string; route?: { path: string; methods: Record<string, boolean> }; handle: { stack?: Layer[] } };
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (on && method !== '_all') out.push(`${method.toUpperCase()} ${prefix}${layer.route.path.replace(/:(\w+)/g, '{$1}')}`);
        }
      } else if (layer.handle?.stack) {
        walk(layer.handle.stack, prefix + (layer.rawPath ?? ''));
      }
    }
  };
  walk(root.stack, '');
  return out.sort();
}

function documentRoutes(doc: OpenApiDocument): string[] {
  const base = doc.servers?.[0]?.url ?? '';
  const out: string[] = [];
  for (const [p, item] of Object.entries(doc.paths ?? {})) {
    for (const m of METHODS) if ((item as Record<string, unknown>)[m]) out.push(`${m.toUpperCase()} ${base}${p}`);
  }
  return out.sort();
}

function difference(a: string[], b: string[]): { onlyInFirst: string[]; onlyInSecond: string[] } {
  return { onlyInFirst: a.filter((x) => !b.includes(x)), onlyInSecond: b.filter((x) => !a.includes(x)) };
}

function operations(doc: OpenApiDocument): { path: string; method: string; op: Operation }[] {
  return Object.entries(doc.paths ?? {}).flatMap(([p, item]) =>
    METHODS.flatMap((m) => {
      const op = (item as Record<string, Operation | undefined>)[m];
      return op ? [{ path: p, method: m, op }] : [];
    }),
  );
}

/** The description a parameter schema carries on itself or under its optional/default wrappers. */
function ownDescription(schema: z.ZodType): string | undefined {
  let current: z.ZodType | undefined = schema;
  while (current) {
    if (current.description) return current.description;
    if (current instanceof z.ZodOptional || current instanceof z.ZodDefault || current instanceof z.ZodNullable)
      current = current.unwrap() as z.ZodType;
    else if (current instanceof z.ZodPipe) current = current.in as z.ZodType;
    else current = undefined;
  }
  return undefined;
}

/** The validator is an ES module; it runs in a child process (tests/harness/validateOpenApi.mjs). */
function validateWithOpenApiValidator(doc: unknown): { valid: boolean; errors?: unknown; version?: string } {
  const out = execFileSync(process.execPath, [path.resolve(__dirname, '../harness/validateOpenApi.mjs')], {
    input: JSON.stringify(doc),
    cwd: path.resolve(__dirname, '../..'),
  });
  return JSON.parse(out.toString()) as { valid: boolean; errors?: unknown; version?: string };
}

describe('OpenAPI document', () => {
  const { t, w } = useTestWorld();
  let doc: OpenApiDocument;
  let endpoints: Endpoint[];

  beforeAll(async () => {
    endpoints = t.composed.app.endpoints;
    doc = (await request(t.app).get('/api/openapi.json')).body as OpenApiDocument;
  });

  describe('GET /api/openapi.json', () => {
    it('when asked without credentials, then it answers the 3.1 document as JSON and counts nothing', async () => {
      const res = await request(t.app).get('/api/openapi.json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect((res.body as OpenApiDocument).openapi).toBe('3.1.0');
      expect(res.headers['x-rate-limit-limit']).toBeUndefined();
    });

    it('when the document is validated by an OpenAPI schema validator, then it is valid 3.1', () => {
      const result = validateWithOpenApiValidator(doc);
      expect(result.errors).toBeUndefined();
      expect(result).toMatchObject({ valid: true, version: '3.1' });
    });

    it('when a document is broken on purpose, then the validator rejects it (the check can fail)', () => {
      const broken = JSON.parse(JSON.stringify(doc)) as { paths: Record<string, { get: { responses: unknown } }> };
      broken.paths['/calendars/events']!.get.responses = 'none';
      expect(validateWithOpenApiValidator(broken).valid).toBe(false);
    });

    it('when the Express routes and the document are compared, then each names exactly the other’s operations', () => {
      const routes = expressRoutes(t.app);
      expect(routes.length).toBeGreaterThan(10);
      expect(difference(routes, documentRoutes(doc))).toEqual({ onlyInFirst: [], onlyInSecond: [] });
      const described = endpoints.map((e) => `${e.method.toUpperCase()} /api${e.path}`).sort();
      expect(difference(described, documentRoutes(doc))).toEqual({ onlyInFirst: [], onlyInSecond: [] });
    });

    it('when an endpoint is left out of the document, then the comparison reports it (the check can fail)', () => {
      const partial = buildOpenApiDocument(endpoints.filter((e) => e.service !== 'calendars.events.create'));
      expect(difference(expressRoutes(t.app), documentRoutes(partial))).toEqual({
        onlyInFirst: ['POST /api/calendars/events'],
        onlyInSecond: [],
      });
    });

    it('when operations are listed, then each has a unique operationId naming its service', () => {
      const ops = operations(doc);
      const ids = ops.map(({ op }) => op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
      for (const { op } of ops) expect(op['x-service']).toBeDefined();
    });

    it('when operationIds are read by a code generator, then each is a lowerCamelCase identifier, unique, and the one its endpoint declares', () => {
      const ops = operations(doc);
      for (const { path: p, method, op } of ops) {
        expect({ op: `${method} ${p}`, operationId: op.operationId }).toEqual({
          op: `${method} ${p}`,
          operationId: expect.stringMatching(/^[a-z][A-Za-z0-9]*$/) as jest.AsymmetricMatcher,
        });
      }
      const ids = ops.map(({ op }) => op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(endpoints.map((e) => e.operationId).sort());
      const byPath = (p: string, m: string) => (doc.paths![p] as Record<string, Operation>)[m]!.operationId;
      expect(byPath('/myaccount/request/limits', 'get')).toBe('getMyAccountLimits');
      expect(byPath('/calls', 'get')).toBe('listCalls');
      expect(byPath('/calls/csv', 'get')).toBe('exportCallsCsv');
      expect(byPath('/leads', 'post')).toBe('importLead');
    });

    it('when an endpoint declares an operationId a generator cannot use, or one twice, then the document is not built (the check can fail)', () => {
      const first = endpoints[0]!;
      const second = endpoints[1]!;
      expect(() => buildOpenApiDocument([{ ...first, operationId: 'myaccount.limits' }])).toThrow(/lowerCamelCase/);
      expect(() => buildOpenApiDocument([first, { ...second, operationId: first.operationId }])).toThrow(/used twice/);
    });

    it('when a query or path parameter has a description in its schema, then the document keeps it (also under optional())', () => {
      let described = 0;
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        for (const [where, shape] of [
          ['query', e.query?.shape],
          ['path', e.params?.shape],
        ] as const) {
          for (const [name, schema] of Object.entries((shape ?? {}) as Record<string, z.ZodType>)) {
            const own = ownDescription(schema);
            if (own === undefined) continue;
            described++;
            const parameter = (op.parameters ?? []).find((x) => x.in === where && x.name === name) as { description?: string };
            expect({ op: `${e.method} ${e.path}`, name, description: parameter.description }).toEqual({
              op: `${e.method} ${e.path}`,
              name,
              description: expect.stringContaining(own) as jest.AsymmetricMatcher,
            });
          }
        }
      }
      expect(described).toBeGreaterThan(40);
      const csv = (doc.paths!['/calls/csv'] as Record<string, Operation>).get!.parameters as { name?: string; description?: string }[];
      const description = (name: string) => csv.find((x) => x.name === name)?.description;
      expect(description('Limit')).toMatch(/^Maximum number of items returned; not for paging\. The name is case-insensitive\.$/);
      expect(description('Encoding')).toMatch(/^Character encoding of the file; any encoding iconv-lite knows\./);
      expect(description('CsvFieldSeparator')).toMatch(/^Field separator, one character/);
    });

    it('when the document is read by someone without the project’s source documents, then no text points to them', () => {
      expect(JSON.stringify(doc)).not.toMatch(/\bspec(ification)? ?\d|\bDESIGN\b|§/);
    });

    it('when a path has {placeholders}, then each is a required path parameter and no other path parameter exists', () => {
      for (const { path: p, method, op } of operations(doc)) {
        const placeholders = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
        const pathParams = (op.parameters ?? []).filter((x) => x.in === 'path');
        expect({ op: `${method} ${p}`, names: pathParams.map((x) => x.name).sort() }).toEqual({
          op: `${method} ${p}`,
          names: placeholders,
        });
        for (const x of pathParams) expect(x.required).toBe(true);
      }
    });

    it('when an endpoint validates query parameters, then each one is documented with its optionality, list syntax and case rule', () => {
      for (const e of endpoints.filter((x) => x.query)) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        const params = (op.parameters ?? []).filter((x) => x.in === 'query');
        const shape = e.query!.shape as Record<string, z.ZodType>;
        expect(params.map((x) => x.name).sort()).toEqual(Object.keys(shape).sort());
        for (const x of params) {
          const schema = shape[x.name!]!;
          expect({ name: x.name, required: Boolean(x.required) }).toEqual({ name: x.name, required: !schema.safeParse(undefined).success });
          expect((x as { description?: string }).description).toMatch(/case-insensitive/);
          if (isListSchema(schema)) {
            expect(x).toMatchObject({ style: 'form', explode: true, schema: { type: 'array' } });
            expect((x as { description?: string }).description).toMatch(/comma-separated/);
          }
        }
      }
    });

    it('when DateTime parameters are documented, then they are strings as on the wire (the validators’ input side)', () => {
      const op = (doc.paths!['/calendars/events'] as Record<string, Operation>).get!;
      const fromDate = op.parameters!.find((x) => x.name === 'FromDate')!;
      expect(fromDate).toMatchObject({ in: 'query', required: true, schema: { type: 'string' } });
      expect(op.parameters!.find((x) => x.name === 'Project')?.required ?? false).toBe(false);
    });

    it('when an endpoint takes a body, then the document requires a JSON body with the validated properties, unless the body may be left out', () => {
      const schemas = doc.components!.schemas as Record<string, { properties?: Record<string, unknown>; required?: string[] }>;
      for (const e of endpoints.filter((x) => x.body)) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        expect(op.requestBody).toMatchObject({
          required: !e.bodyOptional,
          content: { 'application/json': { schema: expect.anything() as jest.AsymmetricMatcher } },
        });
      }
      expect(schemas.NewCalendarEvent!.required?.sort()).toEqual(
        ['calendarCode', 'title', 'notes', 'start', 'end', 'source', 'externalId'].sort(),
      );
      const deletion = (doc.paths!['/calendars/events/{UniqueId}'] as Record<string, Operation>).delete!;
      expect(deletion.requestBody).toMatchObject({ required: false });
    });

    it('when responses are documented, then each representation appears under its media type and large-data services offer no text/html', () => {
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        const status = String(e.successStatus ?? 200);
        const success = op.responses[status];
        expect(success).toBeDefined();
        if (status === '204') continue;
        const media = Object.keys(success!.content ?? {});
        if (e.representations.includes('html')) expect(media).toContain('text/html');
        if (e.representations.includes('csv')) expect(media).toContain('text/csv');
        if (e.bulk) expect(media).not.toContain('text/html');
      }
      // The specification's own endpoints succeed with 200 only (its list of status codes); the hooks, the project's own, answer 201.
      const calendarPost = (doc.paths!['/calendars/events'] as Record<string, Operation>).post!.responses;
      expect(Object.keys(calendarPost).filter((s) => s.startsWith('2'))).toEqual(['200']);
      expect(calendarPost['200']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/CalendarEvent' });
      const created = (doc.paths!['/hooks'] as Record<string, Operation>).post!.responses['201']!;
      expect(created.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Hook' });
      expect(created.headers).toHaveProperty('Location');
    });

    it('when errors are documented, then they are problem+json with the Problem schema, per the request chain', () => {
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        const expected = ['500'];
        if (e.access.kind !== 'public') expected.push('401');
        if (e.access.kind === 'right') expected.push('403');
        if (e.query || e.params || e.body) expected.push('400');
        if (!e.ownMediaType) expected.push('406');
        if (e.access.kind !== 'public' && e.counted !== false) expected.push('429');
        for (const s of e.errorStatuses ?? []) expected.push(String(s));
        for (const s of expected) {
          expect({
            op: `${e.method} ${e.path}`,
            status: s,
            schema: op.responses[s]?.content?.['application/problem+json']?.schema,
          }).toEqual({
            op: `${e.method} ${e.path}`,
            status: s,
            schema: { $ref: '#/components/schemas/Problem' },
          });
        }
      }
      expect(doc.components!.schemas).toHaveProperty('Problem');
    });

    it('when an endpoint needs an account, then it uses the Basic scheme; public ones say security: []', () => {
      expect(doc.components!.securitySchemes).toEqual({
        basicAuth: expect.objectContaining({ type: 'http', scheme: 'basic' }) as jest.AsymmetricMatcher,
      });
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        expect({ op: e.service, security: op.security }).toEqual({
          op: e.service,
          security: e.access.kind === 'public' ? [] : [{ basicAuth: [] }],
        });
      }
    });

    it('when an endpoint is counted, then its responses carry the rate-limit headers, a 429 carries Retry-After, and the fair use header is a parameter', () => {
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        const counted = e.access.kind !== 'public' && e.counted !== false;
        const success = op.responses[String(e.successStatus ?? 200)];
        const fairUse = (op.parameters ?? []).some((x) => x.$ref === '#/components/parameters/FairUsePolicy');
        expect({
          op: e.service,
          headers: Object.keys(success!.headers ?? {}).filter((h) => h.startsWith('X-Rate-Limit')),
          fairUse,
        }).toEqual({
          op: e.service,
          headers: counted ? ['X-Rate-Limit-Limit', 'X-Rate-Limit-Remaining', 'X-Rate-Limit-Reset'] : [],
          fairUse: counted,
        });
        if (counted) expect(Object.keys(op.responses['429']!.headers ?? {})).toContain('Retry-After');
        for (const h of e.headers ?? []) expect(op.parameters).toContainEqual(expect.objectContaining({ name: h.name, in: 'header' }));
      }
      expect(doc.components!.parameters!.FairUsePolicy).toMatchObject({ name: 'X-Rate-Limit-Fair-Use-Policy', in: 'header' });
    });

    it('when a read is conditional, then its 200 documents an ETag, a 304 is documented and If-None-Match is a parameter; streamed exports have none', () => {
      const conditional = new Set<string>();
      for (const e of endpoints) {
        const op = (doc.paths![e.path] as Record<string, Operation>)[e.method]!;
        const success = op.responses[String(e.successStatus ?? 200)];
        const ifNoneMatch = (op.parameters ?? []).some((x) => x.$ref === '#/components/parameters/IfNoneMatch');
        const documented = { etag: 'ETag' in (success!.headers ?? {}), notModified: '304' in op.responses, ifNoneMatch };
        const expected = e.method === 'get' && !e.bulk && !e.streamed && !e.ownMediaType && !e.changesEveryTime;
        expect({ op: e.service, ...documented }).toEqual({ op: e.service, etag: expected, notModified: expected, ifNoneMatch: expected });
        if (expected) {
          conditional.add(e.path);
          const counted = e.access.kind !== 'public' && e.counted !== false;
          expect(Object.keys(op.responses['304']!.headers ?? {})).toEqual(
            counted ? expect.arrayContaining(['ETag', 'X-Rate-Limit-Remaining']) : ['ETag'],
          );
          expect(op.responses['304']!.content).toBeUndefined();
        }
      }
      for (const p of [
        '/projects',
        '/campaigns',
        '/leads/{UniqueId}',
        '/myaccount',
        '/orgunits',
        '/leaddefinitions',
        '/hooks',
        '/calendars/events',
      ])
        expect(conditional).toContain(p);
      for (const p of ['/simpleleads', '/rawleads', '/leads/csv', '/calls', '/calls/csv', '/donotcallnumbers'])
        expect(conditional).not.toContain(p);
      expect(doc.components!.headers).toHaveProperty('ETag');
      expect(doc.components!.parameters!.IfNoneMatch).toMatchObject({ name: 'If-None-Match', in: 'header' });
    });

    it('when an answer carries a header of its own, then its 200 documents it: GET /events’ Last-Event-ID, which the JSON list sets', async () => {
      const success = doc.paths!['/events']!.get!.responses!['200'] as { headers?: Record<string, unknown> };
      expect(success.headers).toHaveProperty('Last-Event-ID');
      const res = await request(t.app).get('/api/events?Limit=1').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(200);
      expect(res.headers['last-event-id']).toMatch(/^\d+$/);
    });

    it('when the API answers an error, then the body fits the documented Problem schema', async () => {
      const res = await request(t.app).get('/api/calendars/events?ToDate=2026-01-01').set('Authorization', w.accounts.full.auth);
      expect(res.status).toBe(400);
      const problem = doc.components!.schemas!.Problem as { properties: Record<string, unknown>; required: string[] };
      for (const key of problem.required) expect(res.body).toHaveProperty(key);
      for (const key of Object.keys(res.body as Record<string, unknown>)) expect(Object.keys(problem.properties)).toContain(key);
    });
  });

  describe('GET /api/docs', () => {
    it('when asked without credentials, then the page loads the reference script from this server and reads the document, counting nothing', async () => {
      const res = await request(t.app).get('/api/docs');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['x-rate-limit-limit']).toBeUndefined();
      const scripts = [...res.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
      expect(scripts).toEqual(['docs/scalar.js']);
      expect(res.text).not.toMatch(/https?:\/\//);
      expect(res.text).toContain('data-url="openapi.json"');
      // No inline script: the Content-Security-Policy allows only this server's scripts.
      const inline = [...res.text.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
      expect(inline).toEqual(['']);
      expect(res.headers['content-security-policy']).toContain("script-src 'self';");
      expect(res.text).toContain('href="docs/reference"');
    });

    it('when asked with a trailing slash, then it is sent to /api/docs, where its relative links resolve', async () => {
      const res = await request(t.app).get('/api/docs/?x=1');
      expect(res.status).toBe(301);
      expect(res.headers.location).toBe('../docs?x=1');
      expect(new URL(res.headers.location as string, 'http://host/api/docs/').pathname).toBe('/api/docs');
    });

    it('when the script is fetched, then it is the @scalar/api-reference bundle as JavaScript, cacheable and revalidated by ETag', async () => {
      const res = await request(t.app)
        .get('/api/docs/scalar.js')
        .buffer(true)
        .parse((r, done) => {
          let size = 0;
          let head = '';
          r.on('data', (chunk: Buffer) => {
            if (head.length < 200) head += chunk.toString('utf8');
            size += chunk.length;
          });
          r.on('end', () => done(null, { size, head }));
        });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['cache-control']).toBe('public, max-age=86400');
      expect((res.body as { size: number }).size).toBeGreaterThan(1_000_000);
      // As fetch sends it: Cache-Control: no-cache does not turn a matching tag into a 200.
      const again = await request(t.app)
        .get('/api/docs/scalar.js')
        .set('If-None-Match', res.headers.etag!)
        .set('Cache-Control', 'no-cache');
      expect(again.status).toBe(304);
    });

    it('when the script is fetched by a client that accepts gzip or br, then it comes compressed to a fraction of its size and decodes to the same bundle', async () => {
      const raw = (coding: string) =>
        request(t.app)
          .get('/api/docs/scalar.js')
          .set('Accept-Encoding', coding)
          .buffer(true)
          .parse((r, done) => {
            const chunks: Buffer[] = [];
            r.on('data', (chunk: Buffer) => chunks.push(chunk));
            r.on('end', () => done(null, Buffer.concat(chunks)));
          });
      const plain = await raw('identity');
      expect(Number(plain.headers['content-length'])).toBe((plain.body as Buffer).length);
      expect(plain.headers['content-encoding']).toBeUndefined();
      for (const [coding, decode] of [
        ['gzip', zlib.gunzipSync],
        ['br', zlib.brotliDecompressSync],
      ] as const) {
        const res = await raw(coding);
        expect(res.headers['content-encoding']).toBe(coding);
        expect(res.headers.vary).toMatch(/Accept-Encoding/);
        expect(Number(res.headers['content-length'])).toBeLessThan((plain.body as Buffer).length / 3);
        const body = res.body as Buffer;
        // superagent decodes gzip itself; br arrives as sent.
        const decoded = body.length === (plain.body as Buffer).length ? body : decode(body);
        expect(decoded.equals(plain.body as Buffer)).toBe(true);
      }
    });

    it('when the document is read, then every operation carries a TypeScript client sample naming its method and path', () => {
      for (const { path: p, method, op } of operations(doc)) {
        const samples = (op as { 'x-codeSamples'?: { lang: string; source: string }[] })['x-codeSamples'];
        expect({ op: op.operationId, lang: samples?.[0]?.lang }).toEqual({ op: op.operationId, lang: 'typescript' });
        expect(samples![0]!.source).toContain(`api.${method.toUpperCase()}('${p}'`);
      }
      const calls = (doc.paths!['/calls']!.get as unknown as { 'x-codeSamples': { source: string }[] })['x-codeSamples'][0]!.source;
      expect(calls).toContain("import { createLcmClient } from 'lead-call-api-client';");
      expect(calls).toMatch(/query: \{ [^}]*OrgCode: /);
    });
  });

  describe('GET /api (the address lcm serve prints)', () => {
    it('when asked without credentials or Accept, then it answers a JSON index linking the docs, the document and health, counting nothing', async () => {
      for (const address of ['/api', '/api/']) {
        const res = await request(t.app).get(address);
        expect({ address, status: res.status }).toEqual({ address, status: 200 });
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers['x-rate-limit-limit']).toBeUndefined();
        const links = (res.body as { links: Record<string, { href: string }> }).links;
        expect(Object.values(links).map((l) => l.href)).toEqual(
          expect.arrayContaining(['/api/docs', '/api/openapi.json', '/api/healthz', '/api/readyz']),
        );
        for (const { href } of Object.values(links)) {
          expect({ href, status: (await request(t.app).get(href)).status }).toEqual({ href, status: 200 });
        }
      }
    });

    it('when a browser asks, then it answers a page whose links lead to the docs page', async () => {
      const res = await request(t.app).get('/api').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.text).toContain('<a href="/api/docs">');
      expect(res.text).toContain('<a href="/api/openapi.json">');
    });
  });

  describe('GET /api/docs/reference', () => {
    it('when asked without credentials, then an HTML page lists every operation and counts nothing', async () => {
      const res = await request(t.app).get('/api/docs/reference');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['x-rate-limit-limit']).toBeUndefined();
      for (const { path: p, op } of operations(doc)) {
        expect(res.text).toContain(`<code class="path">/api${p.replace(/&/g, '&amp;')}</code>`);
        expect(res.text).toContain(`id="op-${op.operationId!.replace(/[^A-Za-z0-9_-]/g, '_')}"`);
      }
      expect(res.text).toContain('X-Rate-Limit-Fair-Use-Policy');
      expect(res.text).toContain('id="schema-CalendarEvent"');
    });

    it('when the page lists parameters, then each documented parameter description is on it (Limit, Encoding, CsvFieldSeparator included)', async () => {
      const res = await request(t.app).get('/api/docs/reference');
      const asProse = (text: string) =>
        text
          .replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
          .replace(/`([^`]+)`/g, '<code>$1</code>');
      for (const { op } of operations(doc)) {
        for (const p of op.parameters ?? []) {
          const description = (p as { description?: string }).description;
          if (description) expect(res.text).toContain(asProse(description));
        }
      }
      const section = res.text.slice(res.text.indexOf('id="op-exportCallsCsv"'));
      const csvSection = section.slice(0, section.indexOf('</section>'));
      expect(csvSection).toContain('Maximum number of items returned; not for paging.');
      expect(csvSection).toContain('Character encoding of the file; any encoding iconv-lite knows.');
      expect(csvSection).toContain('Field separator, one character (a tab as <code>%09</code>, <code>tab</code> or <code>\\t</code>).');
    });
  });
});
