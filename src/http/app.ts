import express, { Express } from 'express';
import type { AppServices } from './services';
import { allEndpoints } from './routes';
import { mountEndpoints } from './mountEndpoints';
import { errorHandler } from './middleware/errorHandler';
import { requestLogging } from './middleware/requestLogging';
import { requestCompatibility } from './middleware/requestCompatibility';
import { securityHeaderList, securityHeaders } from './securityHeaders';
import { healthProbe } from './healthProbe';
import { compressOneShotFrom } from './compression';
import { requireHttps } from './middleware/requireHttps';
import { createAuthenticator, loginProtectionFrom } from './middleware/authenticate';
import { CredentialCache } from './credentialCache';
import { Metrics } from './metrics';
import { collectPoolMetrics } from './metrics/poolMetrics';
import { collectReplicaMetrics } from './metrics/replicaMetrics';
import { collectRedisMetrics } from './metrics/redisMetrics';
import { collectHookQueueMetrics } from './metrics/hookQueueMetrics';
import { collectRequestLogMetrics } from './metrics/requestLogMetrics';
import { collectEventStreamMetrics } from './metrics/eventStreamMetrics';
import { ExportAdmission } from './exportAdmission';
import { HttpProblem } from './problem';
import { parseQueryString } from './queryString';
import { methodNotAllowed } from './methodNotAllowed';
import type { Endpoint } from './endpoint';

export interface App {
  express: Express;
  credentials: CredentialCache;
  metrics: Metrics;
  endpoints: Endpoint[];
}

/** Builds the Express app from its services; nothing here listens or opens connections. */
export function createApp(services: AppServices): App {
  const { settings, logger } = services;
  const app = express();
  app.disable('x-powered-by');
  // node:querystring, as Express's 'simple' parser, but Latin-1 escapes read as windows-1252.
  app.set('query parser', parseQueryString);
  // ETags are made deliberately, for conditional endpoints only (send() in mountEndpoints.ts).
  app.set('etag', false);
  if (settings.TRUST_PROXY !== undefined) {
    const t = settings.TRUST_PROXY;
    app.set('trust proxy', t === 'true' ? true : t === 'false' ? false : /^\d+$/.test(t) ? Number(t) : t);
  }

  const metrics = new Metrics();
  collectPoolMetrics(metrics.registry, services.db);
  collectRedisMetrics(metrics.registry, services.counter);
  collectReplicaMetrics(metrics.registry, services.reads);
  collectHookQueueMetrics(metrics.registry, services.db);
  if (services.requestLog) collectRequestLogMetrics(metrics.registry, services.requestLog);
  const credentials = new CredentialCache(settings.AUTH_CACHE_TTL_MS);
  const endpoints = allEndpoints(metrics, services);

  const https = settings.REQUIRE_HTTPS || settings.TLS_CERT_FILE !== undefined;
  // Probes first: answered before any other middleware, with the headers the chain would give.
  app.use(healthProbe(securityHeaderList(https), metrics.requests, settings.REQUIRE_HTTPS, compressOneShotFrom(settings)));
  app.use(requestLogging(logger));
  app.use(securityHeaders(https));
  if (settings.REQUIRE_HTTPS) app.use(requireHttps());
  app.use(requestCompatibility());

  const admission = new ExportAdmission(settings.EXPORT_MAX_CONCURRENT, settings.EXPORT_MAX_PER_ACCOUNT, (reason) =>
    metrics.overload.countRefused(reason),
  );
  metrics.overload.observeExports(() => admission.running);
  collectEventStreamMetrics(metrics.registry, () => services.events.open);
  const api = mountEndpoints(endpoints, services, {
    authenticate: createAuthenticator(services.db, credentials, loginProtectionFrom(settings, services.loginFailures, metrics.logins)),
    metrics,
    admission,
  });
  app.use('/api', api);
  // A known path with a method none of its endpoints takes: 405 with Allow; any other path: 404.
  app.use(methodNotAllowed(endpoints, '/api'));
  app.use((req, _res, next) => next(new HttpProblem('not_found', `no resource at ${req.method} ${req.path}`)));
  app.use(errorHandler(logger));
  return { express: app, credentials, metrics, endpoints };
}
