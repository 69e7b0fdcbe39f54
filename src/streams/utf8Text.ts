import { isUtf8 } from 'node:buffer';

/**
 * UTF-8 bytes to text in which each byte that is not part of a valid UTF-8 sequence becomes
 * INVALID_BYTE instead of U+FFFD: a lead row may hold a real U+FFFD (text that passed through a
 * broken system before), and only bytes the body could not spell are its error
 * (src/domain/bulkRows.ts). INVALID_BYTE is the noncharacter U+FDD0, reserved for a program's
 * own use and not for text interchange, and written in UTF-8 like any character, so it survives
 * a body decoded from another charset and split as UTF-8 bytes. Valid text, the usual case, is
 * decoded by Node in one call.
 */
export const INVALID_BYTE = '\uFDD0';

/**
 * Decoded text as an answer may show it: each INVALID_BYTE as U+FFFD, the character that stands
 * for what could not be read. The mark itself is the program's own and never reaches a client.
 */
export function shownText(text: string): string {
  return text.includes(INVALID_BYTE) ? text.replaceAll(INVALID_BYTE, '\uFFFD') : text;
}

/** Decodes `bytes` whole (a trailing partial sequence counts as invalid). */
export function utf8Text(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let text = '';
  let run = 0;
  let i = 0;
  while (i < bytes.length) {
    const length = sequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    text += bytes.toString('utf8', run, i) + INVALID_BYTE;
    i += 1;
    run = i;
  }
  return text + bytes.toString('utf8', run, i);
}

/** A decoder for chunks: a sequence split across two chunks is kept for the next. */
export class Utf8TextDecoder {
  private carry: Buffer | undefined;

  write(chunk: Buffer): string {
    const bytes = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    const complete = bytes.length - incompleteTail(bytes);
    this.carry = complete < bytes.length ? Buffer.from(bytes.subarray(complete)) : undefined;
    return utf8Text(bytes.subarray(0, complete));
  }

  end(): string {
    const rest = this.carry;
    this.carry = undefined;
    return rest ? utf8Text(rest) : '';
  }
}

/** The length of the valid UTF-8 sequence at `i`, or 0 when the byte there starts none. */
function sequenceLength(bytes: Buffer, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  let length: number;
  let min: number;
  let max = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) [length, min] = [2, 0x80];
  else if (b0 === 0xe0) [length, min] = [3, 0xa0];
  else if (b0 === 0xed) [length, min, max] = [3, 0x80, 0x9f];
  else if (b0 >= 0xe1 && b0 <= 0xef) [length, min] = [3, 0x80];
  else if (b0 === 0xf0) [length, min] = [4, 0x90];
  else if (b0 >= 0xf1 && b0 <= 0xf3) [length, min] = [4, 0x80];
  else if (b0 === 0xf4) [length, min, max] = [4, 0x80, 0x8f];
  else return 0;
  if (i + length > bytes.length) return 0;
  const b1 = bytes[i + 1]!;
  if (b1 < min || b1 > max) return 0;
  for (let k = 2; k < length; k++) {
    const b = bytes[i + k]!;
    if (b < 0x80 || b > 0xbf) return 0;
  }
  return length;
}

/** How many bytes at the end begin a sequence that the next chunk may complete. */
function incompleteTail(bytes: Buffer): number {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const b = bytes[bytes.length - back]!;
    if (b >= 0x80 && b <= 0xbf) continue;
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}
