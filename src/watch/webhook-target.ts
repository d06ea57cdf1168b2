import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

/**
 * Where webhooks may go (docs/watchlists.md, Safe targets): https only, and
 * never to an address inside the operator's network or a cloud's metadata
 * service, checked when a watchlist is created and again at each delivery
 * (DNS can change). Hosts the operator allows (`serve --webhook-allow`) are
 * exempt, and may be plain http.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
// IPv4 written into IPv6 (NAT64, 6to4, Teredo, the old IPv4-compatible form) is refused whole:
// the IPv4 address inside may be a private one, and a receiver has no need of these forms.
for (const [net, prefix] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['2001::', 32],
  ['2002::', 16],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** Whether an address is one a webhook must never reach. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d) is judged as the IPv4 one.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return BLOCKED.check(mapped[1]!, 'ipv4');
  return BLOCKED.check(address, 'ipv6');
}

export class UnsafeTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeTargetError';
  }
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Check a webhook URL's form; throws UnsafeTargetError saying what is wrong. */
export function checkWebhookUrl(text: string, allowed: ReadonlySet<string>): URL {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) throw new UnsafeTargetError(`"webhook_url" is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UnsafeTargetError('"webhook_url" is not an absolute URL');
  }
  const host = hostOf(url);
  const isAllowed = allowed.has(host);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isAllowed)) throw new UnsafeTargetError('"webhook_url" must be https');
  if (url.username !== '' || url.password !== '') throw new UnsafeTargetError('"webhook_url" must not carry credentials');
  if (url.hash !== '') throw new UnsafeTargetError('"webhook_url" must not have a fragment');
  return url;
}

/** The host of a URL as the allow list names it: without the brackets of an IPv6 literal, lower case. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/**
 * The address to connect to for a webhook URL: every address the host
 * resolves to must be safe (one unsafe answer of several is enough to
 * refuse), and the connection goes to the first, the one checked.
 */
export async function resolveTarget(url: URL, allowed: ReadonlySet<string>): Promise<{ address: string; family: 4 | 6 }> {
  const host = hostOf(url);
  const literal = isIP(host);
  if (literal !== 0) {
    if (!allowed.has(host) && isBlockedAddress(host)) throw new UnsafeTargetError(`the webhook host ${host} is a private, loopback, link-local or reserved address`);
    return { address: host, family: literal as 4 | 6 };
  }
  let answers: { address: string; family: number }[];
  try {
    answers = await lookup(host, { all: true, verbatim: true });
  } catch (error) {
    throw new UnsafeTargetError(`the webhook host ${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (answers.length === 0) throw new UnsafeTargetError(`the webhook host ${host} does not resolve`);
  if (!allowed.has(host)) {
    const unsafe = answers.find((a) => isBlockedAddress(a.address));
    if (unsafe !== undefined) throw new UnsafeTargetError(`the webhook host ${host} resolves to ${unsafe.address}, a private, loopback, link-local or reserved address`);
  }
  return { address: answers[0]!.address, family: answers[0]!.family as 4 | 6 };
}
