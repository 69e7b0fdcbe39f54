import { CsvRowParser } from '../../src/streams/csvRows';
import { requestLogCsvHeader, requestLogCsvLine, RequestLogRow } from '../../src/domain/requestLog';

/** The cells of CSV `text` as a reader splitting on `separator` sees them. */
function cells(text: string, separator: string): string[][] {
  const parser = new CsvRowParser(separator, 1024 * 1024);
  return [...parser.write(text), ...parser.end()].map((r) => ('values' in r ? r.values : []));
}

const row: RequestLogRow = {
  time: Date.UTC(2026, 10, 16, 7, 14, 5),
  requestId: 'a4b1c2d3-0000-4000-8000-000000000001',
  method: 'GET',
  path: '/api/calls?OrgCode=Salg%20%C3%98st&StartTime=2026-11-16&TimeSpan=P1D',
  service: 'calls',
  status: 200,
  weight: 8,
  durationMs: 12.3,
  bytesSent: 4096,
  clientAddress: '127.0.0.1',
};

const COLUMNS = ['time', 'requestId', 'method', 'path', 'service', 'status', 'weight', 'durationMs', 'bytesSent', 'clientAddress'];

describe('request log CSV', () => {
  // Letters are allowed separators; the column names hold `e`, `a`, `t`, ... and must be quoted
  // like any other cell, or the header splits into more columns than the rows have.
  it.each([';', ',', 'e', 'a', 't', 'd', '\t'])('reads back the header and a row with the separator %j', (separator) => {
    const text = requestLogCsvHeader(separator) + requestLogCsvLine(separator, 'Europe/Copenhagen', 'Offset')(row);
    const [header, line] = cells(text, separator);
    expect(header).toEqual(COLUMNS);
    expect(line).toHaveLength(COLUMNS.length);
    expect(line![COLUMNS.indexOf('path')]).toBe(row.path);
    expect(line![COLUMNS.indexOf('service')]).toBe('calls');
  });
});
