import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReadSource } from '../../data/readSource';

/**
 * The read replica: bulk reads that fell back to the primary (counted as the read source reports
 * them), and the replica's state and lag, read when scraped. Without a replica only the (empty)
 * fallback counter is there.
 */
export function collectReplicaMetrics(registry: Registry, reads: ReadSource): void {
  const fallbacks = new Counter({
    name: 'lcm_db_read_fallbacks_total',
    help: 'Bulk reads served by the primary although a read replica is configured, by reason (down: known down; error: it failed that read)',
    labelNames: ['reason'],
    registers: [registry],
  });
  if (reads.state === 'not-configured') return;
  for (const reason of ['down', 'error']) fallbacks.inc({ reason }, 0);
  reads.on('fallback', (reason) => fallbacks.inc({ reason }));
  new Gauge({
    name: 'lcm_db_replica_up',
    help: 'Whether bulk reads go to the read replica (1) or to the primary because it is down or too far behind (0)',
    registers: [registry],
    // Across the processes of a node: 0 as soon as one of them reads from the primary.
    aggregator: 'min',
    collect() {
      this.set(reads.state === 'up' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'lcm_db_replica_lag_seconds',
    help: 'Replay lag of the read replica at its last check',
    registers: [registry],
    aggregator: 'max',
    collect() {
      if (reads.lagMs !== undefined) this.set(reads.lagMs / 1000);
    },
  });
}
