import request from 'supertest';
import { createDb } from '../../src/data/db';
import { seedDemo } from '../../src/ingest/demoData';
import type { OpenApiDocument } from '../../src/http/openapi';
import { basicAuth, createOwnDatabase, createTestApp, TestApp } from '../harness/testApp';

/**
 * Try-it with the examples as they stand: every operation of the OpenAPI document is sent with
 * its documented examples (path and query parameters, each example body of each media type),
 * as the reference at /api/docs sends them when one just presses Send, to an app on a database
 * of its own that holds the demo data set (what `npm start` serves), with the demo account. Each
 * must answer 2xx. An operation on a hook needs the id POST /hooks answers, which no example
 * can know: those are the only ones left out, and the test names them.
 */

type Schema = Record<string, unknown>;
type Parameter = { name: string; in: string; required?: boolean; example?: unknown; schema?: Schema; $ref?: string };
type MediaContent = { example?: unknown; examples?: Record<string, { value?: unknown }>; schema?: Schema };
type Operation = {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, MediaContent> };
  responses: Record<string, unknown>;
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const ZONE = 'Europe/Copenhagen';
/** The Saturday after the demo week: the examples are read as a user of the demo data would send them. */
const DEMO_NOW = new Date('2026-11-21T10:00:00+01:00');

jest.setTimeout(180_000);

describe('the OpenAPI examples against the demo data', () => {
  let own: Awaited<ReturnType<typeof createOwnDatabase>>;
  let t: TestApp;
  let doc: OpenApiDocument;
  const auth = basicAuth('demo', 'demo-password');

  beforeAll(async () => {
    own = await createOwnDatabase('openapi_examples');
    const db = createDb({ url: own.url, timezone: ZONE, poolMax: 2 });
    try {
      await seedDemo(db, ZONE);
    } finally {
      await db.destroy();
    }
    t = await createTestApp({ DATABASE_URL: own.url });
    t.setNow(DEMO_NOW);
    doc = (await request(t.app).get('/api/openapi.json')).body as OpenApiDocument;
  });

  afterAll(async () => {
    await t?.close();
    await own?.drop();
  });

  const resolve = (schema: Schema | undefined): Schema => {
    const ref = schema?.$ref;
    if (typeof ref !== 'string') return schema ?? {};
    return ((doc.components?.schemas ?? {}) as Record<string, Schema>)[ref.slice(ref.lastIndexOf('/') + 1)] ?? {};
  };

  /** A parameter's example where the document gives it (on the parameter or its schema), as the text(s) sent. */
  const parameterExample = (p: Parameter): string[] | undefined => {
    const example = p.example ?? p.schema?.example;
    if (example === undefined) return undefined;
    return [example].flat().map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  };

  /** The bodies the reference would send: the media type's examples, else the schema's, else one built from its properties' examples. */
  function bodyExamples(content: MediaContent): { name: string; value: unknown }[] {
    if (content.example !== undefined) return [{ name: 'example', value: content.example }];
    if (content.examples) return Object.entries(content.examples).map(([name, e]) => ({ name, value: e.value }));
    let schema = resolve(content.schema);
    if (schema.example !== undefined) return [{ name: 'schema example', value: schema.example }];
    // One of several shapes (an entry or an array of them): the first, as the reference picks it.
    const first = ((schema.anyOf ?? schema.oneOf) as Schema[] | undefined)?.[0];
    if (first !== undefined) schema = resolve(first);
    if (schema.example !== undefined) return [{ name: 'first alternative', value: schema.example }];
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    const value = Object.fromEntries(
      Object.entries(properties)
        .map(([name, p]) => [name, resolve(p).example] as const)
        .filter(([, v]) => v !== undefined),
    );
    return [{ name: 'property examples', value }];
  }

  function operations(): { path: string; method: (typeof METHODS)[number]; op: Operation }[] {
    return Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
      METHODS.flatMap((method) => {
        const op = (item as Record<string, Operation | undefined>)[method];
        return op ? [{ path, method, op }] : [];
      }),
    );
  }

  it('when every operation is sent with its examples, then each answers 2xx, and only the hook operations by id cannot be sent', async () => {
    const failures: string[] = [];
    const unsendable: string[] = [];
    let sent = 0;
    for (const { path, method, op } of operations()) {
      const parameters = (op.parameters ?? []).filter((p) => p.$ref === undefined);
      const missing = parameters.filter((p) => p.required && parameterExample(p) === undefined).map((p) => p.name);
      if (missing.length > 0) {
        unsendable.push(`${op.operationId} (${missing.join(', ')})`);
        continue;
      }
      let address = path;
      const query = new URLSearchParams();
      for (const p of parameters) {
        const example = parameterExample(p);
        if (example === undefined) continue;
        if (p.in === 'path') address = address.replace(`{${p.name}}`, encodeURIComponent(example.join(',')));
        if (p.in === 'query') for (const value of example) query.append(p.name, value);
      }
      const url = `/api${address === '/' ? '' : address}${query.size > 0 ? `?${query.toString()}` : ''}`;
      const bodies = Object.entries(op.requestBody?.content ?? {}).flatMap(([media, content]) =>
        bodyExamples(content).map((example) => ({ media, ...example })),
      );
      for (const body of bodies.length > 0 ? bodies : [undefined]) {
        let req = request(t.app)[method](url).set('Authorization', auth);
        if (body !== undefined) {
          req = req.set('Content-Type', body.media).send(typeof body.value === 'string' ? body.value : JSON.stringify(body.value));
        }
        const res = await req.buffer(true).parse((stream, done) => {
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => done(null, Buffer.concat(chunks).toString('utf8')));
        });
        sent += 1;
        const documented = res.status in op.responses;
        if (res.status < 200 || res.status > 299 || !documented) {
          const what = body ? ` [${body.media}, ${body.name}]` : '';
          failures.push(
            `${method.toUpperCase()} ${url}${what} → ${res.status}${documented ? '' : ' (undocumented)'} ${String(res.body).slice(0, 300)}`,
          );
        }
      }
    }
    expect(failures).toEqual([]);
    expect(unsendable).toEqual([
      'getHook (UniqueId)',
      'updateHook (UniqueId)',
      'deleteHook (UniqueId)',
      'getHookExample (UniqueId)',
      'testHook (UniqueId)',
      'listHookDeliveries (UniqueId)',
      'redeliverHookDelivery (UniqueId, DeliveryId)',
    ]);
    expect(sent).toBeGreaterThan(50);
  });

  it('when the calls examples are sent, then they find calls of the demo week (not an empty window)', async () => {
    const op = (doc.paths?.['/calls'] as Record<string, Operation>).get!;
    const query = new URLSearchParams(
      op
        .parameters!.filter((p) => p.in === 'query' && parameterExample(p) !== undefined)
        .map((p): [string, string] => [p.name, parameterExample(p)!.join(',')]),
    );
    const res = await request(t.app).get(`/api/calls?${query.toString()}`).set('Authorization', auth);
    expect(res.status).toBe(200);
    expect((res.body as unknown[]).length).toBeGreaterThan(0);
  });
});
