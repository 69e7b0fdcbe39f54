// JSONStream's own name (the @types package is published under lower case, which does not
// resolve on a case-sensitive file system). Only what src/streams uses.
declare module 'JSONStream' {
  export function parse(pattern: string): NodeJS.ReadWriteStream;
}
