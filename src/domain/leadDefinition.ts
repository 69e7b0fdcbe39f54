import type { EntryAccessName, FieldType } from './enums';

/** A lead definition as the API answers it: its fields in sort order, those above the account's entry access left out. */

interface LeadDefinitionField {
  name: string;
  importName: string | null;
  type: FieldType;
  required: boolean;
  sortOrder: number;
  editable: boolean;
  access: EntryAccessName;
  externalKey: boolean;
}

export interface LeadDefinition {
  uniqueId: string;
  name: string;
  fields: LeadDefinitionField[];
}
