import { isUtf8 } from 'node:buffer';
import bytes from 'bytes';
import express, { Request, Response } from 'express';
import { parse as parseContentType } from 'content-type';
import { HttpProblem } from './problem';
import { continueBody } from './expectContinue';
import { runMiddleware } from './runMiddleware';

/**
 * The JSON body of a request, read whatever its Content-Type says (docs/decisions.md, Wire): a
 * client that forgets the header gets the answer one that sends it gets. A body that is not JSON
 * is a 400, unless the request said it is something else (`curl -d` sends
 * application/x-www-form-urlencoded): then it is a 415 naming the type it was sent as and the
 * type the endpoint reads.
 *
 * A body is UTF-8 unless its `charset` names another encoding: UTF-16 and UTF-32 as body-parser
 * reads them, any other iconv-lite knows (windows-1252, latin1, `UTF8` without its hyphen) decoded
 * to text first; an unknown one is a 415. Bytes that are not valid UTF-8 in a UTF-8 body are a
 * 400, as in a bulk body: decoded, they would be stored as U+FFFD, not what the client sent.
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

  return async (req, res, reads) => {
    continueBody(req, res, maxBytes);
    try {
      if (readsAsText(req)) {
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

/** A charset body-parser's JSON reader refuses (it takes only `utf-` ones) but iconv-lite may know. */
function readsAsText(req: Request): boolean {
  const header = req.headers['content-type'];
  if (header === undefined) return false;
  let charset: string | undefined;
  try {
    charset = parseContentType(header).parameters.charset;
  } catch {
    return false;
  }
  return charset !== undefined && !charset.toLowerCase().startsWith('utf-');
}

/** JSON.parse failing as body-parser's reader fails, so both end in the same answers. */
function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw Object.assign(new Error((err as Error).message), { type: 'entity.parse.failed', status: 400 });
  }
}
