import zlib from 'node:zlib';
import { promisify } from 'node:util';
import type { Transform } from 'node:stream';
import type { Request } from 'express';
import Negotiator from 'negotiator';
import type { Settings } from '../config/settings';

/**
 * Compression of response bodies on request (`Accept-Encoding`), negotiated by the client's
 * q-values with the `negotiator` library (the one Express itself uses): zstd, br and gzip are
 * offered, in that order when the client rates them alike; `identity` is always acceptable
 * (a client that refuses it still gets an uncompressed body rather than an error). The
 * work is node's zlib, on its thread pool, streamed: the compressor is flushed after the
 * first bytes and whenever the body pauses, so the time to first byte stays.
 *
 * Levels (docs/decisions.md, Streaming exports): zstd level 1, brotli quality 1 and gzip level 1
 * make the calls JSON export about 9 to 11 times smaller (docs/benchmarks.md); higher levels
 * would spend more of the server's CPU, an export's bottleneck, for a few percent of size.
 */

export type ContentCoding = 'zstd' | 'br' | 'gzip';

const OFFERED = ['zstd', 'br', 'gzip', 'identity'];

type EncodingsWithPreference = (available: readonly string[], options: { preferred: readonly string[] }) => string[];

/**
 * The coding to send a body in, or undefined for none. Among codings the client rates alike,
 * those it names come first (zstd, br, gzip), then gzip: `*` alone gets gzip, which every
 * client that sends it can read, not the newest coding.
 */
export function negotiateCoding(req: Request): ContentCoding | undefined {
  const header = req.headers['accept-encoding'];
  if (header === undefined || header.trim() === '') return undefined;
  const negotiator = new Negotiator(req);
  const encodings = negotiator.encodings.bind(negotiator) as unknown as EncodingsWithPreference;
  const named = NAMED_IN_HEADER.filter(([, pattern]) => pattern.test(header)).map(([coding]) => coding);
  const best = encodings(OFFERED, { preferred: [...named, ...UNNAMED_ORDER] })[0];
  return best === 'zstd' || best === 'br' || best === 'gzip' ? best : undefined;
}

/** The order of codings a client allows only through `*`. */
const UNNAMED_ORDER = ['gzip', 'br', 'zstd', 'identity'];

/** Each offered coding with the pattern that finds it named in an Accept-Encoding. */
const NAMED_IN_HEADER = OFFERED.map((coding) => [coding, new RegExp(`(?:^|[\\s,])${coding}\\s*(?:;|,|$)`, 'i')] as const);

/** Output chunk of the compressors: large enough for few socket writes. */
const CHUNK = 64 * 1024;

const BROTLI_QUALITY = 1;
const GZIP_LEVEL = 1;
const ZSTD_LEVEL = 1;
/**
 * A 128 KB window instead of level 1's 512 KB: on the calls JSON export zstd spends about a
 * seventh less CPU for 11.1 instead of 11.6 times fewer bytes (docs/benchmarks.md), and each
 * compressor holds less memory.
 */
const ZSTD_WINDOW_LOG = 17;
const ZSTD_PARAMS = { [zlib.constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL, [zlib.constants.ZSTD_c_windowLog]: ZSTD_WINDOW_LOG };

/** A streaming compressor for the coding. */
export function compressor(coding: ContentCoding): Transform {
  if (coding === 'zstd') {
    return zlib.createZstdCompress({ chunkSize: CHUNK, params: ZSTD_PARAMS });
  }
  if (coding === 'br') {
    return zlib.createBrotliCompress({
      chunkSize: CHUNK,
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
      },
    });
  }
  return zlib.createGzip({ level: GZIP_LEVEL, chunkSize: CHUNK });
}

/**
 * From how many bytes an answer rendered in one piece is compressed on request; undefined when
 * COMPRESSION is off (and such answers then do not vary by Accept-Encoding).
 */
export function compressOneShotFrom(settings: Pick<Settings, 'COMPRESSION' | 'COMPRESSION_MIN_BYTES'>): number | undefined {
  return settings.COMPRESSION ? settings.COMPRESSION_MIN_BYTES : undefined;
}

const zstdCompress = promisify(zlib.zstdCompress);
const brotliCompress = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** A body rendered in one piece, compressed whole on zlib's thread pool, at the levels of the streaming compressors. */
export function compressBody(body: Buffer, coding: ContentCoding): Promise<Buffer> {
  if (coding === 'zstd') return zstdCompress(body, { params: ZSTD_PARAMS });
  if (coding === 'br') {
    return brotliCompress(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
  }
  return gzip(body, { level: GZIP_LEVEL });
}

/** Emits what the compressor holds so far (a sync flush: the stream goes on). */
export function flushCompressor(stream: Transform, coding: ContentCoding): void {
  // Node's zstd decoder reads one frame: a flush must end a block, never the frame (ZSTD_e_end).
  if (coding === 'zstd') (stream as zlib.ZstdCompress).flush(zlib.constants.ZSTD_e_flush);
  else if (coding === 'br') (stream as zlib.BrotliCompress).flush(zlib.constants.BROTLI_OPERATION_FLUSH);
  else (stream as zlib.Gzip).flush(zlib.constants.Z_SYNC_FLUSH);
}
