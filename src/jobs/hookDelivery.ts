import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { LeadFieldRule } from '../domain/leadData';
import { matchesAny } from '../domain/projectPatterns';
import { EVENT_RESOURCE, HookEventName, HookMessage, TEST_EVENT } from '../domain/hooks';
import { EVENT_KINDS, eventKindOf } from '../domain/hookEventKinds';
import type { LeadSnapshot } from '../domain/hookMessages';
import { nextAttemptTime, retryDelayMs, RetryPolicy, shouldDisableHook } from '../domain/hookRetry';
import { signedHookRequest } from '../domain/hookSignature';
import {
  AttemptOutcome,
  Claim,
  ClaimRequest,
  claimDeliveryAttempts,
  DeliveredAttempt,
  DeliveryWork,
  disableHook,
  leadDefinitionFieldsById,
  recordAttempt,
  recordDeliveredAttempts,
} from '../data/hookDeliveryRepository';
import type { HookDeliveryJob } from '../data/jobQueue';
import type { HookSender, SendResult } from './hookSender';
import { StatementBatcher } from './statementBatcher';
import { BoundedWork } from '../streams/boundedWork';
import { version } from '../../package.json';

/**
 * One attempt of one hook delivery (the queue's `hook_deliver` task): claim it, check the hook
 * and its account may still receive the event, render the message with the API's serializers,
 * sign it, send it, and record the outcome with what follows (next attempt, failed, hook
 * disabled) in one transaction. Returning means the job is done; throwing lets the queue try
 * the job again later (the attempt was busy elsewhere, or the database failed us).
 *
 * The claims of the jobs running at once in a pool go to the database together, in one
 * statement, and so do their delivered outcomes (`DeliveryBatches`); a failed or skipped
 * attempt is recorded on its own.
 */
export interface DeliveryDeps {
  db: Knex;
  batches: DeliveryBatches;
  sender: HookSender;
  policy: RetryPolicy;
  /** Failed attempts in a row that pause a hook (HOOKS_BREAKER_FAILURES). */
  breakerFailures: number;
  timeoutMs: number;
  zone: string;
  /** Decisions and recorded times (injected in tests); signatures always use the wall clock. */
  clock: () => Date;
  random: () => number;
  logger: Logger;
  workerId: () => string | undefined;
  onOutcome?: (outcome: AttemptOutcome, durationMs: number | undefined) => void;
}

export class AttemptBusyError extends Error {}

/** How long a claimed attempt holds its delivery: beyond the send's deadline, so it never expires under a live attempt. */
const leaseMsOf = (timeoutMs: number) => timeoutMs + 15_000;

/**
 * The claims and the delivered outcomes of a pool's concurrent attempts, each sent as one
 * statement, and a bound on the other outcomes written at once: a pool holds a few of the
 * process's connections whatever its concurrency (one claim, one record of deliveries and
 * FAILURE_WRITERS other outcomes at a time), so a receiver that fails every request does not
 * take the connections the API needs.
 */
export interface DeliveryBatches {
  claim(request: ClaimRequest): Promise<Claim>;
  /** False when the attempt was not recorded: another attempt of the delivery was recorded first, or the delivery is gone. */
  recordDelivered(attempt: DeliveredAttempt): Promise<boolean>;
  /** Runs the writing of an attempt that was not delivered (a transaction of its own) in its turn. */
  recordOther<T>(write: () => Promise<T>): Promise<T>;
}

const FAILURE_WRITERS = 2;

/** An attempt held back because its hook or account has its fill in flight is tried again after 0.25–1 s. */
const busyDelayMs = (random: number) => 250 + 750 * random;

export function deliveryBatches(
  db: Knex,
  rules: { timeoutMs: number; maxInFlight: number; random?: () => number; clock?: () => Date },
): DeliveryBatches {
  const claimRules = {
    leaseMs: leaseMsOf(rules.timeoutMs),
    maxInFlight: rules.maxInFlight,
    busyDelayMs,
    ...(rules.random ? { random: rules.random } : {}),
    ...(rules.clock ? { clock: rules.clock } : {}),
  };
  const claims = new StatementBatcher<ClaimRequest, Claim>(
    (requests) => claimDeliveryAttempts(db, requests, claimRules),
    (r) => r.deliveryId,
  );
  const delivered = new StatementBatcher<DeliveredAttempt, boolean>(
    async (attempts) => {
      const recorded = await recordDeliveredAttempts(db, attempts);
      return attempts.map((a) => recorded.has(a.deliveryId));
    },
    (a) => a.deliveryId,
  );
  const others = new BoundedWork(FAILURE_WRITERS, Number.POSITIVE_INFINITY);
  return { claim: (r) => claims.add(r), recordDelivered: (a) => delivered.add(a), recordOther: (write) => others.run(write) };
}

const USER_AGENT = `lead-call-api-hooks/${version}`;

/** Why the hook may not receive this event now; undefined when it may. */
function skipReason(work: DeliveryWork): string | undefined {
  const { hook, account, event } = work;
  if (!hook.enabled) return `the hook is disabled${hook.disabledReason ? ` (${hook.disabledReason})` : ''}`;
  if (!account.enabled) return 'the hook’s account is disabled';
  if (event.type === TEST_EVENT) return undefined;
  const resource = EVENT_RESOURCE[event.type as HookEventName];
  if (resource !== undefined && !(account.rights[resource] ?? []).includes('Get')) return `the account lacks the Get right on ${resource}`;
  if (event.project !== null && !matchesAny(account.projectPatterns, event.project)) {
    return `project ${event.project} is outside the account’s project rights`;
  }
  return undefined;
}

/** The payload of the event's kind (src/domain/hookEventKinds.ts); an unknown kind cannot be rendered. */
async function buildMessage(deps: DeliveryDeps, work: DeliveryWork): Promise<HookMessage> {
  const { event, account } = work;
  const kind = eventKindOf(event.type);
  if (kind === undefined) throw new Error(`unknown event type ${JSON.stringify(event.type)}`);
  const builder = EVENT_KINDS[kind];
  let fields: LeadFieldRule[] | undefined;
  if (builder.subject === 'lead') {
    // A test delivery without a campaign carries the sample's fields itself.
    const snapshot = event.snapshot as LeadSnapshot & { sampleFields?: LeadFieldRule[] };
    fields = snapshot.sampleFields ?? work.leadFields ?? (await leadDefinitionFieldsById(deps.db, snapshot.campaign.leadDefinitionId));
  }
  return builder.payload(event.snapshot, {
    type: kind,
    occurredTime: event.occurredTime.getTime(),
    zone: deps.zone,
    dateTimeFormat: account.dateTimeFormat,
    entryAccess: account.entryAccess,
    ...(fields ? { fields } : {}),
    ...(event.previousStatus !== null ? { previousStatus: event.previousStatus } : {}),
  });
}

export async function runDeliveryAttempt(deps: DeliveryDeps, job: HookDeliveryJob): Promise<AttemptOutcome | 'done' | 'deferred'> {
  const claim = await deps.batches.claim({ deliveryId: job.deliveryId, attempt: job.attempt });
  if (claim.kind === 'done') return 'done';
  // Queued again for later by the claim itself (paused hook, or its fill in flight): this job is done.
  if (claim.kind === 'deferred') return 'deferred';
  if (claim.kind === 'busy')
    throw new AttemptBusyError(`delivery ${job.deliveryId}: attempt ${job.attempt} is being sent by another worker`);
  const work = claim.work;
  const now = deps.clock();
  const base = { deliveryId: work.delivery.id, hookId: work.hook.id, attempt: job.attempt, attemptTime: now, workerId: deps.workerId() };

  const reason = skipReason(work);
  if (reason !== undefined) {
    await deps.batches.recordOther(() => recordAttempt(deps.db, { ...base, outcome: 'skipped', error: reason, status: 'skipped' }));
    deps.onOutcome?.('skipped', undefined);
    return 'skipped';
  }

  let result: SendResult;
  try {
    const message = await buildMessage(deps, work);
    result = await deps.sender.send(signedHookRequest(work.hook, message, work.delivery.uniqueId, new Date(), USER_AGENT));
  } catch (err) {
    // A message that cannot be rendered would fail the same way every time.
    deps.logger.error({ err, deliveryId: work.delivery.id }, 'hook message could not be rendered');
    result = { outcome: 'refused', durationMs: 0, error: `the message could not be rendered: ${(err as Error).message}` };
  }

  const attempt = {
    ...base,
    ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}),
    durationMs: result.durationMs,
    ...(result.error !== undefined ? { error: result.error } : {}),
    ...(result.responseBody !== undefined ? { responseBody: result.responseBody } : {}),
  };
  if (result.outcome === 'delivered') {
    // The common case: one statement records it all, for this and the other attempts delivered meanwhile.
    if (!(await deps.batches.recordDelivered(attempt))) {
      deps.logger.warn(
        { deliveryId: work.delivery.id, attempt: job.attempt },
        'hook delivery attempt not recorded: another attempt of the delivery was recorded first, or the delivery was deleted',
      );
    }
  } else {
    const first = work.delivery.firstAttemptTime ?? now;
    // A refused address or URL is refused again on every retry: the delivery fails at once.
    const refused = result.outcome === 'refused';
    const next = refused ? undefined : nextAttemptTime(deps.policy, { failures: job.attempt, firstAttemptTime: first, now }, deps.random());
    // The hook's next retry time, for its circuit breaker: this delivery's next attempt, or one back-off step.
    const pauseUntil = next ?? new Date(now.getTime() + retryDelayMs(job.attempt, deps.policy, deps.random()));
    await deps.batches.recordOther(() =>
      deps.db.transaction(async (trx) => {
        const failingSince = await recordAttempt(
          trx,
          {
            ...attempt,
            outcome: result.outcome,
            status: next ? 'pending' : 'failed',
            ...(next ? { next: { time: next, delayMs: next.getTime() - now.getTime() } } : {}),
            breaker: { failures: deps.breakerFailures, pauseUntil },
            ...(refused ? { refused: result.error ?? 'refused' } : {}),
          },
          'failing',
        );
        if (failingSince !== undefined && shouldDisableHook(deps.policy, failingSince, now)) {
          const days = Math.round((deps.policy.disableAfterMs / 86_400_000) * 10) / 10;
          await disableHook(
            trx,
            work.hook.id,
            `every delivery attempt failed for ${days} days (since ${failingSince.toISOString()}); last: ${result.error ?? result.outcome}`,
            now,
          );
          deps.logger.warn({ hook: work.hook.uniqueId }, 'hook disabled after failing every attempt');
        }
      }),
    );
  }
  deps.onOutcome?.(result.outcome, result.durationMs);
  return result.outcome;
}
