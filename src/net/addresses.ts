import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses an outbound request from this server must not reach: every range of the IANA
 * IPv4 and IPv6 Special-Purpose Address Registries (loopback, private, link-local and cloud
 * metadata, carrier-grade NAT, documentation, benchmarking, protocol assignments, anycast services,
 * multicast, reserved), plus deprecated ranges (IPv6 site-local, IPv4-compatible IPv6).
 *
 * IPv6 is allowed only inside global unicast 2000::/3, minus its special ranges; outside it, only
 * the forms that carry an IPv4 address a host really connects to are looked into: IPv4-mapped
 * `::ffff:a.b.c.d` and the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), as well as 6to4
 * `2002:AABB:CCDD::/16` inside it, are judged by their embedded IPv4 address. Everything else
 * outside 2000::/3 is refused, including IPv4-compatible `::a.b.c.d`, local-use NAT64
 * `64:ff9b:1::/48` and the whole of `2001::/23` (Teredo, benchmarking, ORCHID, the anycast
 * services: none of them serves images or webhooks).
 *
 * Parsing is the URL standard's (Node's `URL`) and ipaddr.js's; membership is Node's `net.BlockList`. The input is an address as a
 * socket reports it or as the WHATWG URL parser normalises it (`0x7f.1` and `2130706433` are
 * `127.0.0.1` by then); anything that is not a plain IP address is refused.
 */

const V4_SPECIAL: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network" (RFC 791)
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // shared address space, carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254 (RFC 3927)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments, incl. DS-Lite, PCP and TURN anycast (RFC 6890)
  ['192.0.2.0', 24], // documentation TEST-NET-1 (RFC 5737)
  ['192.31.196.0', 24], // AS112-v4 (RFC 7535)
  ['192.52.193.0', 24], // AMT (RFC 7450)
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast (RFC 7526)
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // direct delegation AS112 service (RFC 7534)
  ['198.18.0.0', 15], // benchmarking (RFC 2544)
  ['198.51.100.0', 24], // documentation TEST-NET-2
  ['203.0.113.0', 24], // documentation TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved (RFC 1112), and the limited broadcast 255.255.255.255
];

/** Special ranges inside global unicast 2000::/3; 6to4 is handled apart (its embedded IPv4 decides). */
const V6_SPECIAL_GLOBAL: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, AMT 2001:3::/32, AS112 2001:4:112::/48, ORCHID(v2) 2001:10::/28 and 2001:20::/28, drone ID 2001:30::/28, PCP/TURN anycast
  ['2001:db8::', 32], // documentation (RFC 3849)
  ['2620:4f:8000::', 48], // direct delegation AS112 service (RFC 7534)
  ['3fff::', 20], // documentation (RFC 9637)
];

const v4Blocked = new net.BlockList();
for (const [prefix, bits] of V4_SPECIAL) v4Blocked.addSubnet(prefix, bits, 'ipv4');

const v6Global = new net.BlockList();
v6Global.addSubnet('2000::', 3, 'ipv6');
const v6Blocked = new net.BlockList();
for (const [prefix, bits] of V6_SPECIAL_GLOBAL) v6Blocked.addSubnet(prefix, bits, 'ipv6');

const MAPPED = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');

const v4FromBytes = (bytes: number[]) => bytes.join('.');

function isSpecialV4(address: string): boolean {
  return v4Blocked.check(address, 'ipv4');
}

/**
 * The address in the URL standard's canonical form: lower-case hex groups, no leading zeros, no
 * dotted tail, no zone (which names an interface, not an address). ipaddr.js alone would read the
 * dotted tail of `::8.8.8.8` (IPv4-compatible) as if it were `::ffff:8.8.8.8` (IPv4-mapped).
 */
function canonicalV6(address: string): ipaddr.IPv6 | null {
  try {
    const host = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname;
    return ipaddr.IPv6.parse(host.slice(1, -1));
  } catch {
    return null;
  }
}

function isSpecialV6(address: string): boolean {
  const parsed = canonicalV6(address);
  if (!parsed) return true;
  const bytes = parsed.toByteArray();
  if (parsed.match(MAPPED) || parsed.match(NAT64)) return isSpecialV4(v4FromBytes(bytes.slice(12, 16)));
  if (parsed.match(SIX_TO_FOUR)) return isSpecialV4(v4FromBytes(bytes.slice(2, 6)));
  const plain = parsed.toString();
  if (!v6Global.check(plain, 'ipv6')) return true;
  return v6Blocked.check(plain, 'ipv6');
}

/** True when `address` is an IP address that must not be reached, or is not an IP address at all. */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return isSpecialV4(address);
  if (family === 6) return isSpecialV6(address);
  return true;
}

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** True when a server bound to `host` can be reached from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (/^localhost\.?$/i.test(bare)) return true;
  const family = net.isIP(bare);
  return family !== 0 && loopback.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}
