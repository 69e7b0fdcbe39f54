import { z } from 'zod';
import { dateTimeOut, dateTimeParam, listParam } from './common';

/** Request and response schemas of the do-not-call list (docs/decisions.md, Do-not-call); they feed validation and the OpenAPI document. */

const entryIn = z
  .object({
    phoneNumber: z
      .string({ message: 'must be a string' })
      .trim()
      .min(1, 'must not be empty')
      .max(50, 'must be at most 50 characters')
      .meta({
        description:
          "The number in any usual notation; stored in E.164. Without a country code it is read in the platform's default region (DEFAULT_PHONE_REGION). A number that cannot be read is a 400.",
        example: '+45 20 30 40 50',
      }),
    project: z
      .string({ message: 'must be a string' })
      .trim()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .nullish()
      .meta({
        description:
          "Name or unique id of one of the account's projects: the entry applies to that project only. Absent: to every project.",
        example: 'B2B Sales',
      }),
    note: z.string({ message: 'must be a string' }).max(1000, 'must be at most 1000 characters').nullish().meta({
      description: 'Free text, for example why the number is listed.',
      example: 'Asked by phone on 6 May',
    }),
    expiresTime: dateTimeParam.nullish().meta({
      description:
        'When the entry stops applying (ISO 8601; without an offset platform local time); must lie in the future. Absent: never.',
      example: '2027-05-06T00:00:00',
    }),
  })
  .meta({ id: 'NewDoNotCallNumber' });

export const addDoNotCallBody = z
  .union([entryIn, z.array(entryIn).min(1, 'must hold at least one entry').max(1000, 'must hold at most 1000 entries')])
  .meta({
    description: 'One entry, or an array of up to 1000 entries.',
    example: { phoneNumber: '+45 20 30 40 50', project: 'B2B Sales', note: 'Asked by phone on 6 May', expiresTime: '2027-05-06T00:00:00' },
  });

export const doNotCallOut = z
  .object({
    phoneNumber: z.string().meta({ description: 'E.164.', example: '+4520304050' }),
    project: z
      .string()
      .optional()
      .meta({ description: 'The project the entry applies to; absent when it applies to every project.', example: 'B2B' }),
    projectUniqueId: z.string().optional().meta({ description: "The project's unique id (as GET /projects shows it)." }),
    note: z.string().optional(),
    expiresTime: dateTimeOut.optional(),
    createdTime: dateTimeOut,
    modifiedTime: dateTimeOut,
  })
  .meta({ id: 'DoNotCallNumber' });

const addedDoNotCallOut = doNotCallOut
  .extend({
    movedLeads: z.number().int().meta({ description: 'How many open leads with this number this listing moved to DoNotCall.', example: 2 }),
  })
  .meta({ id: 'AddedDoNotCallNumber' });

export const addDoNotCallResponse = z.union([addedDoNotCallOut, z.array(addedDoNotCallOut)]).meta({
  description: 'The stored entry (an array of them when an array was sent).',
});

export const doNotCallQuery = z.object({
  Project: listParam.optional().meta({
    description:
      "Project patterns (`*`, `?`, case-insensitive) or project unique ids: only the entries of those projects. Always limited by the account's project rights.",
  }),
  ModifiedFrom: dateTimeParam.optional().meta({ description: 'Entries added or changed at or after this time.' }),
});

export const doNotCallPath = z.object({
  PhoneNumber: z.string().trim().min(1).max(50).meta({
    description: 'The number in any usual notation; `+` percent-encoded as `%2B` (as clients encode a path value).',
    example: '+4520304050',
  }),
});

export const removeDoNotCallQuery = z.object({
  Project: z.string().trim().min(1).max(200).optional().meta({
    description: "Name or unique id of a project: remove that project's entry only. Absent: every entry of the number the account can see.",
  }),
});
