import express, { Express } from 'express';
import { randomUUID } from 'node:crypto';
import pinoHttp from 'pino-http';
import type { AppServices } from './services';
import { allEndpoints } from './routes';
import { mountEndpoints } from './mountEndpoints';
import { errorHandler } from './middleware/errorHandler';
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
  const credentials = new CredentialCache(settings.AUTH_CACHE_TTL_MS);
  const endpoints = allEndpoints(metrics);

  app.use(
    pinoHttp({
      logger,
      genReqId: (req, res) => {
        const incoming = req.headers['x-request-id'];
        const id = typeof incoming === 'string' && /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      customProps: (_req, res) => ({ service: (res as express.Response).locals?.service }),
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
      autoLogging: { ignore: (req) => req.url === '/api/healthz' || req.url === '/api/metrics' },
    }),
  );
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
