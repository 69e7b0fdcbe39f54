import { defineEndpoint, right } from '../endpoint';
import { forbidden, HttpProblem, notFound } from '../problem';
import { sendExport } from '../exportResponse';
import { sendOptionsOf } from '../exportStream';
import {
  addDoNotCallBody,
  addDoNotCallResponse,
  doNotCallOut,
  doNotCallPath,
  doNotCallQuery,
  removeDoNotCallQuery,
} from '../schemas/doNotCall';
import { z } from 'zod';
import { renderDoNotCallEntry, type DoNotCallEntry } from '../../domain/doNotCall';
import { openDoNotCallCursor } from '../../data/doNotCallRepository';
import { jsonArrayText } from '../../streams/rowsToText';
import { DoNotCallInput, DoNotCallRefused, listNumbers, unlistNumber } from '../../ingest/doNotCall';

/**
 * The customer's do-not-call list (docs/decisions.md, Do-not-call): read, add, remove. The
 * global list is kept with `lcm dnc --global` only; it is not reachable here.
 */

/**
 * A refused listing: unreadable numbers, unknown projects and past expiry times are 400s, foreign
 * projects a 403. The fields are named as the body names them: `[1].phoneNumber` in an array,
 * `phoneNumber` in a single entry.
 */
function refusal(err: unknown, sentArray = false): never {
  if (!(err instanceof DoNotCallRefused)) throw err;
  const errors = err.errors.map((e) => ({ field: sentArray ? `[${e.index}].${e.field}` : e.field, message: e.message }));
  if (err.reason === 'project_forbidden')
    throw forbidden(`${errors.map((e) => e.field).join(', ')}: the project is outside this account's project rights`);
  throw new HttpProblem('invalid_body', errors.map((e) => `${e.field}: ${e.message}`).join('; '), errors);
}

const listDoNotCallEndpoint = defineEndpoint({
  service: 'donotcallnumbers.list',
  operationId: 'listDoNotCallNumbers',
  method: 'get',
  path: '/donotcallnumbers',
  summary: 'The do-not-call list',
  description:
    "The customer's do-not-call entries the account can see: those of its projects and those that apply to every project; expired entries are left out. " +
    'Ordered by modifiedTime (oldest first), streamed. `Project` narrows to the entries of those projects; `ModifiedFrom` to entries added or changed since.',
  tags: ['Do-not-call'],
  access: right('DoNoCallNumbers', 'Get'),
  representations: ['json'],
  streamed: true,
  query: doNotCallQuery,
  response: z.array(doNotCallOut),
  dateTimes: true,
  async handler({ res, query, scope, db, clock, zone, dateTimeFormat, cursor: cursorOptions, logger, countRows, exports }) {
    const cursor = await openDoNotCallCursor(
      db,
      { global: false, scope },
      {
        now: clock(),
        ...(query.Project ? { projects: query.Project } : {}),
        ...(query.ModifiedFrom ? { modifiedFrom: query.ModifiedFrom } : {}),
      },
      cursorOptions,
    );
    res.status(200).type('application/json; charset=utf-8');
    const toJson = (entry: DoNotCallEntry) => JSON.stringify(renderDoNotCallEntry(entry, zone, dateTimeFormat));
    // As the exports send: compressed when asked, a client that takes nothing cut after the stall timeout.
    await sendExport(res, jsonArrayText(cursor, toJson), { logger, countRows, ...sendOptionsOf(exports) });
    return undefined;
  },
});

const addDoNotCallEndpoint = defineEndpoint({
  service: 'donotcallnumbers.add',
  operationId: 'addDoNotCallNumbers',
  method: 'post',
  path: '/donotcallnumbers',
  summary: 'Add numbers to the do-not-call list',
  description:
    'Adds one entry or an array of entries; an entry already on the list (same number and project) gets the new note and expiry. ' +
    "In the same transaction every open lead with the number moves to DoNotCall: the leads of the entry's project, or of every project of the account when the entry has none. " +
    'Leads imported later with a listed number arrive as DoNotCall. A number that cannot be read, an unknown project or an expiry time in the past is a 400 naming the entry; ' +
    "a project outside the account's projects is a 403; nothing is stored then.",
  tags: ['Do-not-call'],
  access: right('DoNoCallNumbers', 'Post'),
  representations: ['json'],
  body: addDoNotCallBody,
  response: addDoNotCallResponse,
  dateTimes: true,
  async handler({ body, account, scope, db, clock, zone, dateTimeFormat }) {
    const many = Array.isArray(body);
    const inputs: DoNotCallInput[] = (many ? body : [body]).map((e) => ({
      phoneNumber: e.phoneNumber,
      ...(e.project ? { project: e.project } : {}),
      ...(e.note ? { note: e.note } : {}),
      ...(e.expiresTime ? { expiresTime: e.expiresTime } : {}),
    }));
    const listed = await listNumbers({ db, clock }, { global: false, scope }, inputs, account.userId).catch((err: unknown) =>
      refusal(err, many),
    );
    const rendered = listed.entries.map((e) => ({ ...renderDoNotCallEntry(e, zone, dateTimeFormat), movedLeads: e.movedLeads }));
    return { body: many ? rendered : rendered[0] };
  },
});

const removeDoNotCallEndpoint = defineEndpoint({
  service: 'donotcallnumbers.delete',
  operationId: 'removeDoNotCallNumber',
  method: 'delete',
  path: '/donotcallnumbers/{PhoneNumber}',
  summary: 'Remove a number from the do-not-call list',
  description:
    "Removes the number's entries the account can see (those of its projects and the one for every project), or with `Project` that project's entry only. " +
    'Leads keep their status. 404 when no such entry exists; a number that cannot be read is a 400.',
  tags: ['Do-not-call'],
  access: right('DoNoCallNumbers', 'Delete'),
  representations: ['json'],
  params: doNotCallPath,
  query: removeDoNotCallQuery,
  successStatus: 204,
  errorStatuses: [404],
  async handler({ params, query, scope, db, clock }) {
    const removed = await unlistNumber({ db, clock }, { global: false, scope }, params.PhoneNumber, query.Project).catch((err: unknown) => {
      if (err instanceof DoNotCallRefused && err.reason === 'invalid') {
        const e = err.errors[0]!;
        const parameter = e.field === 'phoneNumber' ? 'PhoneNumber' : 'Project';
        throw new HttpProblem('invalid_parameter', `${parameter}: ${e.message}`, [{ parameter, message: e.message }]);
      }
      return refusal(err);
    });
    if (removed === 0)
      throw notFound(`${params.PhoneNumber} is not on the do-not-call list${query.Project ? ` of project ${query.Project}` : ''}`);
    return { status: 204 };
  },
});

export const doNotCallEndpoints = [listDoNotCallEndpoint, addDoNotCallEndpoint, removeDoNotCallEndpoint];
