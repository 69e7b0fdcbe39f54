import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { MalformedBodyError } from './bodyRecords';

/**
 * Request bodies sent with a Content-Encoding (RFC 9110): the codings every JSON body of the API
 * is read in (body-parser inflates gzip, deflate and br), decoded with Node's zlib.
 */
const DECODERS: Readonly<Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** The coding a Content-Encoding header names, in lower case; undefined for none or `identity`. */
export function contentCoding(header: string | undefined): string | undefined {
  const coding = header?.trim().toLowerCase();
  return coding === undefined || coding === '' || coding === 'identity' ? undefined : coding;
}

export function isDecodableCoding(coding: string): boolean {
  return Object.hasOwn(DECODERS, coding);
}

/**
 * The body as it was before `coding` was applied, read as it arrives. Bytes that are not valid in
 * the coding end it with MalformedBodyError (a 400, or the import's last element). The request
 * itself is not destroyed, so the answer can still be sent on its connection.
 */
export function decodedBody(request: Readable, coding: string): Readable {
  const decoder = DECODERS[coding]!();
  request.once('error', (err) => decoder.destroy(err));
  request.pipe(decoder);
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of decoder) yield chunk as Buffer;
    } catch (err) {
      request.unpipe(decoder);
      request.resume();
      throw new MalformedBodyError(`the body is not valid ${coding}: ${(err as Error).message}`);
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
