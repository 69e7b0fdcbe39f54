import type { Readable, Transform } from 'node:stream';
import type { Response } from 'express';
import { ExportSession, ConnectionSource } from '../data/exportSession';
import type { TranscodedStream } from '../export/copyTranscode';
import type { ContentCoding } from './compression';
import { sendExport } from './exportResponse';
import type { StreamLogger } from './streamResponse';

/**
 * The two halves of every bulk export (calls family, simpleleads, saved searches, rawleads):
 * openExport runs the export's reads in one ExportSession (src/data/exportSession.ts) and
 * returns its body; sendExportBody streams that body to the client (src/http/exportResponse.ts).
 * Whether the body comes from the binary COPY transcoder or from the reference serializers
 * over a cursor is the endpoint's choice (ExportOptions.transcoder); both read in the session.
 */

/** How this request's exports run (set per request from the settings and Accept-Encoding). */
export interface ExportOptions {
  /** Where export connections come from. */
  source: ConnectionSource;
  /** The binary COPY transcoder (EXPORT_TRANSCODER); false: the reference serializers over a cursor. */
  transcoder: boolean;
  /** Present when compression is on (COMPRESSION): the negotiated coding, and the small-body limit. */
  compression?: { coding: ContentCoding | undefined; minBytes: number };
  /** Cut a client that takes no data for this long (undefined: never). */
  stallTimeoutMs?: number;
}

/** How a list streamed outside a session (do-not-call entries, a JSON list of events) is sent as the exports are. */
export function sendOptionsOf(exports: ExportOptions): {
  compression?: NonNullable<ExportOptions['compression']>;
  stallTimeoutMs?: number;
} {
  return {
    ...(exports.compression ? { compression: exports.compression } : {}),
    ...(exports.stallTimeoutMs !== undefined ? { stallTimeoutMs: exports.stallTimeoutMs } : {}),
  };
}

export interface ExportRequest {
  res: Response;
  logger: StreamLogger;
  countRows: (rows: number) => void;
  /** The client's abort: an export whose client leaves while it is being prepared gives its session back. */
  cursor: { signal: AbortSignal };
  exports: ExportOptions;
}

/** An export's body and what must close before the export counts as done. */
export interface ExportBody {
  stream: Readable;
  /** Gives a written chunk's buffer back to its pool (transcoded bodies). */
  recycle?: (chunk: Uint8Array) => void;
  /** Settles once the session has ended its transaction and given its connection back. */
  closed: Promise<void>;
}

/**
 * Opens the export's session (the client leaving closes it), lets `build` read what names the
 * rows and open them, and returns the body. The session closes when the body closes, or here
 * if `build` fails (its error then still becomes a problem response: no header is sent yet).
 */
export async function openExport(ctx: ExportRequest, build: (session: ExportSession) => Promise<Readable>): Promise<ExportBody> {
  const session = await ExportSession.open(ctx.exports.source, ctx.cursor.signal);
  try {
    const stream = await build(session);
    stream.once('close', () => void session.close());
    return { stream, recycle: (stream as Partial<TranscodedStream>).recycle, closed: session.closed };
  } catch (err) {
    await session.close();
    throw err;
  }
}

/**
 * Streams the body (status and headers set by the caller) through `transforms` (an encoder)
 * and the negotiated compression; settles once the response has ended and the session has
 * closed. Never rejects.
 */
export async function sendExportBody(ctx: ExportRequest, body: ExportBody, transforms: Transform[] = []): Promise<undefined> {
  await sendExport(ctx.res, body.stream, {
    logger: ctx.logger,
    countRows: ctx.countRows,
    transforms,
    compression: ctx.exports.compression,
    recycle: body.recycle,
    stallTimeoutMs: ctx.exports.stallTimeoutMs,
  });
  await body.closed;
  return undefined;
}
