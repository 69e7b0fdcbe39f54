import fs from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import type { ContentCoding } from './compression';
import { escapeHtml } from './html';
import { HttpProblem } from './problem';
import { API_REFERENCE_PACKAGE } from '../config/paths';

/**
 * The interactive API reference at /api/docs: Scalar's API reference (the @scalar/api-reference
 * package's browser bundle from packages/api-reference, served by this server from node_modules, so nothing comes from a
 * CDN) reading /api/openapi.json. Search, try-it against this server with the account's Basic
 * credentials, request samples (curl, and the TypeScript client's from `x-codeSamples`), and
 * every tag, response and example open. Why Scalar: docs/decisions.md (Operations).
 */

/** The bundle the page loads: one script, no further chunks. */
function scalarBundlePath(): string {
  // The package lives in packages/api-reference (installed on the project's Node: docs/decisions.md,
  // "Runtime"). It exports only ES entry points; its main file sits in dist/, the bundle beside it.
  const main = require.resolve('@scalar/api-reference', { paths: [API_REFERENCE_PACKAGE] });
  return path.join(main.slice(0, main.lastIndexOf(`${path.sep}dist${path.sep}`)), 'dist', 'browser', 'standalone.js');
}

/** The bundle's bytes; a 503 naming the cause when the package is not installed (not a 500). */
async function readBundle(): Promise<Buffer> {
  try {
    return await fs.readFile(scalarBundlePath());
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ENOENT') throw err;
    const problem = new HttpProblem(
      'service_unavailable',
      'the interactive reference is not installed on this server (npm ci installs it in packages/api-reference); /api/docs/reference is the plain one',
    );
    problem.cause = err;
    throw problem;
  }
}

const compressWith: Record<ContentCoding, (body: Buffer) => Promise<Buffer>> = {
  zstd: (body) => promisify(zlib.zstdCompress)(body, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 19 } }),
  br: (body) =>
    promisify(zlib.brotliCompress)(body, {
      params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }),
  gzip: (body) => promisify(zlib.gzip)(body, { level: 9 }),
};
const bundles = new Map<ContentCoding | 'identity', Promise<Buffer>>();

/**
 * The bundle as sent in `coding`: read and compressed once, on the first request that asks
 * (4.2 MB plain, about a quarter of that compressed; higher levels than the exports' because it
 * is done once per process, off the event loop, not per request).
 */
export function scalarBundle(coding: ContentCoding | undefined): Promise<Buffer> {
  const key = coding ?? 'identity';
  let bundle = bundles.get(key);
  if (bundle === undefined) {
    bundle = coding === undefined ? readBundle() : scalarBundle(undefined).then(compressWith[coding]);
    bundles.set(key, bundle);
    bundle.catch(() => bundles.delete(key));
  }
  return bundle;
}

/** Scalar's configuration: offline (no fonts, telemetry, AI agent or MCP from outside), all open. */
const CONFIGURATION = {
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  hideClientButton: false,
  defaultOpenAllTags: true,
  expandAllResponses: true,
  persistAuth: false,
  authentication: { preferredSecurityScheme: 'basicAuth' },
  defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
};

/**
 * No inline script: the Content-Security-Policy (src/http/app.ts) allows scripts from this
 * server only, so the bundle mounts itself on the `#api-reference` element and reads its
 * configuration from the element's attributes. Paths are relative to /api/docs (script `docs/scalar.js`, document `openapi.json`), so the page
 * works behind a proxy that adds a prefix.
 */
export function renderApiReferencePage(): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · lead-call-api</title></head>
<body>
<noscript><p>This reference needs JavaScript. The same reference without script: <a href="docs/reference">docs/reference</a>; the document: <a href="openapi.json">openapi.json</a>.</p></noscript>
<script id="api-reference" data-url="openapi.json" data-configuration="${escapeHtml(JSON.stringify(CONFIGURATION))}"></script>
<script src="docs/scalar.js"></script>
</body></html>
`;
}
