import { Transform, TransformCallback } from 'node:stream';

/**
 * Object rows in, JSON array text out: `[` + rows joined by `,` + `]`, and `[]` for no rows.
 * The text leaves as strings (object-mode readable side) so the coalescer encodes once per
 * chunk instead of once per row.
 *
 * Not JSONStream.stringify: that is a classic `through` stream (no streams3 destroy or
 * backpressure semantics for pipeline) and emits pretty-printed separators; this is the same
 * one JSON.stringify per row in a proper Transform.
 */
export class JsonArrayStringifier extends Transform {
  private empty = true;

  constructor() {
    super({ writableObjectMode: true, readableObjectMode: true });
  }

  override _transform(row: unknown, _encoding: BufferEncoding, callback: TransformCallback): void {
    let json: string;
    try {
      json = JSON.stringify(row);
    } catch (err) {
      callback(err as Error);
      return;
    }
    if (this.empty) {
      this.empty = false;
      callback(null, '[' + json);
    } else {
      callback(null, ',' + json);
    }
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.empty ? '[]' : ']');
  }
}

export function jsonArray(): JsonArrayStringifier {
  return new JsonArrayStringifier();
}
