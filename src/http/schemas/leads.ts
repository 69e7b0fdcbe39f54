import { z } from 'zod';
import { resolveLeadFilter, LeadFilter } from '../../domain/leadFilters';
import {
  bodyInteger,
  booleanParam,
  dateTimeParam,
  enumListParam,
  enumNameParam,
  includeParam,
  limitParam,
  listParam,
  ORGANIZATION_TREE_INCLUDE_RULE,
  timeSpanParam,
  UNIQUE_ID_RULE,
  uniqueIdParam,
  windowInOrder,
} from './common';
import { csvExportQuery, encodingParam, separatorParam } from './calls';
import { campaignOut, orgUnitOut, userOut } from './organization';
import { fieldShape } from './fieldSchemas';
import { LEAD_HEAD_FIELDS, LEAD_TIME_FIELDS } from '../../domain/leadFields';
import { LeadClosure, LeadStatus } from '../../domain/enums';
import { DuplicateCheck, DuplicateKey, DuplicateSettings, DuplicateStatuses, OnDuplicate } from '../../domain/duplicates';

/** Request and response schemas of the leads services (docs/decisions.md, Leads); they feed validation and the OpenAPI document. */

// ---- duplicate check ----------------------------------------------------------------------------

/**
 * The duplicate parameters (docs/decisions.md, Duplicates on import): query parameters of both
 * imports and body properties of the single one, names case-insensitive; they override the
 * campaign's defaults (GET /campaigns/{Code}).
 */
const duplicateParams = {
  DuplicateCheck: enumNameParam(DuplicateCheck).optional().meta({
    description:
      "Where a stored lead makes this one a duplicate: `None` (no check; the default unless the campaign sets one), `Campaign`, `Project` (the campaign's project), `Account` (every campaign the account's project rights reach).",
    example: 'Campaign',
  }),
  DuplicateKey: enumNameParam(DuplicateKey).optional().meta({
    description:
      'What makes two leads the same person: `Phone` (default; the number in E.164 as the do-not-call list normalises it), `ExternalKey`, `PhoneOrExternalKey`.',
    example: 'Phone',
  }),
  DuplicateWindow: timeSpanParam
    .refine(
      (ts) => !ts.negative && (ts.years || ts.months || ts.days || ts.hours || ts.minutes || ts.seconds),
      'must be a positive duration',
    )
    .optional()
    .meta({ description: 'Only leads uploaded within this span before now count; default any age.', example: 'P30D' }),
  DuplicateStatuses: enumNameParam(DuplicateStatuses).optional().meta({
    description:
      '`Open` (default): only open leads count (New, RedialAutomatic, RedialManualCommon, RedialManualPrivate, VIPRedial, Unresolved); `All`: closed ones too.',
    example: 'All',
  }),
  OnDuplicate: enumNameParam(OnDuplicate).optional().meta({
    description:
      "What a duplicate does: `Reject` (default; `success: false` with `duplicateOf`), `Skip` (nothing stored; `duplicate: true` with the stored lead's uniqueId), `Update` (the stored lead's editable data fields are merged with the new values, `updated: true`, a `lead.updated` hook event).",
    example: 'Skip',
  }),
};

type DuplicateParams = z.output<z.ZodObject<typeof duplicateParams>>;

/**
 * The duplicate parameters as properties of the single import's body: `null` is "not given", as
 * for `LeadPool` and a hook body's optional properties (.NET clients write an unset property as null).
 */
const duplicateBodyProps = {
  DuplicateCheck: nullInBody(duplicateParams.DuplicateCheck),
  DuplicateKey: nullInBody(duplicateParams.DuplicateKey),
  DuplicateWindow: nullInBody(duplicateParams.DuplicateWindow),
  DuplicateStatuses: nullInBody(duplicateParams.DuplicateStatuses),
  OnDuplicate: nullInBody(duplicateParams.OnDuplicate),
};

/** An optional parameter that also takes `null` for "not given", with the same description. */
function nullInBody<T extends z.ZodType>(param: z.ZodOptional<T>) {
  return param
    .unwrap()
    .nullish()
    .meta(param.meta() ?? {});
}

/** The settings the parameters say (absent or null ones are left to the campaign). */
export function duplicateSettings(params: { [K in keyof DuplicateParams]?: DuplicateParams[K] | null }): DuplicateSettings {
  return {
    ...(params.DuplicateCheck != null ? { check: params.DuplicateCheck } : {}),
    ...(params.DuplicateKey != null ? { key: params.DuplicateKey } : {}),
    ...(params.DuplicateWindow != null ? { window: params.DuplicateWindow } : {}),
    ...(params.DuplicateStatuses != null ? { statuses: params.DuplicateStatuses } : {}),
    ...(params.OnDuplicate != null ? { onDuplicate: params.OnDuplicate } : {}),
  };
}

// ---- import -----------------------------------------------------------------------------------

/** The duplicate parameters as query parameters of POST /leads (the body's win over them). */
export const importLeadQuery = z.object(duplicateParams);

export const importLeadBody = z.object({
  CampaignCode: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .meta({ description: 'Code of the campaign the lead is imported into.', example: 'B2B-SALES-Q4' }),
  Data: z
    .record(
      z.string(),
      // null is an empty value (.NET writes an unset string as null), which counts as absent.
      z.preprocess((v) => (v === null ? '' : v), z.string({ message: 'every value must be a string or null' })),
      { message: 'must be an object of strings' },
    )
    .meta({
      description:
        "Lead data: field name or import name of the campaign's lead definition (case-insensitive) → value as a string; `null` or empty counts as absent.",
      example: { CompanyName: 'Acme ApS', Phone: '+45 12 34 56 78' },
    }),
  LeadPool: z.string({ message: 'must be a string' }).trim().max(200, 'must be at most 200 characters').nullish().meta({
    description:
      'Name of the lead pool (created when missing); `Pool` is accepted too. Absent or blank: `(auto) yyyy-MM-dd` of the platform-local date.',
  }),
  ...duplicateBodyProps,
});

export const importLeadBodyAliases = { Pool: 'LeadPool' };

const fieldError = z.object({ field: z.string(), message: z.string() });

export const importLeadResponse = z
  .union([
    z.object({
      success: z.literal(true),
      uniqueId: z.string(),
      pool: z.string(),
      status: z.enum(['DoNotCall', 'GlobalDoNotCall']).optional().meta({
        description: 'Present when the lead was not created New: its number is on a do-not-call list.',
      }),
    }),
    z
      .object({
        success: z.literal(true),
        uniqueId: z.string().meta({ description: 'The stored lead this one duplicates.' }),
        duplicate: z.literal(true),
      })
      .meta({
        description: 'OnDuplicate=Skip: a duplicate; nothing was stored.',
        example: { success: true, uniqueId: '4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11', duplicate: true },
      }),
    z
      .object({
        success: z.literal(true),
        uniqueId: z.string().meta({ description: 'The stored lead this one duplicates, now updated.' }),
        updated: z.literal(true),
      })
      .meta({
        description: "OnDuplicate=Update: the stored lead's editable data fields were merged with the new values.",
        example: { success: true, uniqueId: '4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11', updated: true },
      }),
    z
      .object({
        success: z.literal(false),
        duplicateOf: z.string().optional().meta({ description: 'OnDuplicate=Reject: the stored lead this one duplicates.' }),
        errors: z.array(fieldError),
      })
      .meta({
        example: {
          success: false,
          duplicateOf: '4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11',
          errors: [{ field: 'Phone', message: 'duplicate of lead 4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11' }],
        },
      }),
  ])
  .meta({ id: 'ImportLeadResult' });

// ---- exports ----------------------------------------------------------------------------------

const leadFilterQuery = {
  Projects: listParam.optional().meta({
    description:
      "Project patterns (`*`, `?`, case-insensitive) or project unique ids (GET /projects); default `*`. Always limited by the account's project rights.",
  }),
  Campaigns: listParam.optional().meta({ description: `Campaign codes or unique ids. ${UNIQUE_ID_RULE}` }),
  ModifiedFrom: dateTimeParam.optional().meta({ description: 'Leads last modified at or after this time (a date is local midnight).' }),
  ModifiedTo: dateTimeParam
    .optional()
    .meta({ description: 'Leads last modified before this time (exclusive); must not be before ModifiedFrom.', example: '2026-11-21' }),
  Statuses: enumListParam(LeadStatus).optional(),
  AllOpenStatuses: booleanParam.optional().meta({
    description: 'true adds New, RedialAutomatic, RedialManualCommon, RedialManualPrivate, VIPRedial and Unresolved.',
  }),
  AllClosedStatuses: booleanParam.optional().meta({ description: 'true adds every status that is not open.' }),
  LeadClosures: enumListParam(LeadClosure).optional(),
  UniqueId: listParam.optional().meta({ description: `One or more lead unique ids. ${UNIQUE_ID_RULE}` }),
  Limit: limitParam.optional().meta({
    description: 'At most this many leads: the first ones in export order. A cap, not paging (nothing paginates).',
  }),
};

type LeadFilterQuery = z.output<z.ZodObject<typeof leadFilterQuery>>;

/** The export filter the simpleleads parameters (shared by /simpleleads and /rawleads) describe. */
export function leadFilterFromQuery(query: LeadFilterQuery): LeadFilter {
  return resolveLeadFilter({
    projects: query.Projects,
    campaigns: query.Campaigns,
    modifiedFrom: query.ModifiedFrom,
    modifiedTo: query.ModifiedTo,
    statuses: query.Statuses,
    allOpenStatuses: query.AllOpenStatuses,
    allClosedStatuses: query.AllClosedStatuses,
    closures: query.LeadClosures,
    uniqueIds: query.UniqueId,
    limit: query.Limit,
  });
}

/** `Include` of a lead answer: the lead's references, as every lead export and GET /leads/{UniqueId} take them. */
const leadIncludeParam = includeParam.optional().meta({
  description: `campaign, ownerOrgUnit, uploadedByUser, lastModifiedByUser, firstProcessedByUser, and properties of those. ${ORGANIZATION_TREE_INCLUDE_RULE}`,
});

export const simpleLeadsQuery = z
  .object({
    ...leadFilterQuery,
    Include: leadIncludeParam,
  })
  .superRefine(windowInOrder('ModifiedFrom', 'ModifiedTo', { empty: true }));

export const rawLeadsQuery = csvExportQuery(
  z
    .object({
      ...leadFilterQuery,
      Encoding: encodingParam.optional(),
      CsvFieldSeparator: separatorParam.optional(),
    })
    .superRefine(windowInOrder('ModifiedFrom', 'ModifiedTo', { empty: true })),
);

export const leadPath = z.object({ UniqueId: uniqueIdParam('Unique id of the lead.', { example: 'demo-lead-001' }) });
export const leadGetQuery = z.object({
  Include: leadIncludeParam,
});

const savedSearchParams = {
  searchName: z
    .string()
    .min(1)
    .meta({ description: 'Name of a search saved by the user linked to the account.', example: 'Open B2B leads' }),
  modifiedFrom: dateTimeParam.meta({ description: 'Leads last modified at or after this time (a date is local midnight).' }),
  modifiedTo: dateTimeParam.optional().meta({
    description:
      'Leads last modified before this time (exclusive; a date is local midnight); must not be before modifiedFrom. Absent: no end.',
    example: '2026-11-21',
  }),
  project: z.string().trim().min(1).optional().meta({
    description:
      'Replaces the campaign selection of the search by the campaigns of this project: a name (`*` and `?` allowed) or a project unique id (GET /projects).',
  }),
};

export const savedSearchQuery = z
  .object({
    ...savedSearchParams,
    Include: leadIncludeParam,
  })
  .superRefine(windowInOrder('modifiedFrom', 'modifiedTo', { empty: true }));

export const savedSearchCsvQuery = csvExportQuery(
  z
    .object({
      ...savedSearchParams,
      Encoding: encodingParam.optional(),
      CsvFieldSeparator: separatorParam.optional(),
    })
    .superRefine(windowInOrder('modifiedFrom', 'modifiedTo', { empty: true })),
);

// ---- responses --------------------------------------------------------------------------------

const reference = (what: string) =>
  z
    .union([z.object({ orgCode: z.string() }), what === 'OrgUnit' ? orgUnitOut : userOut])
    .nullable()
    .optional()
    .meta({ description: `${what}: \`{ orgCode }\`, or the full object when included; absent when not set.` });

export const leadOut = z
  .object({
    ...fieldShape(LEAD_HEAD_FIELDS),
    pool: z.string().meta({ description: 'Name of the lead pool.' }),
    campaign: z.union([z.object({ uniqueId: z.string(), code: z.string() }), campaignOut]).meta({
      description: 'Campaign: `{ uniqueId, code }`, or the full object with Include=campaign.',
    }),
    data: z.record(z.string(), z.string()).meta({
      description: "Field name → value; only fields the account's lead definition entry access reaches.",
    }),
    ...fieldShape(LEAD_TIME_FIELDS),
    ownerOrgUnit: reference('OrgUnit'),
    uploadedByUser: reference('User'),
    lastModifiedByUser: reference('User'),
    firstProcessedByUser: reference('User'),
    closureData: z.array(z.unknown()),
  })
  .meta({
    id: 'Lead',
    example: {
      uniqueId: '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
      status: 'New',
      closure: 'NotSet',
      priority: 5,
      phoneNumber: '+45 12 34 56 78',
      externalKey: 'CUST-1001',
      pool: '(auto) 2026-05-06',
      campaign: { uniqueId: '9b1d2f4a-6c3e-4f5a-8b7d-1e2c3a4b5c6d', code: 'B2B-2026' },
      data: { Name: 'Jens Hansen', Phone: '+45 12 34 56 78', Customer: 'CUST-1001' },
      uploadTime: '2026-05-06T10:16:41.000+02:00',
      lastModifiedTime: '2026-05-07T09:02:10.000+02:00',
      uploadedByUser: { orgCode: 'ann@example.com' },
      lastModifiedByUser: { orgCode: 'ann@example.com' },
      closureData: [],
    },
  });

// ---- lead changes -----------------------------------------------------------------------------

/** The statuses a patch may set: the administrative moves of the lifecycle. */
const ADMINISTRATIVE_STATUSES = ['Removed', 'DoNotCall'] as const;

/** Enumeration names are matched case-insensitively on input (docs/decisions.md, Wire conventions). */
function administrativeStatusName(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return ADMINISTRATIVE_STATUSES.find((name) => name.toLowerCase() === value.toLowerCase()) ?? value;
}

/** The properties of a lead a merge patch may name; every other lead property is a 400. */
export const LEAD_PATCH_PROPERTIES = ['data', 'priority', 'status'] as const;

export const leadPatchBody = z
  .object({
    data: z
      .record(z.string(), z.string({ message: 'every value must be a string or null' }).nullable(), {
        message: 'must be an object of strings',
      })
      .optional()
      .meta({
        description:
          'Field name or import name → new value (a string, checked as an import checks it), or null (or an empty string) to remove the value. ' +
          "Only fields that are `editable` in the lead definition and within the account's entry access; fields not named keep their values.",
        example: { Email: 'emil.jensen@nordlys.example', ContactPerson: null },
      }),
    priority: bodyInteger(
      z
        .number({ message: 'must be an integer' })
        .int('must be an integer')
        .min(-2147483648, 'must be a 32-bit integer')
        .max(2147483647, 'must be a 32-bit integer'),
    )
      .optional()
      .meta({ description: "The lead's priority.", example: 10 }),
    status: z
      .preprocess(
        administrativeStatusName,
        z.enum(ADMINISTRATIVE_STATUSES, {
          message: 'must be Removed or DoNotCall (administrative moves); Anonymized has its own endpoint',
        }),
      )
      .optional()
      .meta({
        description:
          "An administrative move. `DoNotCall` also puts the lead's number on the do-not-call list for the lead's project, which moves that project's other open leads with the number.",
        example: 'DoNotCall',
      }),
  })
  .meta({
    id: 'LeadPatch',
    description: 'A JSON merge patch (RFC 7396) of a lead: properties left out stay as they are.',
    example: { priority: 10, data: { Email: 'emil.jensen@nordlys.example' } },
  });

export const IF_MATCH_HEADER = {
  name: 'If-Match',
  description:
    "The lead's `ETag` as GET answered it (one or more, comma-separated, or `*`). When the lead has changed since, nothing is written and the answer is 412.",
};

export const leadsOut = z.array(leadOut);

// ---- bulk import ------------------------------------------------------------------------------

export const bulkImportQuery = z.object({
  CampaignCode: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .meta({ description: 'Code of the campaign the leads are imported into; checked before the body is read.', example: 'B2B-SALES-Q4' }),
  LeadPool: z.string().trim().max(200, 'must be at most 200 characters').optional().meta({
    description:
      'Pool of every row that names none (created when missing). Absent: `(auto) yyyy-MM-dd` of the platform-local date at the moment each batch is stored.',
  }),
  Encoding: encodingParam.optional().meta({
    description: 'Character encoding of the body (any encoding iconv-lite knows); default the `charset` of Content-Type, else utf-8.',
    example: 'utf-8',
  }),
  CsvFieldSeparator: separatorParam.optional().meta({
    description:
      "Field separator of a CSV body, one character (`%09` for tab); default `;`. It must be a character of the body's encoding (`Encoding`, else the Content-Type charset): one it lacks (U+FFFD or `€` in iso-8859-1) is a 400.",
    example: ';',
  }),
  ...duplicateParams,
});

const bulkRowResult = z
  .object({
    row: z.number().int().meta({ description: 'Number of the data row, from 1 (a CSV header row and blank lines are not counted).' }),
    success: z.boolean(),
    uniqueId: z
      .string()
      .optional()
      .meta({ description: 'The stored lead (success only); with `duplicate` or `updated` the lead this row duplicates.' }),
    duplicate: z.literal(true).optional().meta({ description: 'OnDuplicate=Skip: the row duplicates `uniqueId`; nothing was stored.' }),
    updated: z.literal(true).optional().meta({
      description: "OnDuplicate=Update: the row's editable fields were merged into `uniqueId` (a stored lead or an earlier row).",
    }),
    duplicateOf: z.string().optional().meta({
      description: 'OnDuplicate=Reject: the stored lead, or the lead of an earlier row of this request, that the row duplicates.',
    }),
    status: z
      .enum(['New', 'DoNotCall', 'GlobalDoNotCall'])
      .optional()
      .meta({ description: 'Status the lead was created in (success only).' }),
    errors: z
      .array(fieldError)
      .optional()
      .meta({ description: 'Why the row was not stored; `(row)` when the row itself could not be read.' }),
  })
  .meta({ id: 'BulkImportRowResult' });

const bulkStopElement = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int().meta({
      description: '400 (body unreadable past this point), 413 (over BULK_BODY_LIMIT), 403 (campaign no longer accessible), 500.',
    }),
    detail: z.string(),
    code: z.string(),
    rows: z.number().int().meta({ description: 'How many rows were answered before it.' }),
  })
  .meta({
    id: 'BulkImportStop',
    description: 'The last element when the import ended before the end of the body: a problem object with the number of rows answered.',
  });

export const bulkImportResponse = z.array(z.union([bulkRowResult, bulkStopElement])).meta({
  example: [
    { row: 1, success: true, uniqueId: '4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11', status: 'New' },
    { row: 2, success: false, errors: [{ field: 'Phone', message: 'must be a phone number' }] },
    {
      row: 3,
      success: false,
      duplicateOf: '4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11',
      errors: [{ field: 'Phone', message: 'duplicate of lead 4f7d0f7e-3c1a-4c8e-9d55-0b9d2f1f2a11' }],
    },
  ],
});

/** The request bodies of POST /leads/bulk, for the OpenAPI document (the handler reads them as streams). */
export const bulkImportBodies = {
  'application/json': {
    schema: z.array(
      z.union([
        z.record(z.string(), z.string()).meta({ description: 'Lead data: field name or import name → value.' }),
        z.object({ CampaignCode: z.string().optional(), Data: z.record(z.string(), z.string()), LeadPool: z.string().optional() }).meta({
          description: "An import body as POST /leads takes it; CampaignCode, when given, must be the request's.",
        }),
      ]),
    ),
    examples: {
      data: {
        summary: 'Data objects',
        value: [
          { CompanyName: 'Acme ApS', Phone: '+45 12 34 56 78' },
          { Company: 'Ærø Fisk A/S', Phone: '+45 87 65 43 21', Email: 'kontakt@aeroefisk.example' },
        ],
      },
      importBodies: {
        summary: 'Import bodies',
        value: [
          { CampaignCode: 'B2B-SALES-Q4', Data: { CompanyName: 'Acme ApS', Phone: '+45 12 34 56 78' } },
          { Data: { CompanyName: 'Ærø Fisk A/S', Phone: '+45 87 65 43 21' }, LeadPool: 'Spring fair' },
        ],
      },
    },
  },
  'application/x-ndjson': {
    schema: { type: 'string', description: 'One JSON object (data object or import body) per line; blank lines are skipped.' },
    examples: {
      ndjson: {
        summary: 'One object a line',
        value:
          '{"CompanyName":"Acme ApS","Phone":"+45 12 34 56 78"}\n{"Data":{"CompanyName":"Ærø Fisk A/S","Phone":"+45 87 65 43 21"},"LeadPool":"Spring fair"}\n',
      },
    },
  },
  'text/csv': {
    schema: {
      type: 'string',
      description: 'A header row of field names (or import names), then one row per lead; `CsvFieldSeparator` and `Encoding` apply.',
    },
    examples: {
      csv: {
        summary: 'Semicolon-separated',
        value: 'CompanyName;Phone;Email\r\nAcme ApS;+45 12 34 56 78;\r\nÆrø Fisk A/S;+45 87 65 43 21;kontakt@aeroefisk.example\r\n',
      },
    },
  },
} as const;
