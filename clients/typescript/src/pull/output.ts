import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Transform, type Writable } from 'node:stream';
import { format as csvFormat, writeToString } from '@fast-csv/format';

export type OutputFormat = 'ndjson' | 'csv';

/** One exported record as the API sends it. */
export type Row = Record<string, unknown>;

const CSV_OPTIONS = { rowDelimiter: '\r\n', includeEndRowDelimiter: true } as const;

/** A CSV cell: scalars as they are, absent values empty, objects and arrays as JSON text. */
function cell(value: unknown): string | number | boolean {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return value as string | number | boolean;
}

/**
 * How rows become text. NDJSON: one JSON object a line, as the API sent it. CSV: a header
 * line of the schema's properties in document order (`columns`), then one line a row.
 */
export interface RowFormat {
  /** Text the file starts with (the CSV header line). */
  head(): Promise<string>;
  /** A stage turning rows into text. */
  stage(): Transform;
}

export function rowFormat(format: OutputFormat, columns: readonly string[]): RowFormat {
  if (format === 'ndjson') {
    return {
      head: async () => '',
      stage: () =>
        new Transform({
          writableObjectMode: true,
          transform(row: Row, _enc, done) {
            done(null, JSON.stringify(row) + '\n');
          },
        }),
    };
  }
  return {
    head: () => writeToString([], { headers: [...columns], alwaysWriteHeaders: true, ...CSV_OPTIONS }),
    stage: () =>
      csvFormat<Row, Row>({
        headers: [...columns],
        writeHeaders: false,
        ...CSV_OPTIONS,
        transform: (row: Row) => Object.fromEntries(columns.map((c) => [c, cell(row[c])])),
      }),
  };
}

/**
 * The output file under construction (`FILE.part`) and its log of written uniqueIds
 * (`FILE.part.ids`, one JSON string a line): the ids let a rerun know what is already in the
 * file without parsing it, whatever the format.
 */
export class PartialOutput {
  readonly seen = new Set<string>();

  constructor(
    readonly path: string,
    readonly idsPath: string,
  ) {}

  /** Starts both files empty, the output with `head`. */
  async create(head: string): Promise<void> {
    await fs.writeFile(this.path, head);
    await fs.writeFile(this.idsPath, '');
    this.seen.clear();
  }

  /**
   * Cuts both files back to a checkpoint (dropping whatever a crashed or failed window wrote
   * after it) and reloads the uniqueIds written before it.
   */
  async rollBack(outputBytes: number, idsBytes: number): Promise<void> {
    await fs.truncate(this.path, outputBytes);
    await fs.truncate(this.idsPath, idsBytes);
    this.seen.clear();
    const lines = createInterface({ input: createReadStream(this.idsPath, 'utf8'), crlfDelay: Infinity });
    for await (const line of lines) if (line) this.seen.add(JSON.parse(line) as string);
  }

  async sizes(): Promise<{ outputBytes: number; idsBytes: number }> {
    const [o, i] = await Promise.all([fs.stat(this.path), fs.stat(this.idsPath)]);
    return { outputBytes: o.size, idsBytes: i.size };
  }

  /** A stream appending to the output file. */
  appendStream(): Writable {
    return createWriteStream(this.path, { flags: 'a' });
  }

  /** Opens the id log for appending; close it with the returned function once the window is written. */
  idLog(): { add(id: string): void; close(): Promise<void> } {
    const stream = createWriteStream(this.idsPath, { flags: 'a' });
    return {
      add: (id) => {
        stream.write(JSON.stringify(id) + '\n');
      },
      close: async () => {
        stream.end();
        await once(stream, 'close');
      },
    };
  }

  /** Flushes both files to disk, so a checkpoint never points past what a power cut keeps. */
  async sync(): Promise<void> {
    for (const file of [this.path, this.idsPath]) {
      const handle = await fs.open(file, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  }

  /** The finished file takes the place of `out`; the id log goes. */
  async finish(out: string): Promise<void> {
    await this.sync();
    await fs.rename(this.path, out);
    await fs.rm(this.idsPath, { force: true });
  }
}
