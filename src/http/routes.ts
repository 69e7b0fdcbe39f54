import type { Endpoint } from './endpoint';
import type { Metrics } from './metrics';
import { healthz, readyz, metricsEndpoint } from './routers/health';

/**
 * Every endpoint of the API, in document order. Each router module exports its endpoint
 * descriptions; the app mounts them and the OpenAPI document is generated from this list.
 */
export function allEndpoints(metrics: Metrics): Endpoint[] {
  return [healthz, readyz, metricsEndpoint(metrics)];
}
