import { z } from 'zod';
import { DateTimeFormat, EntryAccess, RESOURCE_TYPES, VERBS } from '../../domain/enums';
import { dateTimeOut } from './common';

/** Response bodies of the /myaccount services (docs/decisions.md, Request counting); they document the OpenAPI output. */

export const myAccountBody = z
  .object({
    username: z.string(),
    userOrgCode: z.string().meta({ description: 'Org code of the platform user linked to the account.' }),
    orgCode: z.string().meta({ description: 'The same value as userOrgCode, under the name existing clients read.' }),
    dateTimeFormat: z.enum(DateTimeFormat.names as [string, ...string[]]).meta({
      description:
        'How answers write DateTimes unless a request sends `Prefer: datetime=…`: `Offset` (`2026-05-06T10:16:41.000+02:00`) or `Local` (platform wall time, `2026-05-06T10:16:41.0000000`).',
    }),
    projectRights: z.array(z.string()).meta({
      description: 'Project name patterns (`*` any run of characters, `?` one character; anchored, case-insensitive).',
    }),
    resourceRights: z.partialRecord(z.enum(RESOURCE_TYPES), z.array(z.enum(VERBS))).meta({
      description: 'Verbs granted per resource type; resource types without a verb are absent.',
      example: { Calls: ['Get'], Leads: ['Get', 'Post'] },
    }),
    leadDefinitionEntryAccess: z.enum(EntryAccess.names as [string, ...string[]]),
  })
  .meta({ id: 'MyAccount' });

export const requestLimitBody = z
  .object({
    service: z.string(),
    dailyLimit: z.number().int().meta({ description: 'Counter units allowed per 24-hour period.' }),
    highLimit: z.boolean().meta({ description: 'More than 10000 a day: a request adds 8 in production hours.' }),
    minuteLimit: z.number().int().meta({ description: 'The fair use minute limit: max(ceil(dailyLimit / 1440), 240).' }),
  })
  .meta({ id: 'RequestLimit' });

export const requestCountBody = z
  .object({
    service: z.string(),
    count: z.number().int().meta({ description: 'Counter units spent in the current 24-hour period.' }),
    periodStart: dateTimeOut.meta({ description: 'When the current period started (its first request).' }),
    resetSeconds: z.number().int().meta({ description: 'Seconds left in the current period.' }),
    minuteCount: z.number().int().meta({ description: 'Spent in the current fair use minute window; 0 when none is open.' }),
  })
  .meta({ id: 'RequestCount' });
