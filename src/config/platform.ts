/**
 * The platform time zone, fixed once at start from PLATFORM_TIMEZONE. Request schemas are
 * static (they also feed the OpenAPI document), so offset-less DateTime parameters read the
 * zone from here rather than from a per-request context.
 */
let zone = 'Europe/Copenhagen';

export function configurePlatformZone(tz: string): void {
  zone = tz;
}

export function platformZone(): string {
  return zone;
}
