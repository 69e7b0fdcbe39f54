export { createLcmClient, apiBaseUrl, basicAuthorization, FAIR_USE_POLICY, type LcmClientOptions } from './client';
export type { paths, components, operations } from './client';
export { liveEvents, EventStreamError, type LiveEvent, type LiveEventOptions } from './events';
export {
  pull,
  PullError,
  EXIT,
  exportColumns,
  type PullOptions,
  type PullDeps,
  type PullProgress,
  type PullSummary,
  type PullKind,
} from './pull/pull';
export { parseRateLimitField, periodsLeft, secondsUntilQuota, retryAfterSeconds, type PeriodLeft } from './pull/quota';
