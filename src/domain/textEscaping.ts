/** Text as JSON string literals and CSV fields, shared by every serializer. */

// Strings JSON can carry between quotes as they are: no quote, backslash, control character or
// surrogate (JSON.stringify escapes lone surrogates; paired ones are rare enough to take it too).
// The class lists the characters allowed: from space up, without `"` (22), `\` (5C) and D800–DFFF.
const JSON_PLAIN = /^[\u0020\u0021\u0023-\u005b\u005d-\ud7ff\ue000-\uffff]*$/;

/** A JSON string literal; the common plain case without JSON.stringify. */
export function jsonString(value: string): string {
  return JSON_PLAIN.test(value) ? '"' + value + '"' : JSON.stringify(value);
}

/**
 * RFC 4180 quoting for one separator: a value holding the separator, a quote, CR or LF is
 * quoted with inner quotes doubled. Values whose alphabet cannot hold the separator (times,
 * durations, enum names, booleans) skip the check when the separator is not in it.
 */
export function csvQuoter(separator: string): (value: string) => string {
  const needsQuotes = new RegExp(`[${separator.replace(/[\\\]^-]/g, '\\$&')}"\\r\\n]`);
  return (value) => (needsQuotes.test(value) ? '"' + value.replace(/"/g, '""') + '"' : value);
}
