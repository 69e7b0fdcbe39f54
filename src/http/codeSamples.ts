/**
 * Request samples for the TypeScript client (clients/typescript) as the OpenAPI `x-codeSamples`
 * extension, which the reference at /api/docs shows beside the curl sample it makes itself.
 * A sample fills the path parameters and the required query parameters with their documented
 * example (or a placeholder naming the type) and, for a JSON body, its documented example.
 * docs/decisions.md (Operations).
 */
type Schema = Record<string, unknown>;
type Parameter = {
  name?: string;
  in?: string;
  required?: boolean;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
  schema?: Schema;
};
type Operation = {
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { content?: Record<string, { example?: unknown; examples?: Record<string, { value?: unknown }>; schema?: Schema }> };
  'x-codeSamples'?: { lang: string; label: string; source: string }[];
};
type Document = { paths?: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, Schema> } };

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

function exampleOf(p: { example?: unknown; examples?: Record<string, { value?: unknown }>; schema?: Schema }): unknown {
  if (p.example !== undefined) return p.example;
  const named = p.examples && Object.values(p.examples)[0]?.value;
  if (named !== undefined) return named;
  const schema = p.schema ?? {};
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = (Array.isArray(schema.type) ? schema.type[0] : schema.type) as string | undefined;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [];
  return `<${String(type ?? 'value')}>`;
}

/** A JSON value as TypeScript source, indented to sit at `indent`. */
function literal(value: unknown, indent: string): string {
  return JSON.stringify(value, null, 2).replace(/\n/g, `\n${indent}`);
}

function objectLiteral(entries: [string, unknown][], indent: string): string {
  const key = (k: string) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k));
  return `{ ${entries.map(([k, v]) => `${key(k)}: ${literal(v, indent)}`).join(', ')} }`;
}

function resolve(doc: Document, schema: Schema | undefined): Schema {
  const ref = schema?.$ref;
  if (typeof ref !== 'string') return schema ?? {};
  return doc.components?.schemas?.[ref.slice(ref.lastIndexOf('/') + 1)] ?? {};
}

/** A body example: the documented one, else the required properties (all when none is) with their examples. */
function bodyExample(doc: Document, schema: Schema | undefined): unknown {
  const s = resolve(doc, schema);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  const props = s.properties as Record<string, Schema> | undefined;
  if (!props) return exampleOf({ schema: s });
  const required = Array.isArray(s.required) && s.required.length > 0 ? (s.required as string[]) : Object.keys(props);
  return Object.fromEntries(required.filter((k) => props[k]).map((k) => [k, exampleOf({ schema: resolve(doc, props[k]) })]));
}

/** The TypeScript client call of one operation. */
export function typeScriptSample(doc: Document, path: string, method: string, op: Operation): string {
  const params = (op.parameters ?? []).filter((p): p is Parameter => !('$ref' in p));
  const pathParams = params.filter((p) => p.in === 'path').map((p): [string, unknown] => [p.name!, exampleOf(p)]);
  const query = params.filter((p) => p.in === 'query' && p.required).map((p): [string, unknown] => [p.name!, exampleOf(p)]);
  const parts: string[] = [];
  const paramParts: string[] = [];
  if (pathParams.length > 0) paramParts.push(`path: ${objectLiteral(pathParams, '    ')}`);
  if (query.length > 0) paramParts.push(`query: ${objectLiteral(query, '    ')}`);
  if (paramParts.length > 0) parts.push(`  params: { ${paramParts.join(', ')} },`);
  const json = op.requestBody?.content?.['application/json'];
  if (json) {
    const example = json.example ?? (json.examples && Object.values(json.examples)[0]?.value) ?? bodyExample(doc, json.schema);
    parts.push(`  body: ${literal(example, '  ')},`);
  }
  const options = parts.length > 0 ? `, {\n${parts.join('\n')}\n}` : '';
  return [
    "import { createLcmClient } from 'lead-call-api-client';",
    '',
    "const api = createLcmClient({ baseUrl: 'https://lcm.example.com', username: 'USERNAME', password: 'PASSWORD' });",
    `const { data, error, response } = await api.${method.toUpperCase()}('${path}'${options});`,
    '',
  ].join('\n');
}

/** Adds the TypeScript client sample to every operation of the document (in place). */
export function addCodeSamples(doc: Document): void {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Operation | undefined;
      if (!op) continue;
      op['x-codeSamples'] = [{ lang: 'typescript', label: 'TypeScript client', source: typeScriptSample(doc, path, method, op) }];
    }
  }
}
