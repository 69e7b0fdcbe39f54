import express, { Express } from 'express';
import helmet from 'helmet';
import type { AppServices } from './services';
import { allEndpoints } from './routes';
import { mountEndpoints } from './mountEndpoints';
import { errorHandler } from './middleware/errorHandler';
import { requestLogging } from './middleware/requestLogging';
import { requireHttps } from './middleware/requireHttps';
import { createAuthenticator, loginProtectionFrom } from './middleware/authenticate';
import { CredentialCache } from './credentialCache';
import { Metrics } from './metrics';
import { collectPoolMetrics } from './metrics/poolMetrics';
import { collectReplicaMetrics } from './metrics/replicaMetrics';
import { collectRedisMetrics } from './metrics/redisMetrics';
import { collectHookQueueMetrics } from './metrics/hookQueueMetrics';
import { ExportAdmission } from './exportAdmission';
import { HttpProblem } from './problem';
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
  app.set('query parser', 'simple');
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
  const credentials = new CredentialCache(settings.AUTH_CACHE_TTL_MS);
  const endpoints = allEndpoints(metrics, services);

  app.use(requestLogging(logger));
  app.use(securityHeaders(settings.REQUIRE_HTTPS || settings.TLS_CERT_FILE !== undefined));
  if (settings.REQUIRE_HTTPS) app.use(requireHttps());

  const admission = new ExportAdmission(settings.EXPORT_MAX_CONCURRENT, settings.EXPORT_MAX_PER_ACCOUNT, (reason) =>
    metrics.overload.countRefused(reason),
  );
  metrics.overload.observeExports(() => admission.running);
  const api = mountEndpoints(endpoints, services, {
    authenticate: createAuthenticator(services.db, credentials, loginProtectionFrom(settings, services.loginFailures, metrics.logins)),
    metrics,
    admission,
  });
  app.use('/api', api);
  app.use((req, _res, next) => next(new HttpProblem('not_found', `no resource at ${req.method} ${req.path}`)));
  app.use(errorHandler(logger));
  return { express: app, credentials, metrics, endpoints };
}

/**
 * Security headers (helmet) on every response: a Content-Security-Policy that lets the HTML
 * pages and the docs page load only their own scripts, styles and fonts and never be framed,
 * `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and helmet's other defaults.
 * None changes how a client reads JSON or CSV. HSTS only where the server speaks HTTPS itself
 * or requires it (docs/decisions.md, Wire conventions).
 */
function securityHeaders(https: boolean): express.RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    strictTransportSecurity: https ? { maxAge: 15552000 } : false,
  });
}
