import type { Readable, Transform } from 'node:stream';
import type { Response } from 'express';
import { create as contentDisposition } from 'content-disposition';
import { charsetName, encoderStream, isUtf8 } from '../streams/encoding';
import { rowsToText } from '../streams/rowsToText';

/**
 * Characters a file name cannot hold on common systems become `_`: a `/` in a saved search's
 * name or an org code (`TRYG Forsikring A/S`) would otherwise leave only what follows it, as
 * a download keeps only the last path segment. Control characters are the ones outside 20–7E and 80–FFFF.
 */
function fileNameOf(name: string): string {
  return name.replace(/[\\/:*?"<>|]|[^\u0020-\u007e\u0080-\uffff]/g, '_');
}

/** Letters whose ASCII form is not their base letter with its marks taken off. */
const ASCII_LETTERS: Record<string, string> = {
  Ø: 'O',
  ø: 'o',
  Æ: 'AE',
  æ: 'ae',
  Œ: 'OE',
  œ: 'oe',
  ß: 'ss',
  Đ: 'D',
  đ: 'd',
  Ł: 'L',
  ł: 'l',
  Þ: 'Th',
  þ: 'th',
};

/**
 * The name in ASCII for clients that do not read `filename*`: letters without their marks
 * (`Å` → `A`, `Ø` → `O`), any other character outside ASCII one `_`, counted by code point (the
 * `u` flag: an emoji, two UTF-16 units, is one `_`). Not `?`, which the library would put there
 * and Windows does not allow in a file name.
 */
function asciiFileNameOf(name: string): string {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\u0020-\u007e]/gu, (c) => ASCII_LETTERS[c] ?? '_');
}

/** The Content-Disposition of a download named `fileName`: an attachment, with the ASCII fallback and `filename*`. */
export function attachmentDisposition(fileName: string): string {
  const name = fileNameOf(fileName);
  return contentDisposition(name, { fallback: asciiFileNameOf(name) });
}

/** Sets the headers of a CSV download: `text/csv; charset={encoding}` and an attachment name. */
export function setCsvHeaders(res: Response, encoding: string, fileName: string): void {
  res.status(200);
  res.setHeader('Content-Disposition', attachmentDisposition(fileName));
  res.setHeader('Content-Type', `text/csv; charset=${charsetName(encoding)}`);
}

/** Cursor rows as CSV text, the header line first (UTF-8 bytes; the encoder of csvEncoding makes other charsets). */
export function csvText<T>(cursor: Readable, header: string, toLines: (row: T) => string): Readable {
  return rowsToText<T>(cursor, { head: header, format: toLines, utf8: true });
}

/** The stages that turn a CSV body's UTF-8 into `encoding`: none for UTF-8. */
export function csvEncoding(encoding: string): Transform[] {
  return isUtf8(encoding) ? [] : [encoderStream(encoding)];
}
