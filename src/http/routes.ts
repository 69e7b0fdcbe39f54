import type { Endpoint } from './endpoint';
import type { Metrics } from './metrics';
import { healthz, readyz, metricsEndpoint } from './endpoints/health';
import { myAccountEndpoints } from './endpoints/myAccount';
import { calendarEventEndpoints } from './endpoints/calendarEvents';
import { docsEndpoints } from './endpoints/docs';
import { callEndpoints } from './endpoints/calls';
import { organizationEndpoints } from './endpoints/organization';
import { leadEndpoints } from './endpoints/leads';
import { simpleLeadsEndpoints } from './endpoints/simpleLeads';
import { rawLeadsEndpoints } from './endpoints/rawLeads';
import { hookEndpoints } from './endpoints/hooks';

/**
 * Every endpoint of the API, in document order. Each router module exports its endpoint
 * descriptions; the app mounts them and the OpenAPI document is generated from this list.
 */
export function allEndpoints(metrics: Metrics): Endpoint[] {
  const endpoints: Endpoint[] = [
    healthz,
    readyz,
    metricsEndpoint(metrics),
    // Lists the limits of every counted service, so it reads this list once it is built.
    ...myAccountEndpoints(() => endpoints),
    ...calendarEventEndpoints,
    // The OpenAPI document describes every endpoint, so it too reads the finished list.
    ...docsEndpoints(() => endpoints),
    ...callEndpoints,
    ...organizationEndpoints,
    ...leadEndpoints,
    ...simpleLeadsEndpoints,
    ...rawLeadsEndpoints,
    ...hookEndpoints,
  ];
  return endpoints;
}
