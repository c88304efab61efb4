import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Agent } from 'undici';

// SSRF guard: the URL itself (IP literals never reach the lookup), and every address a name resolves to at connect
// time (DNS rebinding). `allowPrivate` lifts both.

export class UnsafeTargetError extends Error {
  override name = 'UnsafeTargetError';
}

/** IPv6's global unicast block: outside it are the IPv4-compatible (::a.b.c.d), NAT64 and other special forms. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** Only globally routable unicast addresses (IPv4-mapped IPv6 as its IPv4; 6to4, Teredo refused). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address); // unmaps ::ffff:a.b.c.d
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6);
}

/** Why `raw` may not be a delivery target, or undefined when it may. */
export function targetUrlProblem(raw: string, allowPrivate: boolean): string | undefined {
  const url = URL.parse(raw);
  if (!url) return 'url must be an absolute URL';
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) return allowPrivate ? 'url must use http or https' : 'url must use https';
  if (url.username || url.password) return 'url must not contain credentials';
  if (url.hostname === '') return 'url must have a host';
  if (allowPrivate) return undefined;
  // WHATWG parsing has already normalised 2130706433, 0x7f000001 and 127.1 to 127.0.0.1
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (net.isIP(host) !== 0) {
    return isPublicAddress(host) ? undefined : 'url must point to a public address';
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost') || !name.includes('.')) {
    return 'url must point to a public host name';
  }
  return undefined;
}

/** The resolver the guarded lookup asks; dns.lookup in production, a fake in tests. */
export type Resolver = (hostname: string, callback: (err: Error | null, addresses: dns.LookupAddress[]) => void) => void;

const systemResolver: Resolver = (hostname, callback) =>
  dns.lookup(hostname, { all: true, verbatim: true }, (err, addresses) => callback(err, addresses ?? []));

/** A `net.connect` lookup refusing a name when ANY of its addresses is not public (not just picking one). */
export function guardedLookup(resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, (err, addresses) => {
      if (err) return callback(err as NodeJS.ErrnoException, '', 0);
      const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
      const wanted = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
      if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no usable address`), { code: 'ENOTFOUND' }), '', 0);
      const blocked = wanted.find((a) => !isPublicAddress(a.address));
      if (blocked) {
        return callback(Object.assign(new UnsafeTargetError(`${hostname} resolves to a non-public address (${blocked.address})`), { code: 'EUNSAFETARGET' }), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, wanted);
      return callback(null, wanted[0].address, wanted[0].family);
    });
  };
}

/** The dispatcher of every delivery (undici follows no redirects), loaded only by a process that delivers. */
export async function createDeliveryAgent(opts: { allowPrivate: boolean; resolve?: Resolver; timeoutMs: number }): Promise<Agent> {
  const { Agent } = await import('undici');
  return new Agent({
    connect: {
      timeout: opts.timeoutMs,
      ...(opts.allowPrivate ? {} : { lookup: guardedLookup(opts.resolve) }),
    },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    keepAliveTimeout: 4000,
    connections: 32,
  });
}
