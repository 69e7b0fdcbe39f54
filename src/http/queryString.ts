import { isUtf8 } from 'node:buffer';
import querystring, { type ParsedUrlQuery } from 'node:querystring';
import iconv from 'iconv-lite';

/**
 * The query string as Express's `simple` parser reads it (node:querystring: `&` and `=`, `+`
 * for a space, repeated names as arrays, at most 1000 pairs), with one difference in decoding:
 * a name or value whose percent-escapes are not UTF-8 is read as windows-1252
 * (docs/decisions.md, Wire). Classic ASP, VB6 and PHP without UTF-8 escape `æøå` as
 * `%E6%F8%E5`, which node:querystring would decode as three U+FFFD.
 */
export function parseQueryString(text: string): ParsedUrlQuery {
  return querystring.parse(text, undefined, undefined, { decodeURIComponent: decodeQueryComponent });
}

const ESCAPE = /%([0-9A-Fa-f]{2})/g;
const ESCAPES = /(?:%[0-9A-Fa-f]{2})+/g;

/**
 * One name or value of a query string (its `+` already a space): UTF-8 escapes decoded as
 * node:querystring decodes them, a `%` that starts no escape kept as it is; when the escapes
 * with the text between them are not UTF-8, every escape is one windows-1252 byte instead.
 */
export function decodeQueryComponent(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    // A `%` that starts no escape (`%zz`), or escapes that are not UTF-8.
  }
  if (isUtf8(bytesOf(text))) return querystring.unescape(text);
  return text.replace(ESCAPES, (run) => windows1252(bytesOf(run)));
}

/** The bytes a component stands for: each escape one byte, any other character its UTF-8. */
function bytesOf(text: string): Buffer {
  const pieces: Buffer[] = [];
  let last = 0;
  for (const match of text.matchAll(ESCAPE)) {
    if (match.index > last) pieces.push(Buffer.from(text.slice(last, match.index), 'utf8'));
    pieces.push(Buffer.of(parseInt(match[1]!, 16)));
    last = match.index + match[0].length;
  }
  if (last < text.length) pieces.push(Buffer.from(text.slice(last), 'utf8'));
  return Buffer.concat(pieces);
}

/**
 * Bytes as windows-1252 text. The five bytes that charset leaves undefined (0x81, 0x8D, 0x8F,
 * 0x90, 0x9D) are the C1 controls of the same number, as the WHATWG Encoding Standard reads
 * them, not U+FFFD.
 */
export function windows1252(bytes: Buffer): string {
  const text = iconv.decode(bytes, 'windows-1252');
  if (!text.includes('\uFFFD')) return text;
  return Array.from(text, (ch, i) => (ch === '\uFFFD' ? String.fromCharCode(bytes[i]!) : ch)).join('');
}
