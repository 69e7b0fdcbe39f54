import { Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './requestMetrics';
import { OverloadMetrics } from './overloadMetrics';
import { LoginMetrics } from './loginMetrics';

/**
 * Prometheus metrics of one app instance (a registry each, so test apps don't collide): the
 * numbers people alert on (docs/operations.md, "Metrics"). The collectors the request chain
 * counts into are here; those that read a shared resource when scraped (the database pool, the
 * read replica, Redis, the hook queue) are added by the composition (src/http/app.ts) with the
 * resource they read.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new RequestMetrics(this.registry);
  readonly overload = new OverloadMetrics(this.registry);
  readonly logins = new LoginMetrics(this.registry, this.overload);

  /** Where GET /api/metrics reads its text: this registry, or every process's figures (gatherFrom). */
  private gather: () => Promise<string> = () => this.registry.metrics();

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** In a worker of `lcm serve`: a scrape shows what `gather` collects from every process. */
  gatherFrom(gather: () => Promise<string>): void {
    this.gather = gather;
  }

  /** The scrape's text, in the Prometheus text format (the registry's content type). */
  text(): Promise<string> {
    return this.gather();
  }
}
