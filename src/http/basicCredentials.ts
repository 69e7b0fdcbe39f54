import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';

/** The credentials of a Basic Authorization header, as its token carries them. */
export interface BasicCredentials {
  /** The base64 token after `Basic`. */
  token: string;
  username: string;
  password: string;
}

const BASIC = /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i;

/**
 * The credentials of a Basic Authorization header; undefined for another scheme, a token that
 * is not base64, or one without a user-id. The user-id ends at the first colon: the password
 * may hold colons (RFC 7617). The bytes are UTF-8 (RFC 7617, and the charset the challenge
 * names), or windows-1252 when they are not UTF-8, as Java's and OkHttp's Basic encoders
 * (ISO-8859-1) and hand-made PowerShell headers send `æøå`.
 */
export function basicCredentials(header: string | undefined): BasicCredentials | undefined {
  const match = header === undefined ? null : BASIC.exec(header);
  if (!match) return undefined;
  const token = match[1]!;
  const bytes = Buffer.from(token, 'base64');
  const decoded = isUtf8(bytes) ? bytes.toString('utf8') : iconv.decode(bytes, 'windows-1252');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  return { token, username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
