import type { Request } from 'express';
import { HttpProblem, invalidParameter } from './problem';

/** The `Idempotency-Key` request header of the writes that take one (docs/decisions.md, Leads). */
export const IDEMPOTENCY_KEY_HEADER = {
  name: 'Idempotency-Key',
  description: 'Up to 255 visible ASCII characters, unique per import; a retry with the same key returns the first answer.',
};

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's key, if any; a malformed one is a 400. */
export function idempotencyKey(req: Request): string | undefined {
  const key = req.get('Idempotency-Key');
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key))
    throw invalidParameter('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
  return key;
}

/** 409: the key was first used with another request. */
export function idempotencyKeyReused(): HttpProblem {
  return new HttpProblem(
    'conflict',
    'Idempotency-Key: this key was already used with a different request; use a new key for a new import',
    [{ parameter: 'Idempotency-Key', message: 'was already used with a different request' }],
  );
}
