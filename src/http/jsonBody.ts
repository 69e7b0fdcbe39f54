import { isUtf8 } from 'node:buffer';
import bytes from 'bytes';
import express, { Request, Response } from 'express';
import { parse as parseContentType } from 'content-type';
import iconv from 'iconv-lite';
import { HttpProblem } from './problem';
import { continueBody } from './expectContinue';
import { runMiddleware } from './runMiddleware';
import { windows1252 } from './queryString';

/**
 * The JSON body of a request, read whatever its Content-Type says (docs/decisions.md, Wire): a
 * client that forgets the header gets the answer one that sends it gets. A body that is not JSON
 * is a 400, unless the request said it is something else (`curl -d` sends
 * application/x-www-form-urlencoded): then it is a 415 naming the type it was sent as and the
 * type the endpoint reads.
 *
 * A body is UTF-8 unless its `charset` names another encoding: UTF-16 and UTF-32 as body-parser
 * reads them, any other iconv-lite knows (windows-1252, latin1, `UTF8` without its hyphen) decoded
 * to text first; an unknown one is a 415. Bytes that are not valid UTF-8 in a body said to be
 * UTF-8 are a 400, as in a bulk body: decoded, they would be stored as U+FFFD, not what the
 * client sent. A body that names no charset is read by its bytes: UTF-16 after a UTF-16 byte
 * order mark (Windows PowerShell writes files so), else UTF-8 when it is valid UTF-8, else
 * windows-1252, as Basic credentials and query strings are (Windows PowerShell 5.1 sends a string
 * body as ISO-8859-1 unless the Content-Type names a charset).
 * A client waiting with `Expect: 100-continue` is told to send the body here, just before it is
 * read (src/http/expectContinue.ts).
 */
export type JsonBodyReader = (req: Request, res: Response, reads: readonly string[]) => Promise<void>;

export function jsonBodyReader(limit: string): JsonBodyReader {
  const maxBytes = bytes.parse(limit) ?? Infinity;
  const verify = (_req: unknown, _res: unknown, bytes: Buffer, charset: string): void => {
    if (/^utf-?8$/i.test(charset) && !isUtf8(bytes)) {
      throw new HttpProblem('invalid_body', 'the request body holds bytes that are not valid UTF-8 (or name its charset in Content-Type)');
    }
  };
  const asJson = express.json({ limit, type: () => true, strict: false, verify });
  const asText = express.text({ limit, type: () => true, verify });
  const asBytes = express.raw({ limit, type: () => true });

  return async (req, res, reads) => {
    continueBody(req, res, maxBytes);
    try {
      const charset = declaredCharset(req);
      if (charset === undefined) {
        await runMiddleware(asBytes, req, res);
        // No body at all leaves req.body unset, as the JSON reader does; an empty one is {}, as there.
        if (Buffer.isBuffer(req.body)) req.body = req.body.length === 0 ? {} : parseJsonText(undeclaredText(req.body));
      } else if (charset !== null && !charset.toLowerCase().startsWith('utf-')) {
        // A charset body-parser's JSON reader refuses (it takes only `utf-` ones) but iconv-lite may know.
        await runMiddleware(asText, req, res);
        req.body = parseJsonText(req.body as string);
      } else {
        await runMiddleware(asJson, req, res);
      }
    } catch (err) {
      const sentAs = req.get('Content-Type')?.split(';')[0]?.trim().toLowerCase();
      if ((err as { type?: string }).type !== 'entity.parse.failed' || !sentAs || req.is(['json', '+json'])) throw err;
      throw new HttpProblem(
        'unsupported_media_type',
        `the request body is sent as ${sentAs} and is not JSON; this endpoint reads ${reads.join(' or ')}`,
      );
    }
  };
}

/**
 * The charset the request's Content-Type names; undefined when it names none (or there is no
 * Content-Type), null when the header cannot be parsed (left to body-parser's JSON reader, as before).
 */
function declaredCharset(req: Request): string | undefined | null {
  const header = req.headers['content-type'];
  if (header === undefined) return undefined;
  try {
    return parseContentType(header).parameters.charset;
  } catch {
    return null;
  }
}

/** The text of a body that names no charset: UTF-16 after its byte order mark, UTF-8 when valid, else windows-1252. */
function undeclaredText(bytes: Buffer): string {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) return iconv.decode(bytes, 'utf-16');
  // iconv-lite drops a UTF-8 byte order mark, as body-parser's reader does.
  return isUtf8(bytes) ? iconv.decode(bytes, 'utf-8') : windows1252(bytes);
}

/** JSON.parse failing as body-parser's reader fails, so both end in the same answers. */
function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw Object.assign(new Error((err as Error).message), { type: 'entity.parse.failed', status: 400 });
  }
}
