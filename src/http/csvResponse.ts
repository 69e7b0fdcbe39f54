import type { Readable } from 'node:stream';
import type { Response } from 'express';
import { encoderStream, isUtf8 } from '../streams/encoding';
import { rowsToText } from '../streams/rowsToText';
import { StreamLogger, streamToResponse } from './streamResponse';

/** Sets the headers of a CSV download: `text/csv; charset={encoding}` and an attachment name. */
export function setCsvHeaders(res: Response, encoding: string, fileName: string): void {
  res.status(200);
  // attachment() also sets a Content-Type from the extension: the charset goes on after it.
  res.attachment(fileName);
  res.setHeader('Content-Type', `text/csv; charset=${encoding}`);
}

export interface CsvDownload<T> {
  /** The header line, CRLF included; written also when there are no rows. */
  header: string;
  /** One row's lines, CRLF included. */
  toLines: (row: T) => string;
  /** Any encoding iconv-lite knows. */
  encoding: string;
  fileName: string;
}

/** Streams cursor rows as a CSV download in its encoding, the header line first. */
export async function streamCsv<T>(
  res: Response,
  logger: StreamLogger,
  cursor: Readable,
  stallTimeoutMs: number | undefined,
  csv: CsvDownload<T>,
): Promise<undefined> {
  const { encoding } = csv;
  setCsvHeaders(res, encoding, csv.fileName);
  const text = rowsToText<T>(cursor, { head: csv.header, format: csv.toLines, utf8: isUtf8(encoding) });
  await streamToResponse(res, text, isUtf8(encoding) ? [] : [encoderStream(encoding)], logger, stallTimeoutMs);
  return undefined;
}

