import type { DateTimeFormatName } from './enums';
import { formatDateTime } from './datetime';
import { csvQuoter } from './textEscaping';

/**
 * An entry of an account's request log as it is read back (time in ms since the epoch), and
 * its JSON and CSV forms: GET /myaccount/requests and `lcm requests` render it the same way.
 */
export interface RequestLogRow {
  time: number;
  requestId: string;
  method: string;
  /** Path and query as the client sent them. */
  path: string;
  service: string;
  status: number;
  /** Counter units the request spent. */
  weight: number;
  durationMs: number;
  bytesSent: number;
  clientAddress: string | null;
}

/** The entry as the API writes it: the time in the answer's DateTime format, the duration to 0.1 ms. */
export function renderRequestLogRow(row: RequestLogRow, zone: string, format: DateTimeFormatName) {
  return {
    time: formatDateTime(row.time, zone, format),
    requestId: row.requestId,
    method: row.method,
    path: row.path,
    service: row.service,
    status: row.status,
    weight: row.weight,
    durationMs: Math.round(row.durationMs * 10) / 10,
    bytesSent: row.bytesSent,
    clientAddress: row.clientAddress,
  };
}

const CSV_COLUMNS = [
  'time',
  'requestId',
  'method',
  'path',
  'service',
  'status',
  'weight',
  'durationMs',
  'bytesSent',
  'clientAddress',
] as const;

/** The CSV header row (CRLF-terminated), quoted like the rows: a letter separator (`e`) occurs in the names. */
export function requestLogCsvHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return CSV_COLUMNS.map((c) => quote(c)).join(separator) + '\r\n';
}

/** One CSV row per entry: RFC 4180 quoting with `separator`, CRLF, an absent address empty. */
export function requestLogCsvLine(separator: string, zone: string, format: DateTimeFormatName): (row: RequestLogRow) => string {
  const quote = csvQuoter(separator);
  return (row) => {
    const r = renderRequestLogRow(row, zone, format);
    return CSV_COLUMNS.map((c) => quote(r[c] === null ? '' : String(r[c]))).join(separator) + '\r\n';
  };
}

/**
 * Why a `Service` filter of the request log names no service, or undefined when every name is
 * one (case-insensitive). A name that matches nothing would answer an empty log, which reads as
 * "no such requests"; the message offers the services the name starts or is part of, and ends
 * with `where` (where every service is listed, or the list itself).
 */
export function unknownServiceName(names: readonly string[], services: readonly string[], where: string): string | undefined {
  const known = new Set(services.map((s) => s.toLowerCase()));
  const unknown = names.find((n) => !known.has(n.toLowerCase()));
  if (unknown === undefined) return undefined;
  const wanted = unknown.toLowerCase();
  const near = services.filter((s) => s.toLowerCase().includes(wanted)).slice(0, 8);
  return `no service is called "${unknown}"` + (near.length > 0 ? ` (did you mean ${near.join(', ')}?)` : '') + `; ${where}`;
}
