import type { Readable } from 'node:stream';
import type { Response } from 'express';
import { encoderStream, isUtf8 } from '../streams/encoding';
import { rowsToText } from '../streams/rowsToText';
import { streamToResponse } from './streamResponse';
import type { AppServices } from './services';

/** Sets the headers of a CSV download: `text/csv; charset={encoding}` and an attachment name. */
export function setCsvHeaders(res: Response, encoding: string, fileName: string): void {
  res.status(200);
  // attachment() also sets a Content-Type from the extension: the charset goes on after it.
  res.attachment(fileName);
  res.setHeader('Content-Type', `text/csv; charset=${encoding}`);
}

/** Streams cursor rows as CSV text in `encoding`, the header line first (also for no rows). */
export async function streamCsv<T>(
  res: Response,
  services: AppServices,
  cursor: Readable,
  header: string,
  toLines: (row: T) => string,
  encoding: string,
  fileName: string,
): Promise<undefined> {
  setCsvHeaders(res, encoding, fileName);
  const text = rowsToText<T>(cursor, { head: header, format: toLines, utf8: isUtf8(encoding) });
  await streamToResponse(res, text, isUtf8(encoding) ? [] : [encoderStream(encoding)], services.logger);
  return undefined;
}

