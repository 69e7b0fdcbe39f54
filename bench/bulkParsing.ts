import { Readable } from 'node:stream';
import { BodyRecord, csvRecords, decodeText, jsonArrayRecords, ndjsonRecords } from '../src/streams/bodyRecords';
import type { BulkFormat } from './bulkRequests';
import { fmt, log, median } from './support';

/**
 * What reading a bulk body costs per byte (the first part of npm run bench:bulk): the body
 * readers of POST /leads/bulk (src/streams/bodyRecords.ts, as src/ingest/bulkImport.ts wires
 * them: bytes, decoded where the format is read as text, then split into records), in this
 * process, over bodies cut into 64 KiB chunks as a socket delivers them. Three bodies of about
 * the same size per format: ordinary rows, one row of that size read whole (a row limit above
 * it), and the same row over the default row limit (1 MiB), which is dropped as it arrives.
 * Reading is linear when the three cost about the same per byte.
 */

const CHUNK = 64 * 1024;
const ROW_LIMIT = 1024 * 1024;

/** A lead's data as the bench's requests send it; `big` makes its Email `bytes` long. */
function lead(n: number, big = 0): Record<string, string> {
  return {
    Name: `Lead ${n} Åse Ærø`,
    Telefon: `+45 ${String(10_000_000 + n)}`,
    Email: big > 0 ? 'Åse Ærø "quoted"; x\r\n'.repeat(Math.ceil(big / 24)) : `lead${n}@example.com`,
    Customer: `bench-${n}`,
  };
}

function body(format: BulkFormat, leads: Record<string, string>[]): Buffer {
  if (format === 'json') return Buffer.from(JSON.stringify(leads), 'utf8');
  if (format === 'ndjson') return Buffer.from(leads.map((l) => JSON.stringify(l)).join('\n') + '\n', 'utf8');
  const cell = (v: string) => (/[";\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const header = 'Name;Telefon;Email;Customer\r\n';
  return Buffer.from(header + leads.map((l) => Object.values(l).map(cell).join(';')).join('\r\n') + '\r\n', 'utf8');
}

function records(format: BulkFormat, bytes: Buffer, maxRowBytes: number): AsyncIterable<BodyRecord> {
  const chunks = Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += CHUNK) yield bytes.subarray(i, i + CHUNK);
    })(),
  ) as AsyncIterable<Buffer>;
  if (format === 'json') return jsonArrayRecords(chunks, maxRowBytes);
  if (format === 'ndjson') return ndjsonRecords(decodeText(chunks, 'utf-8'), maxRowBytes);
  return csvRecords(decodeText(chunks, 'utf-8'), { separator: ';', maxRowBytes });
}

/** Milliseconds to read the whole body (median of `rounds`), and the records and invalid ones read. */
async function timeReading(format: BulkFormat, bytes: Buffer, maxRowBytes: number, rounds: number) {
  const times: number[] = [];
  let rows = 0;
  let invalid = 0;
  for (let r = 0; r < rounds; r++) {
    rows = 0;
    invalid = 0;
    const started = process.hrtime.bigint();
    for await (const record of records(format, bytes, maxRowBytes)) {
      rows++;
      if ('invalid' in record) invalid++;
    }
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return { ms: median(times), rows, invalid };
}

/** Prints one table row per format and body: size, rows, median time, ns per byte. */
export async function bulkParsingTable(formats: readonly BulkFormat[], sizeMb: number, rounds: number): Promise<void> {
  const size = sizeMb * 1024 * 1024;
  log(`\n### Reading bodies of ${sizeMb} MB (median of ${rounds}, 64 KiB chunks)\n`);
  log('| format | body | bytes | rows (failed) | ms | ns/byte | against ordinary rows |');
  log('|---|---|---:|---:|---:|---:|---:|');
  for (const format of formats) {
    const ordinary: Record<string, string>[] = [];
    for (let n = 1, bytes = 0; bytes < size; n++) {
      ordinary.push(lead(n));
      bytes += 80;
    }
    const oneRow = [lead(1), lead(2, size), lead(3)];
    const cases = [
      { name: 'ordinary rows', bytes: body(format, ordinary), limit: ROW_LIMIT },
      { name: `one ${sizeMb} MB row, read whole`, bytes: body(format, oneRow), limit: 2 * size },
      { name: `one ${sizeMb} MB row, over the 1 MiB limit`, bytes: body(format, oneRow), limit: ROW_LIMIT },
    ];
    // Warm the code paths so the first case is not the one that pays for compiling them.
    for (const c of cases) await timeReading(format, c.bytes, c.limit, 1);
    let base = 0;
    for (const c of cases) {
      const run = await timeReading(format, c.bytes, c.limit, rounds);
      const perByte = (run.ms * 1e6) / c.bytes.length;
      if (base === 0) base = perByte;
      log(
        `| ${format} | ${c.name} | ${fmt(c.bytes.length)} | ${fmt(run.rows)} (${fmt(run.invalid)}) | ${fmt(run.ms, 1)} | ${fmt(perByte, 2)} | ${fmt(perByte / base, 2)}× |`,
      );
    }
  }
}
