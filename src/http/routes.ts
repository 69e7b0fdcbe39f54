import { type Endpoint, serviceNamesOf } from './endpoint';
import { Metrics } from './metrics';
import type { Settings } from '../config/settings';
import type { AppServices } from './services';
import { apiIndexEndpoint } from './endpoints/apiIndex';
import { healthz, readyzEndpoint, metricsEndpoint } from './endpoints/health';
import { myAccountEndpoints } from './endpoints/myAccount';
import { calendarEventEndpoints } from './endpoints/calendarEvents';
import { docsEndpoints } from './endpoints/docs';
import { callEndpoints } from './endpoints/calls';
import { organizationEndpoints } from './endpoints/organization';
import { leadEndpoints } from './endpoints/leads';
import { bulkImportEndpoint } from './endpoints/leadsBulk';
import { simpleLeadsEndpoints } from './endpoints/simpleLeads';
import { rawLeadsEndpoints } from './endpoints/rawLeads';
import { hookEndpoints } from './endpoints/hooks';
import { problemTypeEndpoints } from './endpoints/problems';
import { doNotCallEndpoints } from './endpoints/doNotCall';
import { leadDefinitionEndpoints } from './endpoints/leadDefinitions';
import { eventEndpoints } from './endpoints/events';

/**
 * Every endpoint of the API, in document order. Each endpoint module exports its endpoint
 * descriptions; the app mounts them and the OpenAPI document is generated from this list.
 * Most handlers need only their request context; the few that read the process's own
 * resources (metrics, Redis health, the request counters) are handed them here.
 */
export function allEndpoints(
  metrics: Metrics,
  services: Pick<AppServices, 'settings' | 'counter' | 'redisHealthy' | 'reads' | 'events'>,
): Endpoint[] {
  const endpoints: Endpoint[] = [
    apiIndexEndpoint,
    healthz,
    readyzEndpoint(services.redisHealthy, () => services.reads.state),
    metricsEndpoint(metrics, services.settings.METRICS_REQUIRE_AUTH),
    // Lists the limits of every counted service, so it reads this list once it is built.
    ...myAccountEndpoints(() => endpoints, services),
    ...calendarEventEndpoints,
    // The OpenAPI document describes every endpoint, so it too reads the finished list.
    ...docsEndpoints(() => endpoints),
    ...problemTypeEndpoints,
    ...callEndpoints,
    ...organizationEndpoints,
    ...leadEndpoints(services.settings),
    bulkImportEndpoint(services.settings),
    ...simpleLeadsEndpoints,
    ...rawLeadsEndpoints,
    ...hookEndpoints(services.settings),
    ...eventEndpoints(services.events, services.settings),
    ...doNotCallEndpoints,
    ...leadDefinitionEndpoints,
  ];
  return endpoints;
}

/**
 * The name of every service of the API, sorted: what requests are counted and logged under
 * (`lcm requests --service` refuses a name that is none of them, as the request log's `Service`
 * does). Built from the endpoint list; the process's resources are stand-ins that fail when
 * touched, since describing an endpoint never uses them (only answering a request does).
 */
export function apiServiceNames(settings: Settings): string[] {
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('apiServiceNames: an endpoint used a resource of the process while it was described');
      },
    },
  ) as never;
  const endpoints = allEndpoints(new Metrics(false), { settings, counter: unused, reads: unused, events: unused });
  return serviceNamesOf(endpoints);
}
