import type { Readable, Transform } from 'node:stream';
import type { Response } from 'express';
import { encoderStream, isUtf8 } from '../streams/encoding';
import { rowsToText } from '../streams/rowsToText';

/**
 * Characters a file name cannot hold on common systems become `_`: a `/` in a saved search's
 * name or an org code (`TRYG Forsikring A/S`) would otherwise leave only what follows it, as
 * attachment() keeps the last path segment. Control characters are the ones outside 20–7E and 80–FFFF.
 */
function fileNameOf(name: string): string {
  return name.replace(/[\\/:*?"<>|]|[^\u0020-\u007e\u0080-\uffff]/g, '_');
}

/** Sets the headers of a CSV download: `text/csv; charset={encoding}` and an attachment name. */
export function setCsvHeaders(res: Response, encoding: string, fileName: string): void {
  res.status(200);
  // attachment() also sets a Content-Type from the extension: the charset goes on after it.
  res.attachment(fileNameOf(fileName));
  res.setHeader('Content-Type', `text/csv; charset=${encoding}`);
}

/** Cursor rows as CSV text, the header line first (UTF-8 bytes; the encoder of csvEncoding makes other charsets). */
export function csvText<T>(cursor: Readable, header: string, toLines: (row: T) => string): Readable {
  return rowsToText<T>(cursor, { head: header, format: toLines, utf8: true });
}

/** The stages that turn a CSV body's UTF-8 into `encoding`: none for UTF-8. */
export function csvEncoding(encoding: string): Transform[] {
  return isUtf8(encoding) ? [] : [encoderStream(encoding)];
}
