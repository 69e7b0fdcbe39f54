import type { Endpoint } from './endpoint';
import type { Metrics } from './metrics';
import { healthz, readyz, metricsEndpoint } from './routers/health';
import { myAccountEndpoints } from './routers/myAccount';
import { calendarEventEndpoints } from './routers/calendarEvents';
import { docsEndpoints } from './routers/docs';
import { callEndpoints } from './routers/calls';
import { organizationEndpoints } from './routers/organization';
import { leadEndpoints } from './routers/leads';
import { simpleLeadsEndpoints } from './routers/simpleLeads';
import { rawLeadsEndpoints } from './routers/rawLeads';

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
  ];
  return endpoints;
}
