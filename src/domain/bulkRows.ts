import { keyProblem as storableKeyProblem, textProblem as storableTextProblem } from './textSafety';
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

/** How a row is read: its values' byte limit, and what the body's decoder wrote for bytes it could not read. */
export interface BulkRowRules {
  maxValueBytes: number;
  /** Not U+FFFD, which a value may hold as a character like any (src/streams/utf8Text.ts). */
  undecodable: string;
}

/** The answer for a value, key or CSV column name holding bytes the body's decoder could not read. */
export const UNDECODABLE_MESSAGE = "holds bytes that are not valid in the body's encoding (see the Encoding parameter)";

/** A string Postgres and the lead data can hold: no NUL, no byte the decoder could not read. */
function textProblem(value: string, rules: BulkRowRules): string | undefined {
  if (value.includes(rules.undecodable)) return UNDECODABLE_MESSAGE;
  return storableTextProblem(value);
}

/** A data key Postgres and the lead data can hold, and that an object keeps (not `__proto__`). */
function dataKeyProblem(key: string, rules: BulkRowRules): string | undefined {
  if (key.includes(rules.undecodable)) return UNDECODABLE_MESSAGE;
  return storableKeyProblem(key);
}

/**
 * A key as an answer names it: the decoder's mark, which is no client's text, as U+FFFD (the
 * character that stands for what could not be read; src/streams/utf8Text.ts shownText).
 */
function shownKey(key: string, rules: BulkRowRules): string {
  return key.includes(rules.undecodable) ? key.replaceAll(rules.undecodable, '\uFFFD') : key;
}

function dataObject(value: Record<string, unknown>, prefix: string, rules: BulkRowRules): BulkRowParse {
  const { maxValueBytes } = rules;
  const data: Record<string, string> = {};
  const errors: LeadDataError[] = [];
  for (const [key, v] of Object.entries(value)) {
    const field = prefix + shownKey(key, rules);
    // null is an empty value (.NET writes an unset string as null), which counts as absent.
    if (v === null) continue;
    if (typeof v !== 'string') {
      errors.push({ field, message: 'must be a string or null' });
      continue;
    }
    const problem =
      dataKeyProblem(key, rules) ?? (isLargerThan(v, maxValueBytes) ? valueTooLargeMessage(maxValueBytes) : textProblem(v, rules));
    if (problem) errors.push({ field, message: problem });
    else data[key] = v;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, input: { data } };
}

/** Reads one row: a data object or an import body; a value over `maxValueBytes` (UTF-8) fails it. */
export function parseBulkRow(value: unknown, rules: BulkRowRules): BulkRowParse {
  if (!isObject(value)) return { ok: false, errors: [{ field: ROW, message: 'must be a JSON object' }] };
  const keys = new Map(Object.keys(value).map((k) => [k.toLowerCase(), k]));
  const dataKey = keys.get('data');
  if (dataKey === undefined || !isObject(value[dataKey])) return dataObject(value, '', rules);

  const errors: LeadDataError[] = [];
  const input: BulkRowInput = { data: {} };
  for (const [key, v] of Object.entries(value)) {
    if (key.includes(rules.undecodable)) {
      errors.push({ field: shownKey(key, rules), message: UNDECODABLE_MESSAGE });
      continue;
    }
    switch (key.toLowerCase()) {
      case 'data': {
        const parsed = dataObject(v as Record<string, unknown>, 'Data.', rules);
        if (parsed.ok) input.data = parsed.input.data;
        else errors.push(...parsed.errors);
        break;
      }
      case 'campaigncode': {
        if (typeof v !== 'string' || v.trim() === '') {
          errors.push({ field: key, message: 'must be a non-empty string' });
          break;
        }
        const problem = textProblem(v, rules);
        if (problem) errors.push({ field: key, message: problem });
        else input.campaignCode = v.trim();
        break;
      }
      case 'leadpool':
      case 'pool':
        if (v === null || v === undefined) break;
        if (typeof v !== 'string') errors.push({ field: key, message: 'must be a string' });
        else if (v.trim().length > MAX_POOL_NAME) errors.push({ field: key, message: `must be at most ${MAX_POOL_NAME} characters` });
        else {
          const problem = textProblem(v, rules);
          if (problem) errors.push({ field: key, message: problem });
          else if (v.trim() !== '') input.pool = v.trim();
        }
        break;
      case 'duplicatecheck':
      case 'duplicatekey':
      case 'duplicatewindow':
      case 'duplicatestatuses':
      case 'onduplicate':
        // The single import takes these in its body; a bulk import takes them once, for every row.
        errors.push({
          field: key,
          message: 'is a query parameter of POST /leads/bulk (it applies to every row), not a property of an import body',
        });
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
