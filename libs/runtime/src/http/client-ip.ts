import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
/** A parsed CIDR: network address and prefix length. */
export type TrustedProxyRange = [Address, number];
type Range = TrustedProxyRange;

/** Parsed trusted-proxy lists, cached by list identity (lists come from config, parsed once). */
const parsedLists = new WeakMap<readonly string[], Range[]>();

/**
 * The client's IP for rate limiting and allowlists.
 *
 * The socket peer is the client unless it is one of our trusted proxies (CIDRs or
 * bare addresses). Then X-Forwarded-For is walked from the right (each proxy
 * appends the address it received from) and the first untrusted address is the
 * client: entries further left were written by the client itself and can be forged.
 * An entry that is not an IP (e.g. `unknown`) stops the walk: the nearest trusted
 * hop is then the best address we can vouch for. IPv4-mapped IPv6 (`::ffff:a.b.c.d`)
 * is reported as IPv4, IPv6 in RFC 5952 form.
 *
 * Returns '' only when the socket has no peer address (it is already destroyed).
 */
export function clientIp(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const peer = parseAddress(req.socket.remoteAddress);
  if (peer === undefined) return '';
  const trusted = trustedRanges(trustedProxies);
  if (!isTrusted(peer, trusted)) return peer.toString();

  let nearest = peer;
  const hops = forwardedFor(req);
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = parseForwardedHop(hops[i] ?? '');
    if (hop === undefined) break;
    if (!isTrusted(hop, trusted)) return hop.toString();
    nearest = hop;
  }
  return nearest.toString();
}

/** Parses and validates a trusted-proxy list; throws on an invalid entry (fail at startup). */
export function parseTrustedProxies(entries: readonly string[]): TrustedProxyRange[] {
  return entries.map((entry) => {
    const text = entry.trim();
    const [host = '', prefix] = text.split('/', 2);
    // Strict forms only: ipaddr also accepts legacy ones (`10.0.0/8` = 10.0.0.0/8?),
    // and a config typo must fail at startup, not silently trust something else.
    if (!ipaddr.IPv4.isValidFourPartDecimal(host) && !ipaddr.IPv6.isValid(host)) {
      throw new Error(`Invalid trusted proxy address: '${entry}'`);
    }
    const [address, bits] = prefix === undefined ? singleAddress(ipaddr.parse(host)) : ipaddr.parseCIDR(text);
    // `::ffff:10.0.0.0/104` means the IPv4 range; peers are normalised to IPv4 too.
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [address, bits];
  });
}

function singleAddress(address: Address): TrustedProxyRange {
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}

function trustedRanges(entries: readonly string[]): Range[] {
  let ranges = parsedLists.get(entries);
  if (ranges === undefined) {
    ranges = parseTrustedProxies(entries);
    parsedLists.set(entries, ranges);
  }
  return ranges;
}

function isTrusted(address: Address, ranges: readonly Range[]): boolean {
  return ranges.some(([network, bits]) => network.kind() === address.kind() && address.match(network, bits));
}

function forwardedFor(req: IncomingMessage): string[] {
  const header = req.headers['x-forwarded-for'];
  if (header === undefined) return [];
  // node joins repeated X-Forwarded-For headers with ", ", in order; accept an array too.
  const joined = Array.isArray(header) ? header.join(',') : header;
  return joined === '' ? [] : joined.split(',').map((hop) => hop.trim());
}

/** Socket addresses: plain IPv4 / IPv6 (a zone id is allowed), mapped IPv6 unwrapped. */
function parseAddress(text: string | undefined): Address | undefined {
  if (text === undefined || !ipaddr.isValid(text)) return undefined;
  return ipaddr.process(text);
}

/**
 * X-Forwarded-For entries: strict dotted-quad IPv4 (ipaddr would also accept legacy
 * forms like `127.1`) or IPv6, optionally with a port (`1.2.3.4:80`, `[::1]:80`).
 */
function parseForwardedHop(text: string): Address | undefined {
  let host = text;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracketed?.[1] !== undefined) host = bracketed[1];
  else if (/^[\d.]+:\d+$/.test(host)) host = host.slice(0, host.lastIndexOf(':'));
  if (ipaddr.IPv4.isValidFourPartDecimal(host) || ipaddr.IPv6.isValid(host)) return ipaddr.process(host);
  return undefined;
}

/** Whether the socket peer is one of the trusted proxies. */
export function isTrustedPeer(req: IncomingMessage, trustedProxies: readonly string[]): boolean {
  const peer = parseAddress(req.socket.remoteAddress);
  return peer !== undefined && isTrusted(peer, trustedRanges(trustedProxies));
}

/**
 * The address a per-client limit counts under: an IPv4 address as it is, an
 * IPv6 client by its /64 (`2001:db8:1:2::/64`), since one subscriber or host
 * is usually given a whole /64 and could otherwise rotate through it to get a
 * fresh bucket per request. Anything that is not an address is its own bucket.
 */
export function limitAddress(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/64`);
  return `${network.toString()}/64`;
}
