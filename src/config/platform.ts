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

let phoneRegion = 'DK';

/** The region a phone number without a country code is read in (DEFAULT_PHONE_REGION). */
export function configurePhoneRegion(region: string): void {
  phoneRegion = region;
}

export function defaultPhoneRegion(): string {
  return phoneRegion;
}
