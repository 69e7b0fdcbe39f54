/**
 * The lines of a byte stream, each as its bytes without the line end (`\n`, or `\r\n`), so a
 * reader can check their encoding before it decodes them: readline decodes as it splits and
 * turns bytes that are not UTF-8 into U+FFFD without a word. String chunks (an object-mode
 * stream of text) are taken as UTF-8. A last line without a line end is a line; nothing after
 * the last line end is not.
 */
export async function* byteLines(input: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
  let carry: Buffer | undefined;
  for await (const raw of input) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, end);
      yield withoutCarriageReturn(carry === undefined ? piece : Buffer.concat([carry, piece]));
      carry = undefined;
      start = end + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      // Copied: the stream may reuse its chunk's memory once this one is handed back.
      carry = carry === undefined ? Buffer.from(rest) : Buffer.concat([carry, rest]);
    }
  }
  if (carry !== undefined && carry.length > 0) yield withoutCarriageReturn(carry);
}

function withoutCarriageReturn(line: Buffer): Buffer {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line;
}
