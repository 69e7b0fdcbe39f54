import { z } from 'zod';
import { includeParam, limitParam, listParam, timeSpanOut, UNIQUE_ID_RULE } from './common';
import { leadDefinitionOut } from './leadDefinitions';

/** Request and response schemas of the organisation and campaign reads; they feed validation and the OpenAPI document. */

export const campaignOut = z
  .object({
    uniqueId: z.string(),
    name: z.string(),
    code: z.string(),
    project: z.string(),
    leadDefinitionUniqueId: z.string(),
    active: z.boolean().meta({ description: 'Whether the campaign is in use (an inactive one keeps its leads and calls).', example: true }),
  })
  .meta({ id: 'Campaign' });

export const projectOut = z
  .object({
    uniqueId: z.string().meta({
      description:
        'Stable id of the project (derived from its name, compared case-insensitively); accepted wherever a project pattern is, matching this project only.',
      example: 'a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe',
    }),
    name: z.string().meta({ description: 'The project name as its campaigns carry it.', example: 'B2B Sales' }),
    active: z.boolean().meta({ description: 'At least one of its campaigns the account can see is active.', example: true }),
  })
  .meta({ id: 'Project' });

// Recursive references are documented by id; nested includes follow the same shapes.
const nested = z.looseObject({}).meta({ description: 'Included object (see the Include parameter).' });

export const orgUnitOut = z
  .object({
    uniqueId: z.string(),
    name: z.string(),
    orgCode: z.string(),
    level: z.number().int().meta({ description: '0 is the root.' }),
    parent: nested.nullable().optional().meta({ description: 'OrgUnit; with Include=parent (null for the root).' }),
    children: z.array(nested).optional().meta({ description: 'OrgUnits; with Include=children.' }),
    users: z.array(nested).optional().meta({ description: 'Users; with Include=users.' }),
  })
  .meta({ id: 'OrgUnit' });

export const userOut = z
  .object({
    uniqueId: z.string(),
    username: z.string(),
    name: z.string(),
    orgCode: z.string(),
    email: z.string().optional(),
    inboundPhoneNumber: z.string().optional(),
    parent: nested.nullable().optional().meta({ description: 'OrgUnit; with Include=parent.' }),
    campaigns: z
      .array(campaignOut)
      .optional()
      .meta({ description: 'Active campaigns the user works on that the account can see; with Include=campaigns.' }),
    projects: z.array(z.string()).meta({ description: 'Projects of those campaigns.' }),
    roles: z.array(z.string()),
    employeeNumber: z.string().optional(),
    payrollNumber: z.string().optional(),
  })
  .meta({ id: 'User' });

const orgCode = z.string().min(1).meta({ description: 'Org code (any characters; percent-encoded in the path).' });

export const usersQuery = z.object({ Limit: limitParam.optional(), Include: includeParam.optional() });
export const userPath = z.object({ OrgCode: orgCode.meta({ example: 'anna.jensen@demo.example' }) });
export const includeQuery = z.object({ Include: includeParam.optional() });
export const orgUnitPathLower = z.object({ orgCode: orgCode.meta({ example: 'Salg Øst' }) });
export const orgUnitPath = z.object({ OrgCode: orgCode.meta({ example: 'TRYG Forsikring A/S' }) });

/** `true`, `false` or `All` (any case), as clients of the live service send it; `1` and `0` as every boolean parameter takes them. */
const activeParam = z
  .string()
  .transform((value, ctx) => {
    const v = value.trim().toLowerCase();
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
    if (v === 'all') return undefined;
    ctx.addIssue({ code: 'custom', message: 'must be true, false or All' });
    return z.NEVER;
  })
  .meta({ description: '`true`: active campaigns only; `false`: inactive ones only; `All` (default): both.', example: 'All' });

export const campaignsQuery = z.object({
  Project: listParam.optional().meta({
    description:
      "Project patterns (`*`, `?`, case-insensitive) or project unique ids (GET /projects): only campaigns of those projects. Always limited by the account's project rights.",
    example: ['B2B*'],
  }),
  Active: activeParam.optional(),
  Limit: limitParam.optional().meta({ description: 'At most this many campaigns, by code. A cap, not paging.' }),
});

export const campaignPath = z.object({
  Code: z
    .string()
    .min(1)
    .meta({
      description: `The campaign's code (or its unique id); percent-encoded in the path. ${UNIQUE_ID_RULE}`,
      example: 'B2B-SALES-Q4',
    }),
});

export const campaignWithDefinitionOut = campaignOut
  .extend({
    leadDefinition: leadDefinitionOut.optional().meta({ description: "The campaign's lead definition; with Include=leadDefinition." }),
    duplicateCheck: z.enum(['None', 'Campaign', 'Project', 'Account']).meta({
      description: 'The duplicate check an import into this campaign runs when its request names none (POST /leads, DuplicateCheck).',
    }),
    duplicateKey: z.enum(['Phone', 'ExternalKey', 'PhoneOrExternalKey']).meta({ description: 'Default DuplicateKey.' }),
    duplicateWindow: timeSpanOut.nullable().meta({ description: 'Default DuplicateWindow; null: leads of any age count.' }),
    onDuplicate: z.enum(['Reject', 'Skip', 'Update']).meta({ description: 'Default OnDuplicate.' }),
  })
  .meta({
    id: 'CampaignWithLeadDefinition',
    example: {
      uniqueId: '9b1d2f4a-6c3e-4f5a-8b7d-1e2c3a4b5c6d',
      name: 'B2B spring',
      code: 'B2B-2026',
      project: 'B2B',
      leadDefinitionUniqueId: '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
      active: true,
      duplicateCheck: 'Campaign',
      duplicateKey: 'Phone',
      duplicateWindow: 'P30D',
      onDuplicate: 'Skip',
      leadDefinition: {
        uniqueId: '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
        name: 'Consumer leads',
        fields: [
          {
            name: 'Phone',
            importName: 'Telefon',
            type: 'phone',
            required: true,
            sortOrder: 0,
            editable: true,
            access: 'None',
            externalKey: false,
          },
        ],
      },
    },
  });
