import { PassThrough, Transform, TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import iconv from 'iconv-lite';
import { INVALID_BYTE } from './utf8Text';

// iconv-lite's own name normalisation: lower case, letters and digits only.
function canonical(name: string): string {
  return name.toLowerCase().replace(/[^0-9a-z]/g, '');
}

// Binary-to-text codecs iconv-lite also knows; they are not character sets for a charset=.
const NOT_CHARSETS = new Set(['base64', 'base64url', 'hex']);

/** Whether `name` is a character encoding iconv-lite can write (utf-8, windows-1252, latin1, ...). */
export function isKnownEncoding(name: string): boolean {
  return name.length > 0 && !NOT_CHARSETS.has(canonical(name)) && iconv.encodingExists(name);
}

/** Whether iconv-lite writes `text` in `encoding` as bytes that read back as `text`. */
function roundTrips(text: string, encoding: string): boolean {
  return iconv.decode(iconv.encode(text, encoding), encoding) === text;
}

/**
 * Whether `text` survives being written in `encoding` (a known one) as encoderStream writes it:
 * no character becomes `?`. U+FFFD does not in an encoding that cannot write every character:
 * the stream writes it as `?` (iconv-lite alone would write it as a byte the charset leaves
 * undefined, which reads back as U+FFFD).
 */
export function canEncode(text: string, encoding: string): boolean {
  if (text.includes('\uFFFD') && !writesEveryCharacter(encoding)) return false;
  return roundTrips(text, encoding);
}

/** Characters only an encoding of all of Unicode can write. */
const EVERY_SCRIPT = 'Ø€中😀';

/** Whether `encoding` (a known one) writes every character: the UTFs, not the legacy character sets. */
function writesEveryCharacter(encoding: string): boolean {
  return roundTrips(EVERY_SCRIPT, encoding);
}

/**
 * Why `separator` cannot split a CSV in `encoding` (a known one), or undefined when it can
 * (docs/decisions.md, Streaming exports and Bulk import). One check for both directions, so the
 * exports and the bulk import refuse the same separators for the same reason:
 * - either way, one the encoding has no character for: an export would write it as `?`, and no
 *   byte of a body decodes to it (U+FFFD included, which a legacy charset does not have: the
 *   decoder writes its own mark for bytes it cannot read, so such a separator would never split,
 *   or split exactly on those bytes);
 * - writing, `?` in an encoding that writes `?` for the characters it lacks;
 * - reading, the decoder's own mark for bytes not valid in the encoding (src/streams/utf8Text.ts).
 */
export function csvSeparatorProblem(separator: string, encoding: string, direction: 'write' | 'read'): string | undefined {
  if (direction === 'read' && separator === INVALID_BYTE) return `cannot be read in ${encoding}: it is the mark for bytes not valid in it`;
  if (!canEncode(separator, encoding)) {
    return direction === 'write'
      ? 'cannot be written in the chosen Encoding'
      : `cannot be read in ${encoding}: ${encoding} has no such character`;
  }
  if (direction === 'write' && separator === '?' && !writesEveryCharacter(encoding)) {
    return 'cannot be `?` with this Encoding: it writes `?` for the characters it has no code for';
  }
  return undefined;
}

export function isUtf8(name: string): boolean {
  return canonical(name) === 'utf8';
}

/** Registered (IANA) names of the common encodings, by iconv-lite's normalised form of a name for them. */
const REGISTERED_NAMES: Record<string, string> = {
  utf8: 'utf-8',
  utf16: 'utf-16',
  utf16le: 'utf-16le',
  utf16be: 'utf-16be',
  utf7: 'utf-7',
  ucs2: 'utf-16le',
  ascii: 'us-ascii',
  usascii: 'us-ascii',
  latin1: 'iso-8859-1',
  latin2: 'iso-8859-2',
  latin9: 'iso-8859-15',
  binary: 'iso-8859-1',
  koi8r: 'koi8-r',
  koi8u: 'koi8-u',
  shiftjis: 'shift_jis',
  sjis: 'shift_jis',
  eucjp: 'euc-jp',
  euckr: 'euc-kr',
  mac: 'macintosh',
  macroman: 'macintosh',
};

/**
 * The name to put in a `charset=` for an encoding as a client spelt it: its registered (IANA)
 * name where it has a common one (`utf8` → `utf-8`, `1252` or `cp1252` → `windows-1252`,
 * `latin1` → `iso-8859-1`, `cp865` → `ibm865`), else the name as given. .NET and Java look
 * the charset up by its registered name and refuse `utf8` or `1252`.
 */
export function charsetName(encoding: string): string {
  const name = canonical(encoding);
  const windows = /^(?:windows|win|cp)?(125\d)$/.exec(name);
  if (windows) return `windows-${windows[1]}`;
  const iso = /^(?:iso)?8859(\d{1,2})$/.exec(name);
  if (iso) return `iso-8859-${iso[1]}`;
  const ibm = /^(?:cp|ibm)?(437|850|852|855|857|858|860|861|862|863|864|865|866|869)$/.exec(name);
  if (ibm) return `ibm${ibm[1]}`;
  return REGISTERED_NAMES[name] ?? encoding;
}

// Transcoding per row (a UTF-8 decode and an encode for every CSV line) cost about 2 µs a row;
// gathering what arrives in one turn of the event loop (a cursor batch) and transcoding it in
// one call removes nearly all of that, without holding bytes back.
const MAX_PENDING = 64 * 1024;

/**
 * Text in (strings, or Buffers holding UTF-8), bytes in `encoding` out. Characters the target
 * cannot represent become `?` (iconv-lite's default). So does U+FFFD, which iconv-lite would
 * write in a legacy character set as the byte its table leaves undefined there (0x9D in
 * windows-1252), making a file no reader of that charset can decode.
 */
class EncoderStream extends Transform {
  private readonly encoder: ReturnType<typeof iconv.getEncoder>;
  private readonly replacementAsQuestionMark: boolean;
  private readonly decoder = new StringDecoder('utf8');
  private text = '';
  private immediate: NodeJS.Immediate | undefined;
  private readonly onImmediate = (): void => {
    this.immediate = undefined;
    this.emitPending();
  };

  constructor(encoding: string) {
    super({ decodeStrings: false });
    this.encoder = iconv.getEncoder(encoding);
    this.replacementAsQuestionMark = !writesEveryCharacter(encoding);
  }

  override _transform(chunk: string | Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // A Buffer may end inside a UTF-8 sequence: the decoder keeps the partial character.
    this.text += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    if (this.text.length >= MAX_PENDING) this.emitPending();
    else this.immediate ??= setImmediate(this.onImmediate);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.text += this.decoder.end();
    this.emitPending();
    const tail = this.encoder.end();
    if (tail && tail.length > 0) this.push(tail);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
    this.text = '';
    callback(error);
  }

  private emitPending(): void {
    if (this.immediate !== undefined) {
      clearImmediate(this.immediate);
      this.immediate = undefined;
    }
    if (this.text.length === 0 || this.destroyed) return;
    const bytes = this.encoder.write(this.replacementAsQuestionMark ? this.text.replaceAll('\uFFFD', '?') : this.text);
    this.text = '';
    if (bytes.length > 0) this.push(bytes);
  }
}

/**
 * A Transform from text to `encoding` (which must satisfy isKnownEncoding). For UTF-8 it is a
 * plain pass-through that leaves strings and Buffers as they are (the coalescer encodes
 * strings once per chunk); a caller may as well leave it out of the pipeline.
 */
export function encoderStream(encoding: string): Transform {
  if (isUtf8(encoding)) return new PassThrough({ objectMode: true });
  if (!isKnownEncoding(encoding)) throw new RangeError(`unknown encoding ${JSON.stringify(encoding)}`);
  return new EncoderStream(encoding);
}
