import { z } from 'zod';
import type { Response } from 'express';
import { defineEndpoint, EndpointContext, publicAccess } from '../endpoint';
import { escapeHtml, renderPage } from '../html';
import { isProblemCode, notFound } from '../problem';
import { ProblemType, problemType, problemTypes } from '../problemTypes';
import { problemTypeOut, problemTypePath } from '../schemas/problems';

/**
 * `GET /api/problems` and `GET /api/problems/{Code}`: the pages every problem `type` links to.
 * Public and not counted, like the documentation: a client that has just been refused must be
 * able to read why. JSON by default; browsers get a readable page.
 */

/** Backticks become <code>; everything else is escaped. */
const prose = (text: string): string => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

function problemSection(p: ProblemType): string {
  return `<h2 id="${escapeHtml(p.code)}">${p.status} ${escapeHtml(p.title)} <code>${escapeHtml(p.code)}</code></h2>
<p>${prose(p.meaning)}</p>
<h3>When the API answers it</h3><ul>${p.whenAnswered.map((w) => `<li>${prose(w)}</li>`).join('')}</ul>
<h3>What to do</h3><p>${prose(p.whatToDo)}</p>
<h3>Example</h3><pre><code>${escapeHtml(JSON.stringify(p.example, null, 2))}</code></pre>`;
}

type SendText = EndpointContext<unknown, unknown, unknown>['sendText'];

const FOOTER = '<p class="meta"><a href="/api/problems">All problem types</a> · <a href="/api/docs">API documentation</a></p>';
const STYLE = 'pre{background:#f3f5f7;padding:.6rem;overflow-x:auto}pre code{background:none}h3{font-size:1rem;margin:1rem 0 .3rem}';

function sendHtml({ res, sendText }: { res: Response; sendText: SendText }, title: string, body: string): Promise<undefined> {
  res.vary('Accept');
  return sendText('text/html; charset=utf-8', renderPage(title, `<h1>${escapeHtml(title)}</h1>${body}${FOOTER}`, STYLE));
}

const listProblemTypesEndpoint = defineEndpoint({
  service: 'problems.list',
  operationId: 'listProblemTypes',
  method: 'get',
  path: '/problems',
  summary: 'Every problem type',
  description:
    'Each error code the API answers with: its status, what it means, when it is answered, what a client should do, and an example body.',
  tags: ['Documentation'],
  access: publicAccess,
  counted: false,
  representations: ['json', 'html'],
  response: z.array(problemTypeOut),
  handler({ res, sendText, representation }) {
    const types = problemTypes();
    if (representation !== 'html') return Promise.resolve({ body: types });
    const index = `<ul>${types.map((p) => `<li><a href="/api/problems/${escapeHtml(p.code)}"><code>${escapeHtml(p.code)}</code></a> ${p.status} ${escapeHtml(p.title)}: ${prose(p.meaning)}</li>`).join('')}</ul>`;
    return sendHtml({ res, sendText }, 'Problem types', index + types.map(problemSection).join(''));
  },
});

const getProblemTypeEndpoint = defineEndpoint({
  service: 'problems.get',
  operationId: 'getProblemType',
  method: 'get',
  path: '/problems/{Code}',
  summary: 'One problem type',
  description:
    'The page a problem’s `type` links to: what the code means, when it is answered, what to do, and an example; 404 for a code the API does not have.',
  tags: ['Documentation'],
  access: publicAccess,
  counted: false,
  representations: ['json', 'html'],
  params: problemTypePath,
  response: problemTypeOut,
  errorStatuses: [404],
  handler({ res, sendText, params, representation }) {
    if (!isProblemCode(params.Code)) throw notFound(`no problem type ${params.Code}`);
    const p = problemType(params.Code);
    if (representation !== 'html') return Promise.resolve({ body: p });
    return sendHtml({ res, sendText }, `Problem: ${p.title}`, problemSection(p));
  },
});

export const problemTypeEndpoints = [listProblemTypesEndpoint, getProblemTypeEndpoint];
