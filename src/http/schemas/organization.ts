import { z } from 'zod';
import { includeParam, limitParam } from './common';

/** Request and response schemas of the organisation and campaign reads; they feed validation and the OpenAPI document. */

export const campaignOut = z
  .object({
    uniqueId: z.string(),
    name: z.string(),
    code: z.string(),
    project: z.string(),
    leadDefinitionUniqueId: z.string(),
  })
  .meta({ id: 'Campaign' });

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
    campaigns: z.array(campaignOut).optional().meta({ description: 'Campaigns the user works on that the account can see; with Include=campaigns.' }),
    projects: z.array(z.string()).meta({ description: 'Projects of those campaigns.' }),
    roles: z.array(z.string()),
    employeeNumber: z.string().optional(),
    payrollNumber: z.string().optional(),
  })
  .meta({ id: 'User' });

const orgCode = z.string().min(1).meta({ description: 'Org code (any characters; percent-encoded in the path).' });

export const usersQuery = z.object({ Limit: limitParam.optional(), Include: includeParam.optional() });
export const userPath = z.object({ OrgCode: orgCode });
export const includeQuery = z.object({ Include: includeParam.optional() });
export const orgUnitPathLower = z.object({ orgCode });
export const orgUnitPath = z.object({ OrgCode: orgCode });
