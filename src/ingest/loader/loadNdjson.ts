import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { recordSchemas, RECORD_TYPES, RecordType } from './recordSchemas';
import { RecordApplier } from './applyRecord';
import { RecordError } from './recordError';
import { describeIssues, issueSentence } from './issueText';
import { byteLines } from '../../streams/byteLines';

export class LoadError extends Error {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super(`line ${line}: ${reason}`);
  }
}

export interface LoadOptions {
  zone: string;
  onProgress?: (lines: number) => void;
  now?: () => Date;
}

export interface LoadSummary {
  lines: number;
  counts: Partial<Record<RecordType, number>>;
}

/** Database errors become line reasons without SQL noise. */
function describeDbError(err: unknown): string {
  const e = err as { code?: string; detail?: string; message?: string };
  if (e.code === '23505') return `duplicate value${e.detail ? ` (${e.detail})` : ''}: ${e.message?.split(' - ').pop()}`;
  return (e.message ?? String(err)).split(' - ').pop()!;
}

const NOT_UTF8 =
  'not valid UTF-8; lcm load reads UTF-8 only (convert the file first, e.g. iconv -f windows-1252 -t utf-8 FILE > FILE.utf8)';

/**
 * Loads NDJSON platform data (docs/decisions.md, Loader) in ONE transaction: the first bad line stops the
 * load with its number and reason, and nothing of the file is kept. Blank lines are skipped. The
 * input is UTF-8 (a byte order mark at the start is skipped); a line that is not is a bad line.
 */
export async function loadNdjson(db: Knex, input: Readable, options: LoadOptions): Promise<LoadSummary> {
  const schemas = recordSchemas(options.zone);
  const counts: LoadSummary['counts'] = {};
  let lineNo = 0;
  await db.transaction(async (trx) => {
    const applier = new RecordApplier(trx, options.zone, options.now);
    for await (const bytes of byteLines(input)) {
      lineNo += 1;
      // Checked before decoding: a Latin-1 `K\xf8ge` would otherwise load as `K\uFFFDge`.
      if (!isUtf8(bytes)) throw new LoadError(lineNo, NOT_UTF8);
      const read = bytes.toString('utf8');
      // Windows tools start UTF-8 files with a byte order mark; it is not part of the data.
      const line = lineNo === 1 && read.charCodeAt(0) === 0xfeff ? read.slice(1) : read;
      if (line.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch (err) {
        throw new LoadError(lineNo, `not valid JSON (${(err as Error).message})`);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new LoadError(lineNo, 'a record must be a JSON object');
      }
      const type = (parsed as { type?: unknown }).type;
      if (type === undefined || type === null) {
        throw new LoadError(lineNo, `"type" is required: one of ${RECORD_TYPES.join(', ')}`);
      }
      if (typeof type !== 'string' || !RECORD_TYPES.includes(type as RecordType)) {
        throw new LoadError(lineNo, `unknown record type ${JSON.stringify(type)}; expected one of ${RECORD_TYPES.join(', ')}`);
      }
      const result = schemas[type as RecordType].safeParse(parsed, { error: issueSentence });
      if (!result.success) throw new LoadError(lineNo, `${type}: ${describeIssues(result.error.issues)}`);
      try {
        await applier.apply(result.data);
      } catch (err) {
        if (err instanceof RecordError) throw new LoadError(lineNo, `${type}: ${err.message}`);
        throw new LoadError(lineNo, `${type}: ${describeDbError(err)}`);
      }
      counts[type as RecordType] = (counts[type as RecordType] ?? 0) + 1;
      if (options.onProgress && lineNo % 500 === 0) options.onProgress(lineNo);
    }
  });
  options.onProgress?.(lineNo);
  return { lines: lineNo, counts };
}
