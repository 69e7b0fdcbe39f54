/** A reason the record cannot be loaded; the loader prefixes the line number. */
export class RecordError extends Error {}
