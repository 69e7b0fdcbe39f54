/** Text as CSV fields, shared by every serializer. */

/**
 * RFC 4180 quoting for one separator: a value holding the separator, a quote, CR or LF is
 * quoted with inner quotes doubled. Values whose alphabet cannot hold the separator (times,
 * durations, enum names, booleans) skip the check when the separator is not in it.
 */
export function csvQuoter(separator: string): (value: string) => string {
  const needsQuotes = new RegExp(`[${separator.replace(/[\\\]^-]/g, '\\$&')}"\\r\\n]`);
  return (value) => (needsQuotes.test(value) ? '"' + value.replace(/"/g, '""') + '"' : value);
}
