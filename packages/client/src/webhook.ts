/**
 * Webhook signatures (docs/watchlists.md, Verifying a webhook). A delivery
 * carries `Upi-Risk-Signature: t=<unix seconds>,v1=<hex>`, where v1 is the
 * HMAC-SHA256, under the watchlist's secret, of `"<t>.<raw body>"`. Several
 * v1 entries may stand in one header (any that matches will do). Web Crypto
 * only, so it runs in browsers, Node 20 and edge runtimes alike.
 */
import { WebhookSignatureError } from './errors.js';
import type { WatchEvent } from './wire.js';

export const SIGNATURE_HEADER = 'Upi-Risk-Signature';
/** How far a delivery's `t` may be from now, by default: 5 minutes, either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type RawBody = string | Uint8Array | ArrayBuffer;

export interface VerifyWebhookOptions {
  readonly toleranceSeconds?: number;
  /** The clock, ms since the epoch (Date.now by default). */
  readonly now?: () => number;
}

const encoder = new TextEncoder();

/**
 * The event of a delivery whose signature is good and recent, or a
 * WebhookSignatureError saying why not. `rawBody` must be the bytes as
 * received: a body parsed and serialised again will not verify.
 */
export async function verifyWebhook(
  rawBody: RawBody,
  header: string | null | undefined,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WatchEvent> {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!(tolerance >= 0 && Number.isFinite(tolerance))) throw new RangeError(`toleranceSeconds must be a finite number >= 0, got ${tolerance}`);
  const { timestamp, signatures } = parseSignatureHeader(header);
  const key = await hmacKey(secret, 'verify');
  const signed = signedBytes(timestamp, rawBody);
  let matched = false;
  // Every candidate is checked (no early exit) so timing does not tell which one matched.
  for (const signature of signatures) {
    if (await webCrypto().verify('HMAC', key, signature, signed)) matched = true;
  }
  if (!matched) throw new WebhookSignatureError('no_matching_signature', 'no v1 signature matches the body under this secret');
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    throw new WebhookSignatureError(
      'timestamp_out_of_tolerance',
      `the signature's time ${timestamp} is ${nowSeconds - timestamp} s from now, beyond ${tolerance} s`,
    );
  }
  let event: unknown;
  try {
    event = JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder('utf-8', { fatal: true }).decode(rawBody));
  } catch (cause) {
    throw new WebhookSignatureError('malformed_body', `the signed body is not JSON: ${String(cause)}`);
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    throw new WebhookSignatureError('malformed_body', 'the signed body is not a JSON object');
  }
  return event as WatchEvent;
}

/**
 * The `Upi-Risk-Signature` value the service would send for `rawBody` at
 * `timestampSeconds`: for a receiver's own tests.
 */
export async function signWebhook(rawBody: RawBody, secret: string, timestampSeconds: number): Promise<string> {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError(`timestampSeconds must be a whole number of seconds >= 0, got ${timestampSeconds}`);
  }
  const mac = await webCrypto().sign('HMAC', await hmacKey(secret, 'sign'), signedBytes(timestampSeconds, rawBody));
  const hex = Array.from(new Uint8Array(mac), (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `t=${timestampSeconds},v1=${hex}`;
}

function parseSignatureHeader(header: string | null | undefined): { timestamp: number; signatures: Uint8Array<ArrayBuffer>[] } {
  if (typeof header !== 'string' || header.trim() === '') {
    throw new WebhookSignatureError('malformed_header', `no ${SIGNATURE_HEADER} header`);
  }
  let timestamp: number | null = null;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const entry of header.split(',')) {
    const separator = entry.indexOf('=');
    const name = entry.slice(0, separator).trim();
    const value = entry.slice(separator + 1).trim();
    if (separator < 0) throw new WebhookSignatureError('malformed_header', `${SIGNATURE_HEADER} entry without "=": ${entry.trim()}`);
    if (name === 't') {
      if (timestamp !== null || !/^\d{1,15}$/.test(value)) {
        throw new WebhookSignatureError('malformed_header', `${SIGNATURE_HEADER} needs one t=<unix seconds>`);
      }
      timestamp = Number(value);
    } else if (name === 'v1' && /^[0-9a-fA-F]{64}$/.test(value)) {
      signatures.push(hexBytes(value));
    }
    // Other schemes (a later v2) and malformed v1 values are not ours to check.
  }
  if (timestamp === null) throw new WebhookSignatureError('malformed_header', `${SIGNATURE_HEADER} has no t=<unix seconds>`);
  if (signatures.length === 0) throw new WebhookSignatureError('malformed_header', `${SIGNATURE_HEADER} has no v1=<64 hex digits>`);
  return { timestamp, signatures };
}

function webCrypto(): SubtleCrypto {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new Error('Web Crypto (globalThis.crypto.subtle) is needed to check webhook signatures');
  return subtle;
}

function hmacKey(secret: string, usage: 'sign' | 'verify'): Promise<CryptoKey> {
  if (typeof secret !== 'string' || secret === '') throw new TypeError('secret must be the watchlist secret, a non-empty string');
  return webCrypto().importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [usage]);
}

/** `"<t>."` followed by the body's bytes exactly as received. */
function signedBytes(timestamp: number, rawBody: RawBody): Uint8Array<ArrayBuffer> {
  const prefix = encoder.encode(`${timestamp}.`);
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody instanceof ArrayBuffer ? new Uint8Array(rawBody) : rawBody;
  const bytes = new Uint8Array(prefix.length + body.length);
  bytes.set(prefix, 0);
  bytes.set(body, prefix.length);
  return bytes;
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}
