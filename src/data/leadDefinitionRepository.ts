import type { Knex } from 'knex';
import { EntryAccess, EntryAccessName, FieldType } from '../domain/enums';
import type { LeadDefinition } from '../domain/leadDefinition';
import type { ProjectScope } from './projectScope';

/**
 * Lead definitions as an account sees them (docs/decisions.md, Lead definitions): a definition
 * is visible when a campaign of the account's projects uses it, and only its fields within the
 * account's entry access are read (decided in SQL).
 */

interface DefinitionRow {
  unique_id: string;
  name: string;
  fields: {
    name: string;
    importName: string | null;
    type: FieldType;
    required: boolean;
    sortOrder: number;
    editable: boolean;
    access: number;
    externalKey: boolean;
  }[];
}

// Bindings: entry access level, the scope's patterns (when scoped), then the unique id (when by id).
const DEFINITIONS_SQL = (byId: boolean, scoped = true) => `
  select d.unique_id, d.name,
         coalesce((select json_agg(json_build_object('name', f.name, 'importName', f.import_name, 'type', f.type,
                     'required', f.required, 'sortOrder', f.sort_order, 'editable', f.editable, 'access', f.access,
                     'externalKey', f.external_key) order by f.sort_order, f.id)
                     from lead_definition_fields f where f.lead_definition_id = d.id and f.access <= ?), '[]') as fields
    from lead_definitions d
   where ${scoped ? 'exists (select 1 from campaigns c where c.lead_definition_id = d.id and lower(c.project) like any(?::text[]))' : 'true'}
     ${byId ? 'and d.unique_id = ?' : ''}
   order by d.name`;

const toDefinition = (r: DefinitionRow): LeadDefinition => ({
  uniqueId: r.unique_id,
  name: r.name,
  fields: r.fields.map((f) => ({ ...f, access: EntryAccess.toName(f.access) })),
});

/** The lead definitions the account can see, by name. */
export async function listVisibleLeadDefinitions(db: Knex, scope: ProjectScope, access: EntryAccessName): Promise<LeadDefinition[]> {
  const { rows } = await db.raw<{ rows: DefinitionRow[] }>(DEFINITIONS_SQL(false), [EntryAccess.toNumber(access), scope.likePatterns]);
  return rows.map(toDefinition);
}

/** One lead definition by unique id; undefined when unknown or used by no campaign of the account's projects. */
export async function findVisibleLeadDefinition(
  db: Knex,
  uniqueId: string,
  scope: ProjectScope,
  access: EntryAccessName,
): Promise<LeadDefinition | undefined> {
  const { rows } = await db.raw<{ rows: DefinitionRow[] }>(DEFINITIONS_SQL(true), [
    EntryAccess.toNumber(access),
    scope.likePatterns,
    uniqueId,
  ]);
  const row = rows[0];
  return row === undefined ? undefined : toDefinition(row);
}

/** The lead definition of a campaign the caller has already found visible, with the fields within `access`. */
export async function findLeadDefinition(db: Knex, uniqueId: string, access: EntryAccessName): Promise<LeadDefinition | undefined> {
  const { rows } = await db.raw<{ rows: DefinitionRow[] }>(DEFINITIONS_SQL(true, false), [EntryAccess.toNumber(access), uniqueId]);
  const row = rows[0];
  return row === undefined ? undefined : toDefinition(row);
}
