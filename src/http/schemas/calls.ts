import { z } from 'zod';
import { csvSeparatorProblem, isKnownEncoding } from '../../streams/encoding';
import { isValidCsvSeparator } from '../../streams/csv';
import { dateTimeParam, includeParam, limitParam, ORGANIZATION_TREE_INCLUDE_RULE, timeSpanParam, uniqueIdParam } from './common';
import { fieldShape } from './fieldSchemas';
import { orgUnitOut, userOut, campaignOut } from './organization';
import { CALL_FIELDS, READY_PERIOD_HEAD_FIELDS, READY_PERIOD_TAIL_FIELDS, RECORDING_FIELDS } from '../../domain/callFields';

/**
 * Request and response schemas of the calls family; they feed validation and the OpenAPI
 * document. The responses' plain properties come from the field tables (src/domain/callFields.ts).
 */

const orgCodeParam = z
  .string()
  .min(1)
  .meta({ description: 'Org code of a user or an org unit (any characters; percent-encoded in paths).', example: 'Demo Contact Center' });

/** The window every call list takes. */
const windowQuery = {
  StartTime: dateTimeParam.meta({ description: 'Start of the window (inclusive), matched against the call start time.' }),
  TimeSpan: timeSpanParam.meta({
    description: 'Length of the window; the window ends (exclusive) at StartTime + TimeSpan in platform time.',
  }),
  Limit: limitParam.optional(),
  Include: includeParam
    .optional()
    .meta({ description: `campaign, user, and properties of those (for example parent, campaigns). ${ORGANIZATION_TREE_INCLUDE_RULE}` }),
};

export const callsQuery = z.object({ OrgCode: orgCodeParam, ...windowQuery });
export const callsOfQuery = z.object(windowQuery);
/** The path of a user's or an org unit's calls, with an org code of that kind as its example. */
export const orgCodePath = (example: string) => z.object({ OrgCode: orgCodeParam.meta({ example }) });

const UNKNOWN_ENCODING = 'is not a known encoding (for example utf-8, windows-1252, iso-8859-1)';

export const encodingParam = z
  .string()
  // A charset name's own alphabet: the value is echoed in Content-Type, so nothing else may pass.
  // A value outside it is not looked up (abort): one error, not the same one twice.
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:+-]{0,39}$/, { message: UNKNOWN_ENCODING, abort: true })
  .refine((v) => isKnownEncoding(v), { message: UNKNOWN_ENCODING })
  .meta({ description: 'Character encoding of the file; any encoding iconv-lite knows.', example: 'windows-1252' });

export const separatorParam = z
  .string()
  // A tab is hard to put in a URL: `tab` and `\t` (backslash, t) name it too.
  .transform((v) => (/^(tab|\\t)$/i.test(v) ? '\t' : v))
  .refine(isValidCsvSeparator, { message: 'must be one character other than ", ], \\, CR or LF' })
  .meta({ description: 'Field separator, one character (a tab as `%09`, `tab` or `\\t`).', example: ';' });

/** The separator and encoding of a CSV export, when both are given and the encoding is known. */
function separatorAndEncoding(q: object): { separator: string; encoding: string } | undefined {
  const { CsvFieldSeparator: separator, Encoding: encoding } = q as { CsvFieldSeparator?: string; Encoding?: string };
  // An unknown encoding is that parameter's error alone.
  return separator === undefined || encoding === undefined || !isKnownEncoding(encoding) ? undefined : { separator, encoding };
}

/**
 * The query of a CSV export with `Encoding` and `CsvFieldSeparator`: a separator the encoding
 * cannot write would come out as `?`; and `?` itself is what an encoding that cannot write every
 * character writes for those it lacks. Either way no reader could split the file: a 400
 * (csvSeparatorProblem, which the bulk import's CSV body shares).
 */
export function csvExportQuery<T extends z.ZodObject>(query: T) {
  return query.superRefine((q, ctx) => {
    const given = separatorAndEncoding(q);
    const problem = given && csvSeparatorProblem(given.separator, given.encoding, 'write');
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['CsvFieldSeparator'], message: problem });
  });
}

export const callsCsvQuery = csvExportQuery(
  z.object({
    OrgCode: orgCodeParam,
    ...windowQuery,
    Encoding: encodingParam.optional(),
    CsvFieldSeparator: separatorParam.optional(),
  }),
);

export const recordingsPath = z.object({
  UniqueId: uniqueIdParam('Unique id of the call.', { example: 'demo-call-0009' }),
});
export const recordingsQuery = z.object({
  StartTime: dateTimeParam
    .optional()
    .meta({ description: 'Only recordings that started at or after this time.', example: '2026-11-16T10:00:00' }),
  TimeSpan: timeSpanParam.optional().meta({ description: 'With StartTime: only recordings that started before StartTime + TimeSpan.' }),
  Limit: limitParam.optional(),
  Include: includeParam.optional().meta({ description: 'Accepted; a recording has no complex properties.' }),
});

export const readyPeriodsQuery = z.object({
  FromTime: dateTimeParam.meta({ description: 'Start of the window (inclusive), matched against the end of each period.' }),
  TimeSpan: timeSpanParam.meta({ description: 'Length of the window; periods ending before FromTime + TimeSpan.' }),
});

export const callOut = z
  .object({
    campaign: campaignOut.optional().meta({ description: 'Only with Include=campaign.' }),
    user: userOut.optional().meta({ description: 'Only with Include=user.' }),
    organizationalUnits: z.array(orgUnitOut).meta({ description: 'The caller’s org units at the time of the call, root first.' }),
    ...fieldShape(CALL_FIELDS),
  })
  .meta({ id: 'Call' });

export const recordingOut = z.object(fieldShape(RECORDING_FIELDS)).meta({ id: 'RecordedConversation' });

export const readyPeriodOut = z
  .object({
    ...fieldShape(READY_PERIOD_HEAD_FIELDS),
    campaign: campaignOut,
    ...fieldShape(READY_PERIOD_TAIL_FIELDS),
  })
  .meta({ id: 'AgentReadyForCallPeriod' });
