// pg's own conversion of a parameter to its text form; pg publishes no types for lib/utils.
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): unknown;
}
