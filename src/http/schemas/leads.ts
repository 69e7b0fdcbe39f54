import { z } from 'zod';
import { resolveLeadFilter, LeadFilter } from '../../domain/leadFilters';
import { booleanParam, dateTimeOut, dateTimeParam, enumListParam, includeParam, listParam } from './common';
import { encodingParam, separatorParam } from './calls';
import { campaignOut, orgUnitOut, userOut } from './organization';
import { LeadClosure, LeadStatus } from '../../domain/enums';

/** Request and response schemas of the leads services (docs/decisions.md, Leads); they feed validation and the OpenAPI document. */

// ---- import -----------------------------------------------------------------------------------

export const importLeadBody = z.object({
  CampaignCode: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .meta({ description: 'Code of the campaign the lead is imported into.' }),
  Data: z
    .record(z.string(), z.string({ message: 'every value must be a string' }), { message: 'must be an object of strings' })
    .meta({
      description:
        "Lead data: field name or import name of the campaign's lead definition (case-insensitive) → value as a string.",
      example: { Name: 'Jens Hansen', Telefon: '+45 12 34 56 78' },
    }),
  LeadPool: z
    .string({ message: 'must be a string' })
    .max(200, 'must be at most 200 characters')
    .nullish()
    .meta({
      description:
        'Name of the lead pool (created when missing); `Pool` is accepted too. Absent or blank: `(auto) yyyy-MM-dd` of the platform-local date.',
    }),
});

export const importLeadBodyAliases = { Pool: 'LeadPool' };

const fieldError = z.object({ field: z.string(), message: z.string() });

export const importLeadResponse = z
  .union([
    z.object({ success: z.literal(true), uniqueId: z.string(), pool: z.string() }),
    z.object({ success: z.literal(false), errors: z.array(fieldError) }),
  ])
  .meta({ id: 'ImportLeadResult' });

// ---- exports ----------------------------------------------------------------------------------

const leadFilterQuery = {
  Projects: listParam.optional().meta({
    description: "Project patterns (`*`, `?`, case-insensitive); default `*`. Always limited by the account's project rights.",
  }),
  Campaigns: listParam.optional().meta({ description: 'Campaign codes or unique ids.' }),
  ModifiedFrom: dateTimeParam.optional().meta({ description: 'Leads last modified at or after this time (a date is local midnight).' }),
  ModifiedTo: dateTimeParam.optional().meta({ description: 'Leads last modified before this time (exclusive).' }),
  Statuses: enumListParam(LeadStatus).optional(),
  AllOpenStatuses: booleanParam.optional().meta({
    description: 'true adds New, RedialAutomatic, RedialManualCommon, RedialManualPrivate, VIPRedial and Unresolved.',
  }),
  AllClosedStatuses: booleanParam.optional().meta({ description: 'true adds every status that is not open.' }),
  LeadClosures: enumListParam(LeadClosure).optional(),
  UniqueId: listParam.optional().meta({ description: 'One or more lead unique ids.' }),
};

const leadFilterObject = z.object(leadFilterQuery);

/** The export filter the simpleleads parameters (shared by /simpleleads and /rawleads) describe. */
export function leadFilterFromQuery(query: z.output<typeof leadFilterObject>): LeadFilter {
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
  });
}

export const simpleLeadsQuery = z.object({
  ...leadFilterQuery,
  Include: includeParam.optional().meta({
    description: 'campaign, ownerOrgUnit, uploadedByUser, lastModifiedByUser, firstProcessedByUser, and properties of those.',
  }),
});

export const rawLeadsQuery = z.object({
  ...leadFilterQuery,
  Encoding: encodingParam.optional(),
  CsvFieldSeparator: separatorParam.optional(),
});

export const leadPath = z.object({ UniqueId: z.string().min(1).meta({ description: 'Unique id of the lead.' }) });
export const leadGetQuery = z.object({
  Include: includeParam.optional().meta({
    description: 'campaign, ownerOrgUnit, uploadedByUser, lastModifiedByUser, firstProcessedByUser.',
  }),
});

const savedSearchParams = {
  searchName: z.string().min(1).meta({ description: 'Name of a search saved by the user linked to the account.' }),
  modifiedFrom: dateTimeParam.meta({ description: 'Leads last modified at or after this time (a date is local midnight).' }),
  project: z.string().trim().min(1).optional().meta({
    description: 'Replaces the campaign selection of the search by the campaigns of this project (`*` and `?` allowed).',
  }),
};

export const savedSearchQuery = z.object({
  ...savedSearchParams,
  Include: includeParam.optional().meta({
    description: 'campaign, ownerOrgUnit, uploadedByUser, lastModifiedByUser, firstProcessedByUser.',
  }),
});

export const savedSearchCsvQuery = z.object({
  ...savedSearchParams,
  Encoding: encodingParam.optional(),
  CsvFieldSeparator: separatorParam.optional(),
});

// ---- responses --------------------------------------------------------------------------------

const names = (e: { names: string[] }) => z.enum(e.names as [string, ...string[]]);
const reference = (what: string) =>
  z
    .union([z.object({ orgCode: z.string() }), what === 'OrgUnit' ? orgUnitOut : userOut])
    .nullable()
    .optional()
    .meta({ description: `${what}: \`{ orgCode }\`, or the full object when included; absent when not set.` });

export const leadOut = z
  .object({
    uniqueId: z.string(),
    status: names(LeadStatus),
    closure: names(LeadClosure),
    priority: z.number().int(),
    phoneNumber: z.string().optional(),
    externalKey: z.string().optional(),
    pool: z.string().meta({ description: 'Name of the lead pool.' }),
    campaign: z.union([z.object({ uniqueId: z.string(), code: z.string() }), campaignOut]).meta({
      description: 'Campaign: `{ uniqueId, code }`, or the full object with Include=campaign.',
    }),
    data: z.record(z.string(), z.string()).meta({
      description: "Field name → value; only fields the account's lead definition entry access reaches.",
    }),
    uploadTime: dateTimeOut,
    lastModifiedTime: dateTimeOut,
    firstProcessedTime: dateTimeOut.optional(),
    ownerOrgUnit: reference('OrgUnit'),
    uploadedByUser: reference('User'),
    lastModifiedByUser: reference('User'),
    firstProcessedByUser: reference('User'),
    closureData: z.array(z.unknown()),
  })
  .meta({ id: 'Lead' });

export const leadsOut = z.array(leadOut);
