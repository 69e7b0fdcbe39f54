/**
 * Unique ids as clients send them (docs/decisions.md, Wire conventions). The ids this platform
 * makes are UUIDs written in lower case; an id may also be any other text a loader file gave
 * (`demo-lead-001`), which is compared exactly. A UUID is one value in any letter case: .NET,
 * Java and Delphi clients write it in upper case, and Delphi's GUIDToString (and .NET's "B"
 * format) in braces. So a value of that shape is read in lower case without its braces; anything
 * else is left as it is.
 */
const UUID =
  /^(?:\{([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\}|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))$/i;

/**
 * The id as it is stored: a UUID (with or without braces, and white space around, as the query
 * and body ids are already read) in lower case, any other value unchanged.
 */
export function canonicalUniqueId(value: string): string {
  const m = UUID.exec(value.trim());
  if (m === null) return value;
  return (m[1] ?? m[2]!).toLowerCase();
}

/** Whether the value is a UUID in any letter case, with or without braces and white space around. */
export function isUuid(value: string): boolean {
  return UUID.test(value.trim());
}

/**
 * The nil UUID, which .NET writes for an empty `Guid` (the default of a property that is not
 * nullable): as a reference it stands for none, like an empty string.
 */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
