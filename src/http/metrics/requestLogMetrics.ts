import { Counter, Gauge, type Registry } from 'prom-client';
import type { RequestLogWriter } from '../../data/requestLog';

/**
 * The request log's entries that were not written (by reason: overflow, the pending entries
 * were at REQUEST_LOG_MAX_PENDING; rejected, Postgres refused the batch), those waiting and
 * the memory they hold.
 */
export function collectRequestLogMetrics(registry: Registry, log: RequestLogWriter): void {
  const dropped = new Counter({
    name: 'lcm_request_log_dropped_total',
    help: 'Request log entries not written, by reason: overflow (REQUEST_LOG_MAX_PENDING entries were waiting) or rejected (Postgres refused the batch)',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of ['overflow', 'rejected']) dropped.inc({ reason }, 0);
  log.on('dropped', (reason, entries) => dropped.inc({ reason }, entries));
  new Gauge({
    name: 'lcm_request_log_pending',
    help: 'Request log entries waiting to be written',
    registers: [registry],
    collect() {
      this.set(log.size);
    },
  });
  new Gauge({
    name: 'lcm_request_log_pending_bytes',
    help: 'Bytes of the buffers holding the request log entries waiting to be written',
    registers: [registry],
    collect() {
      this.set(log.heldBytes);
    },
  });
}
