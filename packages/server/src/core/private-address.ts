/**
 * Outbound protection for webhooks (protocol §9.3, §17.4): which hosts are loopback, private,
 * link-local, unspecified or metadata addresses. Host names are normalised by the WHATWG URL parser
 * first, so every IPv4 notation (127.1, 2130706433, 0x7f.1, 0177.0.0.1) arrives here as dotted
 * decimal and IPv6 arrives compressed in brackets.
 */

const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata', 'metadata.azure.internal', 'instance-data']);

function ipv4ToInt(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

const V4_BLOCKS: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

function privateV4(n: number): boolean {
  return V4_BLOCKS.some(([base, bits]) => {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return ((n & mask) >>> 0) === ((ipv4ToInt(base)! & mask) >>> 0);
  });
}

function parseIpv6(text: string): number[] | undefined {
  let s = text;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  const maybeV4 = s.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    const v4 = ipv4ToInt(maybeV4);
    if (v4 === undefined) return undefined;
    tail = [v4 >>> 16, v4 & 0xffff];
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (h: string) => (h === '' ? [] : h.split(':').map((g) => parseInt(g, 16)));
  const head = toGroups(halves[0]!);
  const rest = halves.length === 2 ? toGroups(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array<number>(Math.max(fill, 0)).fill(0), ...rest];
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g) || g < 0 || g > 0xffff)) return undefined;
  if (tail.length === 2) {
    groups[6] = tail[0]!;
    groups[7] = tail[1]!;
  }
  return groups;
}

function privateV6(g: number[]): boolean {
  const allZero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (allZero(0, 8)) return true; // ::
  if (allZero(0, 7) && g[7] === 1) return true; // ::1
  if ((g[0]! & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local (incl. fd00:ec2::254)
  if ((g[0]! & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g[0]! & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated, still routed privately)
  if ((g[0]! & 0xff00) === 0xff00) return true; // multicast
  const embedded = (hi: number, lo: number) => privateV4(((hi << 16) >>> 0) + lo);
  if (allZero(0, 5) && g[5] === 0xffff) return embedded(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (allZero(0, 4) && g[4] === 0xffff && g[5] === 0) return embedded(g[6]!, g[7]!); // ::ffff:0:a.b.c.d (IPv4-translated, SIIT)
  if (allZero(0, 6)) return embedded(g[6]!, g[7]!); // ::a.b.c.d (deprecated compatible form)
  if (g[0] === 0x64 && g[1] === 0xff9b && allZero(2, 6)) return embedded(g[6]!, g[7]!); // NAT64 well-known prefix
  // Local-use NAT64 (64:ff9b:1::/48) maps IPv4 addresses by a site's own rules, with the address at
  // a position that depends on the prefix the site chose: never a public destination, refused whole.
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true;
  // Teredo (2001:0::/32) tunnels to the client's IPv4 address, stored inverted in the last 32 bits,
  // through a relay the sender does not choose: refused whole, whatever address it carries.
  if (g[0] === 0x2001 && g[1] === 0) return true;
  if (g[0] === 0x2002) return embedded(g[1]!, g[2]!); // 6to4 carries an IPv4 address
  return false;
}

/** True when `host` (a URL hostname) names an address webhooks must not reach by default. */
export function isPrivateHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost') || METADATA_NAMES.has(h)) return true;
  if (h.startsWith('[') && h.endsWith(']')) {
    const groups = parseIpv6(h.slice(1, -1).split('%')[0]!);
    return groups === undefined ? true : privateV6(groups);
  }
  const v4 = ipv4ToInt(h);
  return v4 !== undefined && privateV4(v4);
}

/** For resolved addresses (delivery time): an IPv4 or IPv6 address without brackets. */
export function isPrivateAddress(address: string): boolean {
  return address.includes(':') ? isPrivateHost(`[${address}]`) : isPrivateHost(address);
}
