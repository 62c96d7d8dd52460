import net from 'node:net';

/**
 * Whether an IP address is one an outbound request from a server must not reach: loopback,
 * private, link-local (cloud metadata), carrier-grade NAT, multicast, reserved and
 * documentation ranges, in IPv4 and IPv6 (including IPv4-mapped and NAT64 forms).
 */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return isPrivateV4(v4ToNumber(address));
  if (family === 6) return isPrivateV6(address);
  return true; // not an address at all: refuse
}

function v4ToNumber(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const V4_BLOCKS: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
const V4_RANGES = V4_BLOCKS.map(([base, bits]) => {
  const size = 2 ** (32 - bits);
  const start = v4ToNumber(base);
  return [start, start + size - 1] as const;
});

function isPrivateV4(n: number): boolean {
  return V4_RANGES.some(([start, end]) => n >= start && n <= end);
}

/** The eight 16-bit groups of an IPv6 address. */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase().split('%')[0]!;
  // A trailing dotted IPv4 part (::ffff:127.0.0.1) becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToNumber(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  const zeros = tail === undefined ? [] : new Array(8 - front.length - back.length).fill(0);
  return [...front, ...zeros, ...back];
}

function isPrivateV6(address: string): boolean {
  const g = v6Groups(address);
  if (g.length !== 8 || g.some((x) => Number.isNaN(x))) return true;
  const embeddedV4 = (g[6]! << 16 >>> 0) + g[7]!;
  if (g.slice(0, 7).every((x) => x === 0)) return true; // :: and ::1 (and ::x, deprecated IPv4-compatible)
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return isPrivateV4(embeddedV4); // ::ffff:a.b.c.d
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) return isPrivateV4(embeddedV4); // ::ffff:0:a.b.c.d (translated)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isPrivateV4(embeddedV4); // NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // local-use NAT64 64:ff9b:1::/48
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo 2001::/32 tunnels to an IPv4 address
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // unique local fc00::/7 (includes AWS fd00:ec2::254)
  if ((first & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((first & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return true; // discard-only 100::/64
  if (first === 0x2002) return isPrivateV4((g[1]! << 16 >>> 0) + g[2]!); // 6to4 wraps an IPv4 address
  return false;
}
