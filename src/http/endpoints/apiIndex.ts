import { z } from 'zod';
import { defineEndpoint, publicAccess } from '../endpoint';
import { escapeHtml, renderPage } from '../html';

/**
 * `GET /api`: the address `lcm serve` prints, and where a newcomer lands first. A small index of
 * where to go from here: JSON by default, a page of links to a browser. Public and not counted,
 * like the documentation it points to.
 */

const LINKS = {
  docs: { href: '/api/docs', title: 'API reference (interactive: search, examples, try-it)' },
  reference: { href: '/api/docs/reference', title: 'API reference as plain HTML' },
  openapi: { href: '/api/openapi.json', title: 'OpenAPI 3.1 document' },
  problems: { href: '/api/problems', title: 'Problem types: what each error code means' },
  health: { href: '/api/healthz', title: 'Health: the process is up' },
  readiness: { href: '/api/readyz', title: 'Readiness: the database and Redis are reachable' },
} as const;

const link = z.object({ href: z.string(), title: z.string() });

const apiIndexOut = z
  .object({
    name: z.literal('lead-call-api'),
    description: z.string(),
    links: z.object({
      docs: link,
      reference: link,
      openapi: link,
      problems: link,
      health: link,
      readiness: link,
    }),
  })
  .meta({ id: 'ApiIndex', description: 'Where to go from here.' });

const DESCRIPTION =
  'The HTTP API of the dialing and lead-management platform. Every other address is under /api and needs HTTP Basic credentials, ' +
  'except this index, the documentation and the OpenAPI document, the problem types, health and readiness, and the metrics unless the operator requires credentials for them.';

function indexPage(): string {
  const items = Object.values(LINKS)
    .map((l) => `<li><a href="${escapeHtml(l.href)}">${escapeHtml(l.title)}</a> <code>${escapeHtml(l.href)}</code></li>`)
    .join('');
  return renderPage(
    'lead-call-api',
    `<h1>lead-call-api</h1><p>${escapeHtml(DESCRIPTION)}</p><p>Start with the <a href="/api/docs">API reference</a>.</p><ul>${items}</ul>`,
  );
}

export const apiIndexEndpoint = defineEndpoint({
  service: 'index',
  operationId: 'getApiIndex',
  method: 'get',
  path: '/',
  summary: 'Where to start',
  description:
    'Links to the API reference, the OpenAPI document, the problem types and health: JSON by default, a page of links to a browser.',
  tags: ['Documentation'],
  access: publicAccess,
  counted: false,
  representations: ['json', 'html'],
  response: apiIndexOut,
  handler({ res, sendText, representation }) {
    if (representation === 'html') {
      res.vary('Accept');
      return sendText('text/html; charset=utf-8', indexPage());
    }
    return Promise.resolve({ body: { name: 'lead-call-api' as const, description: DESCRIPTION, links: LINKS } });
  },
});
