import { z } from 'zod';
import { anyAccount, defineEndpoint, publicAccess } from '../endpoint';
import type { Metrics } from '../metrics';
import type { ReplicaState } from '../../data/readSource';

const healthBody = z.object({ status: z.enum(['ok', 'unavailable']) });
const readyBody = z.object({
  status: z.enum(['ok', 'unavailable']),
  database: z.enum(['up', 'down']),
  redis: z.enum(['up', 'down', 'not-configured']),
  replica: z.enum(['up', 'down', 'not-configured']).meta({
    description: 'The read replica (DATABASE_READ_URL) of bulk exports; while down they read the primary',
  }),
});

export const healthz = defineEndpoint({
  service: 'healthz',
  operationId: 'getHealth',
  method: 'get',
  path: '/healthz',
  summary: 'The process is up',
  tags: ['Operations'],
  access: publicAccess,
  counted: false,
  representations: ['json'],
  response: healthBody,
  handler() {
    return Promise.resolve({ body: { status: 'ok' } });
  },
});

/** `redisHealthy` is undefined when no Redis is configured. */
export const readyzEndpoint = (redisHealthy: (() => boolean) | undefined, replica: () => ReplicaState) =>
  defineEndpoint({
    service: 'readyz',
    operationId: 'getReadiness',
    method: 'get',
    path: '/readyz',
    summary: 'The database and Redis are reachable',
    description:
      'Answers 503 when the database is down. Redis down still answers 200 (requests are then counted in Postgres, shared by every node) but reports it; ' +
      'so does a read replica that is down (bulk exports then read the primary).',
    tags: ['Operations'],
    access: publicAccess,
    counted: false,
    representations: ['json'],
    response: readyBody,
    errorStatuses: [503],
    async handler({ db }) {
      let database: 'up' | 'down' = 'up';
      try {
        await db.raw('select 1');
      } catch {
        database = 'down';
      }
      const redis = redisHealthy === undefined ? 'not-configured' : redisHealthy() ? 'up' : 'down';
      const ok = database === 'up';
      return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'unavailable', database, redis, replica: replica() } };
    },
  });

/** With `requireAccount` (METRICS_REQUIRE_AUTH) a scrape needs the Basic credentials of an account. */
export function metricsEndpoint(metrics: Metrics, requireAccount = false) {
  return defineEndpoint({
    service: 'metrics',
    operationId: 'getMetrics',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    description: requireAccount
      ? 'Prometheus text format. This server requires the Basic credentials of an account (any account; not counted).'
      : 'Prometheus text format. Public on this server; METRICS_REQUIRE_AUTH=true makes it require an account.',
    tags: ['Operations'],
    access: requireAccount ? anyAccount : publicAccess,
    counted: false,
    ownMediaType: true,
    representations: ['json'],
    async handler({ sendText }) {
      return sendText(metrics.registry.contentType, await metrics.text());
    },
  });
}
