import etag from 'etag';
import { z } from 'zod';
import { defineEndpoint, Endpoint, publicAccess } from '../endpoint';
import { buildOpenApiDocument, OpenApiDocument } from '../openapi';
import { escapeHtml, renderPage } from '../html';
import { renderApiReferencePage, scalarBundle } from '../apiReference';
import { negotiateCoding } from '../compression';
import { ifNoneMatchMatches } from '../conditionalRequest';

/**
 * `GET /api/openapi.json`, `GET /api/docs` and `GET /api/docs/reference`: the OpenAPI 3.1
 * document, the interactive reference reading it (src/http/apiReference.ts, its script served
 * from node_modules at `/api/docs/scalar.js`), and a plain page rendered from it on the server
 * that needs no script. All are public and not counted. The document is built once, on first
 * request, from the final endpoint list.
 */
type Schema = Record<string, unknown>;
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Schema[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }>; headers?: Record<string, Schema> }>;
};

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

/** Backticks in descriptions become <code>; everything else is escaped. */
function prose(text: string | undefined): string {
  if (!text) return '';
  return text
    .split(/\n{2,}/)
    .map((para) => `<p>${escapeHtml(para).replace(/`([^`]+)`/g, '<code>$1</code>')}</p>`)
    .join('');
}

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

function anchor(prefix: string, name: string): string {
  return `${prefix}-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** A one-line type: `string`, `array of CalendarEvent` (linked), `one of a, b`. */
function typeOf(schema: Schema | undefined): string {
  if (!schema) return '<span class="none">any</span>';
  if (typeof schema.$ref === 'string') {
    const name = refName(schema.$ref);
    return `<a href="#${anchor('schema', name)}">${escapeHtml(name)}</a>`;
  }
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (alternatives) return alternatives.map(typeOf).join(' or ');
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => `<code>${escapeHtml(String(v))}</code>`).join(', ')}`;
  if ('const' in schema) return `<code>${escapeHtml(JSON.stringify(schema.const))}</code>`;
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type as string | undefined);
  if (type === 'array') return `array of ${typeOf(schema.items as Schema | undefined)}`;
  const format = typeof schema.format === 'string' ? ` (${escapeHtml(schema.format)})` : '';
  return `${escapeHtml(type ?? 'any')}${format}`;
}

function propertiesTable(schema: Schema | undefined): string {
  if (!schema) return '';
  if (schema.type === 'array') return `<p>Array of ${typeOf(schema.items as Schema)}.</p>${propertiesTable(schema.items as Schema)}`;
  const props = schema.properties as Record<string, Schema> | undefined;
  if (!props) return `<p>${typeOf(schema)}</p>`;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const rows = Object.entries(props)
    .map(
      ([name, p]) =>
        `<tr><td><code>${escapeHtml(name)}</code></td><td>${typeOf(p)}</td><td>${required.has(name) ? 'yes' : 'no'}</td><td>${prose(p.description as string | undefined)}</td></tr>`,
    )
    .join('');
  return `<table class="list"><thead><tr><th>Property</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** A schema named by reference is a link; an inline object also lists its properties. */
function describeSchema(schema: Schema | undefined): string {
  if (!schema || schema.$ref) return `<p>${typeOf(schema)}</p>`;
  const items = schema.items as Schema | undefined;
  if (schema.type === 'array' && items && !items.$ref) return propertiesTable(schema);
  return schema.properties ? propertiesTable(schema) : `<p>${typeOf(schema)}</p>`;
}

function resolveParameter(doc: OpenApiDocument, p: Schema): Schema {
  if (typeof p.$ref === 'string') return (doc.components?.parameters?.[refName(p.$ref)] ?? {}) as Schema;
  return p;
}

function renderOperation(doc: OpenApiDocument, path: string, method: string, op: Operation): string {
  const id = anchor('op', op.operationId ?? `${method}-${path}`);
  const auth = op.security && op.security.length === 0 ? 'No authentication' : 'HTTP Basic';
  const parameters = (op.parameters ?? []).map((p) => resolveParameter(doc, p));
  const paramRows = parameters
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td>${typeOf(p.schema as Schema)}</td><td>${prose(p.description as string | undefined)}</td></tr>`,
    )
    .join('');
  const params = paramRows
    ? `<h4>Parameters</h4><table class="list"><thead><tr><th>Name</th><th>In</th><th>Required</th><th>Type</th><th>Description</th></tr></thead><tbody>${paramRows}</tbody></table>`
    : '';
  const bodyContent = op.requestBody?.content ?? {};
  const body = Object.entries(bodyContent)
    .map(
      ([media, c]) =>
        `<h4>Request body <code>${escapeHtml(media)}</code>${op.requestBody?.required ? ' (required)' : ''}</h4>${describeSchema(c.schema)}`,
    )
    .join('');
  const success = Object.entries(op.responses ?? {}).find(([status]) => status.startsWith('2'));
  const successJson = success?.[1].content?.['application/json']?.schema;
  const successBody =
    successJson && !successJson.$ref ? `<h4>Response body (${escapeHtml(success[0])})</h4>${describeSchema(successJson)}` : '';
  const responseRows = Object.entries(op.responses ?? {})
    .map(([status, r]) => {
      const media = Object.entries(r.content ?? {})
        .map(([m, c]) => `<code>${escapeHtml(m)}</code>: ${typeOf(c.schema)}`)
        .join('<br>');
      const headers = Object.keys(r.headers ?? {})
        .map((h) => `<code>${escapeHtml(h)}</code>`)
        .join(', ');
      return `<tr><td class="status s${escapeHtml(status[0]!)}">${escapeHtml(status)}</td><td>${prose(r.description)}</td><td>${media || '<span class="none">no body</span>'}</td><td>${headers}</td></tr>`;
    })
    .join('');
  return `<section class="op" id="${id}">
<h3><span class="method m-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code class="path">/api${escapeHtml(path)}</code></h3>
<p class="summary">${escapeHtml(op.summary ?? '')} <span class="auth">· ${auth} · <code>${escapeHtml(op.operationId ?? '')}</code></span></p>
${prose(op.description)}${params}${body}
<h4>Responses</h4><table class="list"><thead><tr><th>Status</th><th>Description</th><th>Content</th><th>Headers</th></tr></thead><tbody>${responseRows}</tbody></table>${successBody}
</section>`;
}

const DOCS_STYLE = `
nav ul{list-style:none;padding:0;margin:.2rem 0 .6rem}nav li{margin:.15rem 0}nav h3{margin:.6rem 0 0}
section.op{border-top:1px solid #d6dbe0;padding-top:.75rem;margin-top:1.5rem}
h2{margin-top:2rem}h3{font-size:1.05rem;margin:.2rem 0}h4{margin:.9rem 0 .3rem;font-size:.95rem}
.method{display:inline-block;min-width:4.2rem;text-align:center;border-radius:4px;color:#fff;font-size:.8rem;padding:.1rem .3rem}
.m-get{background:#2f6db5}.m-post{background:#2b8a3e}.m-put{background:#b7791f}.m-delete{background:#c0392b}
.summary{margin:.2rem 0}.auth{color:#5b6570;font-size:.85rem}
td.status{font-weight:600}.s2{color:#2b8a3e}.s4{color:#b7791f}.s5{color:#c0392b}
td{white-space:normal}td p{margin:0 0 .3rem}
`;

function renderDocsPage(doc: OpenApiDocument): string {
  const byTag = new Map<string, { path: string; method: string; op: Operation }[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = (item as Record<string, Operation | undefined>)[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), { path, method, op }]);
    }
  }
  const nav = [...byTag.entries()]
    .map(
      ([tag, ops]) =>
        `<h3>${escapeHtml(tag)}</h3><ul>${ops
          .map(
            ({ path, method, op }) =>
              `<li><a href="#${anchor('op', op.operationId ?? `${method}-${path}`)}"><span class="method m-${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(path)}</code></a> ${escapeHtml(op.summary ?? '')}</li>`,
          )
          .join('')}</ul>`,
    )
    .join('');
  const sections = [...byTag.entries()]
    .map(([tag, ops]) => `<h2>${escapeHtml(tag)}</h2>${ops.map(({ path, method, op }) => renderOperation(doc, path, method, op)).join('')}`)
    .join('');
  const schemas = Object.entries(doc.components?.schemas ?? {})
    .map(
      ([name, s]) =>
        `<section class="op" id="${anchor('schema', name)}"><h3>${escapeHtml(name)}</h3>${prose((s as Schema).description as string | undefined)}${propertiesTable(s as Schema)}</section>`,
    )
    .join('');
  const title = `${doc.info.title} ${doc.info.version}`;
  const body = `<h1>${escapeHtml(title)}</h1>
<p class="meta">OpenAPI ${escapeHtml(doc.openapi)} · <a href="/api/openapi.json">openapi.json</a> · base path <code>/api</code></p>
${prose(doc.info.description)}
<nav><h2>Contents</h2>${nav}</nav>${sections}<h2>Schemas</h2>${schemas}`;
  return renderPage(`API documentation`, body, DOCS_STYLE);
}

export function docsEndpoints(endpoints: () => readonly Endpoint[]): Endpoint[] {
  let doc: OpenApiDocument | undefined;
  let page: string | undefined;
  let referencePage: string | undefined;
  const document = () => (doc ??= buildOpenApiDocument([...endpoints()]));

  const openApiJson = defineEndpoint({
    service: 'openapi',
    operationId: 'getOpenApiDocument',
    method: 'get',
    path: '/openapi.json',
    summary: 'The OpenAPI 3.1 document of this API',
    description: 'Generated from the same schemas the endpoints validate requests with.',
    tags: ['Documentation'],
    access: publicAccess,
    counted: false,
    representations: ['json'],
    response: z.object({ openapi: z.string() }).loose().meta({ description: 'An OpenAPI 3.1 document.' }),
    handler() {
      return Promise.resolve({ body: document() });
    },
  });

  const docsPage = defineEndpoint({
    service: 'docs',
    operationId: 'getDocsPage',
    method: 'get',
    path: '/docs',
    summary: 'Interactive API reference',
    description:
      'The API reference (Scalar) reading this document: search, try-it against this server with Basic credentials, ' +
      'request samples (curl and the TypeScript client), every example. Served from this server, nothing from a CDN. ' +
      'Without JavaScript, `/api/docs/reference` is the same reference as plain HTML.',
    tags: ['Documentation'],
    access: publicAccess,
    counted: false,
    ownMediaType: true,
    representations: ['html'],
    handler({ req, res, sendText }) {
      // The page's links are relative to /api/docs (a proxy may add a prefix): /api/docs/ would
      // resolve them one folder too deep, so it is sent, relatively, to /api/docs.
      if (req.path.endsWith('/')) {
        const query = req.originalUrl.indexOf('?');
        res.redirect(301, `../docs${query < 0 ? '' : req.originalUrl.slice(query)}`);
        return Promise.resolve(undefined);
      }
      return sendText('text/html; charset=utf-8', (referencePage ??= renderApiReferencePage()));
    },
  });

  const docsScript = defineEndpoint({
    service: 'docs',
    operationId: 'getDocsScript',
    method: 'get',
    path: '/docs/scalar.js',
    summary: 'The script of the interactive API reference',
    description:
      'The browser bundle of @scalar/api-reference that `/api/docs` loads; cached for a day, with an ETag; compressed (br or gzip) when the client accepts it.',
    tags: ['Documentation'],
    access: publicAccess,
    counted: false,
    ownMediaType: true,
    writesMediaType: 'text/javascript',
    representations: ['json'],
    async handler({ req, res }) {
      const coding = negotiateCoding(req);
      const body = await scalarBundle(coding);
      // Its own ETag (the app makes none beyond the conditional reads), compared as the conditional reads compare it.
      const tag = etag(body, { weak: true });
      res.vary('Accept-Encoding').set('Cache-Control', 'public, max-age=86400').set('ETag', tag);
      if (ifNoneMatchMatches(req.get('If-None-Match'), tag)) {
        res.status(304).end();
        return undefined;
      }
      res.type('text/javascript; charset=utf-8');
      if (coding !== undefined) res.set('Content-Encoding', coding);
      res.send(body);
      return undefined;
    },
  });

  const plainPage = defineEndpoint({
    service: 'docs',
    operationId: 'getDocsReferencePage',
    method: 'get',
    path: '/docs/reference',
    summary: 'API reference as plain HTML',
    description:
      'An HTML page rendered on the server from the OpenAPI document, without script: every operation with its parameters, body, responses and schemas.',
    tags: ['Documentation'],
    access: publicAccess,
    counted: false,
    ownMediaType: true,
    representations: ['html'],
    handler({ sendText }) {
      page ??= renderDocsPage(document());
      return sendText('text/html; charset=utf-8', page);
    },
  });

  return [openApiJson, docsPage, docsScript, plainPage];
}
