import express, { Express } from 'express';
import type { AppServices } from './services';
import { allEndpoints } from './routes';
import { mountEndpoints } from './mountEndpoints';
import { errorHandler } from './middleware/errorHandler';
import { requestLogging } from './middleware/requestLogging';
import { requireHttps } from './middleware/requireHttps';
import { createAuthenticator } from './middleware/authenticate';
import { CredentialCache } from './credentialCache';
import { Metrics } from './metrics';
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
  if (settings.TRUST_PROXY !== undefined) {
    const t = settings.TRUST_PROXY;
    app.set('trust proxy', t === 'true' ? true : t === 'false' ? false : /^\d+$/.test(t) ? Number(t) : t);
  }

  const metrics = new Metrics();
  metrics.observe({ db: services.db, counter: services.counter });
  metrics.observeReads(services.reads);
  metrics.watchHookQueue(services.db);
  const credentials = new CredentialCache(settings.AUTH_CACHE_TTL_MS);
  const endpoints = allEndpoints(metrics, services);

  app.use(requestLogging(logger));
  if (settings.REQUIRE_HTTPS) app.use(requireHttps());

  const api = mountEndpoints(endpoints, services, {
    authenticate: createAuthenticator(services.db, credentials),
    metrics,
  });
  app.use('/api', api);
  app.use((req, _res, next) => next(new HttpProblem('not_found', `no resource at ${req.method} ${req.path}`)));
  app.use(errorHandler(logger));
  return { express: app, credentials, metrics, endpoints };
}
