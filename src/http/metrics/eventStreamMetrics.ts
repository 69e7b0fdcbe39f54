import { Gauge, type Registry } from 'prom-client';

/** Live events: the Server-Sent Events streams open in this process, read when scraped. */
export function collectEventStreamMetrics(registry: Registry, open: () => number): void {
  new Gauge({
    name: 'lcm_event_streams_open',
    help: 'Server-Sent Events streams (GET /events) open in this process',
    registers: [registry],
    collect() {
      this.set(open());
    },
  });
}
