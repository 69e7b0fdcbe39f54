import { z } from 'zod';
import { EntryAccess, FIELD_TYPES } from '../../domain/enums';
import { uniqueIdParam } from './common';

/** Request and response schemas of the lead definition reads (docs/decisions.md, Lead definitions); they feed validation and the OpenAPI document. */

const leadDefinitionFieldOut = z
  .object({
    name: z.string().meta({ example: 'Phone' }),
    importName: z.string().nullable().meta({ description: 'The alternative name imports may use; null when none.', example: 'Telefon' }),
    type: z.enum(FIELD_TYPES).meta({ example: 'phone' }),
    required: z.boolean().meta({ example: true }),
    sortOrder: z.number().int().meta({ example: 1 }),
    editable: z.boolean().meta({ description: 'Whether PATCH /leads/{UniqueId} may change the field.', example: true }),
    access: z.enum(EntryAccess.names as [string, ...string[]]).meta({
      description: 'The entry access an account needs to see the field (None < Partner < Full).',
      example: 'None',
    }),
    externalKey: z.boolean().meta({ description: "The field's value is the lead's external key.", example: false }),
  })
  .meta({ id: 'LeadDefinitionField' });

export const leadDefinitionOut = z
  .object({
    uniqueId: z.string().meta({ example: '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40' }),
    name: z.string().meta({ example: 'Consumer leads' }),
    fields: z.array(leadDefinitionFieldOut).meta({ description: "In sort order; fields above the account's entry access are left out." }),
  })
  .meta({
    id: 'LeadDefinition',
    example: {
      uniqueId: '3f2b6a4e-0c1d-4e8a-9b7f-2d5c8e1a6b40',
      name: 'Consumer leads',
      fields: [
        { name: 'Name', importName: null, type: 'text', required: true, sortOrder: 0, editable: true, access: 'None', externalKey: false },
        {
          name: 'Phone',
          importName: 'Telefon',
          type: 'phone',
          required: true,
          sortOrder: 1,
          editable: true,
          access: 'None',
          externalKey: false,
        },
        {
          name: 'Customer',
          importName: null,
          type: 'text',
          required: false,
          sortOrder: 2,
          editable: false,
          access: 'None',
          externalKey: true,
        },
      ],
    },
  });

export const leadDefinitionPath = z.object({
  UniqueId: uniqueIdParam("The lead definition's unique id.", { example: 'demo-ld-b2b' }),
});
