import { Readable } from 'node:stream';
import type { Request } from 'express';
import type { Settings } from '../../config/settings';
import { defineEndpoint, right } from '../endpoint';
import { DATABASE_RETRY_AFTER_SECONDS, forbidden, HttpProblem, invalidParameter, ProblemCode } from '../problem';
import { bulkImportBodies, bulkImportQuery, bulkImportResponse, duplicateSettings } from '../schemas/leads';
import { duplicateRule } from '../../domain/duplicates';
import { responseAbortSignal, streamToResponse } from '../streamResponse';
import { BodyReader } from '../../streams/bodyRecords';
import { Spool } from '../../streams/spool';
import { charsetName, csvSeparatorProblem, isKnownEncoding } from '../../streams/encoding';
import { contentCoding, decodedBody, isDecodableCoding } from '../../streams/contentEncoding';
import { BulkFormat, BulkPiece, BulkStop, runBulkImport } from '../../ingest/bulkImport';
import { BulkKeyReused, startKeyedBulkImport } from '../../ingest/bulkImportWithKey';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKey, idempotencyKeyReused } from '../idempotencyKey';
import { campaignForImport, ImportRefused } from '../../ingest/leadImportRules';
import { liftRequestDeadline } from '../requestDeadline';
import { continueBody } from '../expectContinue';

/** Media types of a bulk body, and the format each is read as. */
const FORMATS: Record<string, BulkFormat> = {
  'application/json': 'json',
  'application/x-ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'text/csv': 'csv',
};

/** A quiet body (a client sending slowly) still gets its rows stored and answered this soon. */
const MAX_BATCH_DELAY_MS = 50;

/** Answer bytes a bulk import holds in memory for a client that does not read yet; more go to a file. */
const ANSWER_MEMORY_BYTES = 1024 * 1024;

function bodyFormat(req: Request): { format: BulkFormat; charset?: string } {
  const header = req.get('content-type') ?? '';
  const media = header.split(';')[0]!.trim().toLowerCase();
  const format = FORMATS[media];
  if (format === undefined) {
    throw new HttpProblem(
      'unsupported_media_type',
      `Content-Type ${media ? JSON.stringify(media) : '(none)'} is not a bulk body: send application/json (an array), application/x-ndjson or text/csv`,
    );
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(header)?.[1];
  return { format, ...(charset ? { charset } : {}) };
}

/**
 * A CSV separator the body's encoding has no character for (U+FFFD in windows-1252, `€` in
 * iso-8859-1) never splits a row, or splits it exactly where the bytes were not valid: a 400
 * before the body is read, as the CSV exports refuse one they cannot write (csvSeparatorProblem).
 */
function refuseUnreadableSeparator(separator: string, encoding: string, from: 'Encoding' | 'charset' | 'default'): void {
  const problem = csvSeparatorProblem(separator, encoding, 'read');
  if (problem === undefined) return;
  const source = { Encoding: 'the Encoding parameter', charset: 'the Content-Type charset', default: 'the default' }[from];
  throw invalidParameter('CsvFieldSeparator', `${problem} (the body's encoding, from ${source})`);
}

/** The final element of an answer that ended early, as a problem object (status as it would be alone). */
function stopProblem(stop: BulkStop): HttpProblem {
  const read = stop.rows === 0 ? 'no row was read' : `rows 1 to ${stop.rows} were answered`;
  const problems: Record<BulkStop['reason'], [ProblemCode, string]> = {
    malformed: [
      'invalid_body',
      `the body cannot be read further: ${'message' in stop ? stop.message : ''}; ${read}, the rest of the body was not read`,
    ],
    too_large: [
      'payload_too_large',
      `the body is over the bulk import limit of ${'limit' in stop ? stop.limit : 0} bytes (BULK_BODY_LIMIT); ${read}, the rest of the body was not read`,
    ],
    header: [
      'invalid_body',
      stop.reason === 'header' && stop.undecodableIn !== undefined
        ? `the CSV header row holds bytes that are not valid in the body's encoding (${charsetName(stop.undecodableIn)}): ` +
          'name the encoding the file is written in with the Encoding parameter or the Content-Type charset (for example windows-1252)'
        : "the CSV header row names columns that are not fields of the campaign's lead definition",
    ],
    campaign_unavailable: [
      'forbidden',
      `the campaign was removed or left the account's projects during the import; ${read}, the rest was not stored`,
    ],
    key_conflict: [
      'conflict',
      `Idempotency-Key: another request with this key stored rows meanwhile, or this body's rows differ from its; ${read}, the rest was not stored`,
    ],
    idle: [
      'invalid_body',
      `no byte of the body arrived for ${'idleMs' in stop ? stop.idleMs : 0} ms (BULK_BODY_IDLE_TIMEOUT_MS); ${read}, the rest of the body was not read`,
    ],
    unavailable: [
      'service_unavailable',
      `the database could not be reached while storing rows; ${read}, the rest was not stored; retry shortly`,
    ],
    failed: ['internal_error', `the import failed while storing rows; ${read}, the rest was not stored`],
  };
  const [code, detail] = problems[stop.reason];
  if (stop.reason === 'idle') return new HttpProblem(code, detail, undefined, {}, [408, 'Request timeout']);
  if (stop.reason === 'unavailable')
    return new HttpProblem(code, detail, undefined, { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) });
  if (stop.reason === 'key_conflict')
    return new HttpProblem(code, detail, [{ parameter: 'Idempotency-Key', message: 'is in use by another request' }]);
  return new HttpProblem(code, detail, stop.reason === 'header' ? stop.errors : undefined);
}

/**
 * The answer as JSON text: `[`, the committed results, a final problem element when the import
 * ended early, `]`. A failure before any row was answered is thrown instead (the status line
 * is not sent yet, so it becomes a plain problem response).
 */
async function* answerText(pieces: AsyncIterable<BulkPiece>, onStop: (stop: BulkStop) => void): AsyncGenerator<string> {
  let opened = false;
  for await (const piece of pieces) {
    if (piece.kind === 'results') {
      if (piece.text === '') continue;
      yield (opened ? ',\n' : '[\n') + piece.text;
      opened = true;
    } else {
      onStop(piece.stop);
      const problem = stopProblem(piece.stop);
      if (!opened) throw problem;
      yield ',\n' + JSON.stringify({ ...problem.toJSON(), rows: piece.stop.rows });
    }
  }
  yield opened ? '\n]\n' : '[]\n';
}

export function bulkImportEndpoint(
  settings: Pick<
    Settings,
    | 'BULK_BODY_LIMIT'
    | 'BULK_BATCH_SIZE'
    | 'BULK_PARALLEL_BATCHES'
    | 'BULK_BODY_IDLE_TIMEOUT_MS'
    | 'BULK_ANSWER_SPOOL_LIMIT'
    | 'BULK_ROW_MAX_BYTES'
    | 'LEAD_VALUE_MAX_BYTES'
  >,
) {
  return defineEndpoint({
    service: 'leads.bulk',
    operationId: 'importLeadsBulk',
    method: 'post',
    path: '/leads/bulk',
    summary: 'Import many leads in one request',
    description:
      'The body is read as it arrives: a JSON array (of data objects, or of import bodies `{ CampaignCode?, Data, LeadPool? }`), NDJSON (one object a line) or CSV (a header row of field names, then one row per lead). ' +
      "Each row is checked like a single import (POST /leads) and the valid rows are stored in batches (one transaction each); a lead is New and goes into the row's pool, the request's `LeadPool`, or `(auto) yyyy-MM-dd` of the platform-local date at the moment its batch is stored. " +
      "A field above the account's entry access counts as a field the definition does not have (a CSV header naming one is a 400). " +
      "A row larger than the server's row limit (BULK_ROW_MAX_BYTES, 1 MiB of UTF-8 by default) fails alone and the rows after it are read; a row holding a value over LEAD_VALUE_MAX_BYTES (64 KiB by default) fails naming it.\n\n" +
      'The answer is a JSON array streamed as the batches are stored, one result per row in input order: `{ row, success, uniqueId?, status?, errors? }`. ' +
      'Every result received is a stored row. Rows are numbered from 1; a CSV header row and blank lines are not counted. ' +
      'A body that breaks (JSON syntax, CSV quoting) or grows over the limit mid-stream keeps the rows before it: the broken row is answered with its number, and the array ends with a problem element (`status` 400 or 413, `rows` answered). ' +
      "A body that stalls (no byte for the server's idle limit, 30 s by default) ends the same way with a `status` 408 element; the upload as a whole has no time limit while it keeps sending. " +
      'A body that fails before its first row is a plain 400/413 (408 when it stalls). A client may send the whole body before it reads the answer: the server holds the answer meanwhile (up to BULK_ANSWER_SPOOL_LIMIT, 2 GB by default) and keeps reading.\n\n' +
      "The campaign is checked before the body is read: unknown is a 400, outside the account's projects a 403. Content-Type decides the format (415 for others). " +
      'A body may come compressed (`Content-Encoding: gzip`, `deflate` or `br`; the size limit applies to it decoded); another Content-Encoding is a 415. ' +
      'Counted as one request however many rows it holds.\n\n' +
      'With an `Idempotency-Key` header the key covers the whole request (its parameters and rows): a retry of a finished import answers the first answer again (header `Idempotent-Replayed: true`) without storing anything; ' +
      'a retry of an import that was cut short (the client left) answers the rows stored before from the kept answer and imports the rest, so no row is stored twice. ' +
      'The same key with other parameters or other rows is a 409 (also while the first request still runs). Keys are kept 24 hours.',
    tags: ['Leads'],
    access: right('Leads', 'Post'),
    representations: ['json'],
    query: bulkImportQuery,
    streamedBody: {
      description: 'The leads, as a JSON array, NDJSON or CSV; read as a stream.',
      content: bulkImportBodies,
    },
    response: bulkImportResponse,
    errorStatuses: [403, 409],
    headers: [IDEMPOTENCY_KEY_HEADER],
    async handler({ req, res, query, account, scope, db, clock, zone, logger, countRows }) {
      const key = idempotencyKey(req);
      const { format, charset } = bodyFormat(req);
      if (charset !== undefined && query.Encoding === undefined && !isKnownEncoding(charset)) {
        throw new HttpProblem('unsupported_media_type', `the charset ${JSON.stringify(charset)} is not a known encoding`);
      }
      const encoding = query.Encoding ?? charset ?? 'utf-8';
      const separator = query.CsvFieldSeparator ?? ';';
      if (format === 'csv') {
        refuseUnreadableSeparator(
          separator,
          encoding,
          query.Encoding !== undefined ? 'Encoding' : charset !== undefined ? 'charset' : 'default',
        );
      }
      const coding = contentCoding(req.get('content-encoding'));
      if (coding !== undefined && !isDecodableCoding(coding)) {
        throw new HttpProblem(
          'unsupported_media_type',
          `Content-Encoding ${JSON.stringify(coding)} is not one a bulk body is read in: send it as it is, or gzip, deflate or br`,
        );
      }
      const declared = Number(req.get('content-length'));
      if (Number.isFinite(declared) && declared > settings.BULK_BODY_LIMIT) {
        throw new HttpProblem(
          'payload_too_large',
          `the body is over the bulk import limit of ${settings.BULK_BODY_LIMIT} bytes (BULK_BODY_LIMIT)`,
        );
      }
      const campaign = await campaignForImport(db, query.CampaignCode, scope).catch((err: unknown) => {
        if (!(err instanceof ImportRefused)) throw err;
        if (err.reason === 'unknown_campaign') throw invalidParameter('CampaignCode', 'is not the code of a campaign');
        throw forbidden(`campaign ${err.campaignCode} belongs to a project outside this account's project rights`);
      });

      // From here the body is read under the idle limit instead of the whole-request deadline:
      // a long upload runs as long as it keeps sending (docs/decisions.md, "Overload and timeouts").
      liftRequestDeadline(req);
      continueBody(req, res);
      const signal = responseAbortSignal(res);
      const deps = { db, clock, zone, logger };
      const importer = { accountId: account.id, userId: account.userId, scope, entryAccess: account.entryAccess };
      const duplicates = duplicateRule(campaign.duplicates, duplicateSettings(query));
      const request = { campaign, ...(query.LeadPool ? { pool: query.LeadPool } : {}), ...(duplicates ? { duplicates } : {}) };
      const body = {
        // BULK_BODY_LIMIT bounds the decoded bytes of a compressed body: a small body cannot unpack into an unbounded one.
        reader: new BodyReader(
          coding === undefined ? req : decodedBody(req, coding),
          settings.BULK_BODY_LIMIT,
          undefined,
          settings.BULK_BODY_IDLE_TIMEOUT_MS,
        ),
        format,
        encoding,
        separator,
      };
      const options = {
        batchSize: settings.BULK_BATCH_SIZE,
        parallelBatches: settings.BULK_PARALLEL_BATCHES,
        maxBatchDelayMs: MAX_BATCH_DELAY_MS,
        maxRowBytes: settings.BULK_ROW_MAX_BYTES,
        maxValueBytes: settings.LEAD_VALUE_MAX_BYTES,
      };
      let pieces: AsyncIterable<BulkPiece>;
      if (key === undefined) {
        pieces = runBulkImport({ deps, importer, request, body, options, signal });
      } else {
        const keyed = await startKeyedBulkImport({ deps, importer, request, body, options, signal }, key).catch((err: unknown) => {
          throw err instanceof BulkKeyReused ? idempotencyKeyReused() : err;
        });
        if (keyed.replayed) res.setHeader('Idempotent-Replayed', 'true');
        pieces = keyed.pieces;
      }
      const answer = answerText(pieces, (stop) => {
        // A stalled body is not read to its end: the connection closes once the answer is out,
        // or after as long again should the client not read it either.
        if (stop.reason !== 'idle') return;
        res.once('finish', () => req.socket.destroySoon());
        const cut = setTimeout(() => req.socket.destroy(), settings.BULK_BODY_IDLE_TIMEOUT_MS).unref();
        res.once('close', () => clearTimeout(cut));
      });
      // The status line waits for the first batch: a body that fails before it is a plain problem.
      const first = await answer.next();
      if (first.done || signal.aborted) return undefined;
      res.status(200).type('application/json; charset=utf-8');
      // The answer waits in a spool for a client that sends its whole body before reading:
      // the body is read and stored meanwhile, not held up by the unread answer.
      const spool = new Spool({ memoryBytes: ANSWER_MEMORY_BYTES, fileBytes: settings.BULK_ANSWER_SPOOL_LIMIT });
      await streamToResponse(res, Readable.from(prepend(first.value, answer)), [spool], { logger, countRows });
      return undefined;
    },
  });
}

async function* prepend<T>(first: T, rest: AsyncIterator<T>): AsyncGenerator<T> {
  yield first;
  try {
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
  } finally {
    await rest.return?.(undefined);
  }
}
