import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { HookMessage, HookShape, renderHookRequest } from './hooks';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `webhook-id.webhook-timestamp.body` with the hook's secret, sent as `webhook-signature: v1,…`.
 * The `standardwebhooks` package signs here and verifies in receivers.
 */

/** A new hook secret: `whsec_` and 24 random bytes in base64, as the package reads it. */
export function newHookSecret(): string {
  return 'whsec_' + randomBytes(24).toString('base64');
}

interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The three headers of one attempt. `sentAt` is the wall clock, not an injected one: receivers
 * check the timestamp against their own clock.
 */
function signHookRequest(secret: string, messageId: string, sentAt: Date, body: string): SignedHeaders {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(messageId, sentAt, body),
  };
}

export interface SignedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** The whole request one delivery attempt sends: rendered, with its content type and signature. */
export function signedHookRequest(
  hook: HookShape & { secret: string },
  message: HookMessage,
  messageId: string,
  sentAt: Date,
  userAgent: string,
): SignedRequest {
  const rendered = renderHookRequest(hook, message);
  return {
    method: rendered.method,
    url: rendered.url,
    headers: {
      'content-type': rendered.contentType,
      'user-agent': userAgent,
      ...signHookRequest(hook.secret, messageId, sentAt, rendered.body),
    },
    body: rendered.body,
  };
}
