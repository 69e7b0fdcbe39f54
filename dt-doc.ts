import { allEndpoints } from './src/http/routes';
import { Metrics } from './src/http/metrics';
import { buildOpenApiDocument } from './src/http/openapi';
const doc = buildOpenApiDocument(allEndpoints(new Metrics(false)));
for (const [path, item] of Object.entries(doc.paths ?? {})) for (const [m, op] of Object.entries(item as any)) {
  const o = op as any;
  console.log(m, path, o.operationId);
  for (const p of o.parameters ?? []) if (!p.$ref) console.log('   ', p.in, p.name, '::', p.description, JSON.stringify(p.schema).slice(0,150));
}
