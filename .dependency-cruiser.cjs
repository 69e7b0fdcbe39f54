/**
 * The layer rule (docs/architecture.md): imports go one way only,
 *   app → cli | http | jobs → ingest | ratelimit | export → data → domain | streams | config
 * (export, the transcoded exports, may import data: it sits beside ingest and ratelimit, above data.)
 * Modules of one layer do not import a sibling layer. `npm test` runs this; a backwards import
 * fails the build.
 */
const layer = (...names) => `^src/(${names.join('|')})/`;

const forbidden = [
  {
    name: 'app-is-the-top',
    comment: 'Only the composition root wires things together; nothing imports it.',
    from: { path: layer('cli', 'http', 'jobs', 'ingest', 'ratelimit', 'export', 'data', 'domain', 'streams', 'config') },
    to: { path: layer('app') },
  },
  {
    name: 'entry-points-are-not-imported',
    comment: 'Below the entry points nothing knows HTTP, the command line or the workers.',
    from: { path: layer('ingest', 'ratelimit', 'export', 'data', 'domain', 'streams', 'config') },
    to: { path: layer('cli', 'http', 'jobs') },
  },
  { name: 'cli-stands-alone', from: { path: layer('cli') }, to: { path: layer('http', 'jobs') } },
  { name: 'http-stands-alone', from: { path: layer('http') }, to: { path: layer('cli', 'jobs') } },
  { name: 'jobs-stand-alone', from: { path: layer('jobs') }, to: { path: layer('cli', 'http') } },
  {
    name: 'use-cases-are-not-imported-by-data',
    from: { path: layer('data', 'domain', 'streams', 'config') },
    to: { path: layer('ingest', 'ratelimit') },
  },
  { name: 'ingest-and-ratelimit-are-separate', from: { path: layer('ingest') }, to: { path: layer('ratelimit') } },
  { name: 'ratelimit-and-ingest-are-separate', from: { path: layer('ratelimit') }, to: { path: layer('ingest') } },
  {
    name: 'export-stands-beside-ingest-and-ratelimit',
    comment: 'The transcoded exports (binary COPY to bytes) are used by the entry points only.',
    from: { path: layer('ingest', 'ratelimit', 'data', 'domain', 'streams', 'config') },
    to: { path: layer('export') },
  },
  { name: 'export-needs-no-use-cases', from: { path: layer('export') }, to: { path: layer('ingest', 'ratelimit') } },
  { name: 'data-is-below-its-users', from: { path: layer('domain', 'streams', 'config') }, to: { path: layer('data') } },
  {
    name: 'domain-is-pure',
    comment: 'Domain rules know no streams and no settings.',
    from: { path: layer('domain') },
    to: { path: layer('streams', 'config') },
  },
  { name: 'streams-are-generic', from: { path: layer('streams') }, to: { path: layer('domain', 'config') } },
  { name: 'config-is-the-floor', from: { path: layer('config') }, to: { path: layer('domain', 'streams') } },
  { name: 'no-circular', severity: 'error', from: { path: '^src/' }, to: { circular: true } },
];

module.exports = {
  forbidden: forbidden.map((rule) => ({ severity: 'error', ...rule })),
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
