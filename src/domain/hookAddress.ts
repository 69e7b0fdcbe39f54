import ipaddr from 'ipaddr.js';

/**
 * Which addresses a hook may be delivered to (server-side request forgery): only public
 * unicast addresses, unless the host is allow-listed (HOOKS_ALLOWED_HOSTS). Loopback, private,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved and cloud metadata addresses
 * are refused. The check runs on the address the host name resolved to, and the connection is
 * made to that same address (src/jobs/hookSender.ts), so a name that resolves differently the
 * second time (DNS rebinding) cannot slip past it.
 */

/** Cloud metadata services (AWS/GCP/Azure/OpenStack, AWS ECS, Alibaba, AWS IPv6). */
const METADATA_ADDRESSES = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254']);

export interface AddressVerdict {
  allowed: boolean;
  /** `unicast` when allowed; otherwise what the address is (loopback, private, metadata, ...). */
  range: string;
}

export function classifyAddress(address: string): AddressVerdict {
  if (!ipaddr.isValid(address)) return { allowed: false, range: 'invalid' };
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (METADATA_ADDRESSES.has(parsed.toNormalizedString()) || METADATA_ADDRESSES.has(parsed.toString())) {
    return { allowed: false, range: 'metadata' };
  }
  const range = parsed.range();
  return { allowed: range === 'unicast', range };
}

/** Whether a URL host (name or literal address, without brackets) is on the allow-list. */
export function isAllowListed(host: string, allowedHosts: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  return allowedHosts.includes(h);
}

/** A literal IP host of a URL, without brackets; undefined for a host name. */
export function literalAddress(host: string): string | undefined {
  const h = host.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(h) ? h : undefined;
}

/**
 * The address a host is known to have without asking DNS: its literal address, or loopback for
 * `localhost` and names under it, which always resolve there (RFC 6761, section 6.3).
 */
export function knownAddress(host: string): string | undefined {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') ? '127.0.0.1' : literalAddress(host);
}

/**
 * Why a hook may not reach an address, naming the settings that let a server reach it (local
 * development and tests point hooks at a receiver on their own machine).
 */
export function refusedAddressMessage(host: string, address: string, range: string): string {
  const what = host === address ? address : `${host} (${address})`;
  const kind = RANGE_WORDS[range] ?? `${/^[aeiou]/i.test(range) ? 'an' : 'a'} ${range}`;
  return `${what} is ${kind} address, which hooks may not reach; a server allows it with HOOKS_ALLOWED_HOSTS=${host} (and HOOKS_ALLOW_HTTP=true for a plain-http URL)`;
}

/** ipaddr.js's range names as words, with their article, for messages (the others read as they are). */
const RANGE_WORDS: Record<string, string> = {
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique local',
  carrierGradeNat: 'a carrier-grade NAT',
  ipv4Mapped: 'an IPv4-mapped',
  rfc6145: 'an IPv4-translated',
  rfc6052: 'a NAT64',
  teredo: 'a Teredo',
  amt: 'an AMT',
  as112: 'an AS112',
  orchid2: 'an ORCHIDv2',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID',
};
