import { textProblem as storableTextProblem } from './textSafety';
import { isLargerThan, LeadDataError, valueTooLargeMessage } from './leadData';

/**
 * One row of a bulk import as the client sent it (docs/decisions.md, Bulk import): a data
 * object (`{ "Name": "…", "Telefon": "…" }`, a CSV row), or an import body as POST /leads takes
 * it (`{ CampaignCode?, Data, LeadPool? }`, names case-insensitive, `Pool` for `LeadPool`). An
 * element is an import body when it has a `Data` property holding an object.
 */
interface BulkRowInput {
  data: Record<string, string>;
  /** The row's own pool name; else the request's. */
  pool?: string;
  /** The row's own campaign code (must be the request's). */
  campaignCode?: string;
}

export type BulkRowParse = { ok: true; input: BulkRowInput } | { ok: false; errors: LeadDataError[] };

const ROW = '(row)';
const MAX_POOL_NAME = 200;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A string Postgres and the lead data can hold: no NUL, no character the decoder could not read. */
function textProblem(value: string): string | undefined {
  const unstorable = storableTextProblem(value);
  if (unstorable) return unstorable;
  // U+FFFD is what the decoder writes for bytes that are not valid in the body's encoding.
  if (value.includes('\uFFFD')) return "holds bytes that are not valid in the body's encoding (see the Encoding parameter)";
  return undefined;
}

function dataObject(value: Record<string, unknown>, prefix: string, maxValueBytes: number): BulkRowParse {
  const data: Record<string, string> = {};
  const errors: LeadDataError[] = [];
  for (const [key, v] of Object.entries(value)) {
    const field = prefix + key;
    // null is an empty value (.NET writes an unset string as null), which counts as absent.
    if (v === null) continue;
    if (typeof v !== 'string') {
      errors.push({ field, message: 'must be a string or null' });
      continue;
    }
    const problem = textProblem(key) ?? (isLargerThan(v, maxValueBytes) ? valueTooLargeMessage(maxValueBytes) : textProblem(v));
    if (problem) errors.push({ field, message: problem });
    else data[key] = v;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, input: { data } };
}

/** Reads one row: a data object or an import body; a value over `maxValueBytes` (UTF-8) fails it. */
export function parseBulkRow(value: unknown, maxValueBytes: number): BulkRowParse {
  if (!isObject(value)) return { ok: false, errors: [{ field: ROW, message: 'must be a JSON object' }] };
  const keys = new Map(Object.keys(value).map((k) => [k.toLowerCase(), k]));
  const dataKey = keys.get('data');
  if (dataKey === undefined || !isObject(value[dataKey])) return dataObject(value, '', maxValueBytes);

  const errors: LeadDataError[] = [];
  const input: BulkRowInput = { data: {} };
  for (const [key, v] of Object.entries(value)) {
    switch (key.toLowerCase()) {
      case 'data': {
        const parsed = dataObject(v as Record<string, unknown>, 'Data.', maxValueBytes);
        if (parsed.ok) input.data = parsed.input.data;
        else errors.push(...parsed.errors);
        break;
      }
      case 'campaigncode':
        if (typeof v !== 'string' || v.trim() === '') errors.push({ field: key, message: 'must be a non-empty string' });
        else input.campaignCode = v.trim();
        break;
      case 'leadpool':
      case 'pool':
        if (v === null || v === undefined) break;
        if (typeof v !== 'string') errors.push({ field: key, message: 'must be a string' });
        else if (v.trim().length > MAX_POOL_NAME) errors.push({ field: key, message: `must be at most ${MAX_POOL_NAME} characters` });
        else if (textProblem(v)) errors.push({ field: key, message: textProblem(v)! });
        else if (v.trim() !== '') input.pool = v.trim();
        break;
      default:
        errors.push({ field: key, message: 'is not a property of an import body (CampaignCode, Data, LeadPool)' });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, input };
}

/** A row the body itself could not deliver (invalid record, broken body). */
export function unreadableRow(message: string): LeadDataError[] {
  return [{ field: ROW, message }];
}
