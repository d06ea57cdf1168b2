/**
 * What the mirror trusts: a manifest whose Ed25519 signature verifies under
 * the public key it was given, and an entry set whose SHA-256 and size are
 * that manifest's. Web Crypto only, like webhook.ts. Also the translation
 * of mirror-format.ts's refusals into the client's errors.
 */
import { MirrorChecksumError, MirrorFileError, MirrorSignatureError } from './errors.js';
import {
  MIRROR_HEADER_BYTES,
  MirrorFormatError,
  manifestSigningText,
  parseManifest,
  type MirrorEntries,
  type MirrorManifest,
} from './mirror-format.js';

const ED25519_PUBLIC_KEY_BYTES = 32;
const ED25519_SIGNATURE_BYTES = 64;
const encoder = new TextEncoder();

/** The raw bytes of a public key given as base64, or a TypeError: a bad key is a bad option. */
export function publicKeyBytes(publicKey: unknown): Uint8Array<ArrayBuffer> {
  const bytes = typeof publicKey === 'string' ? base64Bytes(publicKey) : null;
  if (bytes === null || bytes.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new TypeError('publicKey must be the base64 of the 32 raw bytes of an Ed25519 public key (GET /v1/mirror/public-key)');
  }
  return bytes;
}

export function importPublicKey(bytes: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return webCrypto().importKey('raw', bytes, { name: 'Ed25519' }, false, ['verify']);
}

/** Throws MirrorSignatureError unless `manifest.signature` is `key`'s over manifestSigningText(manifest). */
export async function checkSignature(key: CryptoKey, manifest: MirrorManifest): Promise<void> {
  const signature = base64Bytes(manifest.signature);
  if (signature === null || signature.length !== ED25519_SIGNATURE_BYTES) {
    throw new MirrorSignatureError(`manifest version ${manifest.version}: its signature is not the base64 of 64 bytes`);
  }
  const signed = encoder.encode(manifestSigningText(manifest));
  if (!(await webCrypto().verify({ name: 'Ed25519' }, key, signature, signed))) {
    throw new MirrorSignatureError(`manifest version ${manifest.version}: its signature does not verify under the mirror's public key`);
  }
}

/**
 * Throws MirrorChecksumError unless `entries` is the set `manifest` names:
 * its size, and the SHA-256 of `fullFile` (the set written as a full file,
 * encodeMirrorFile) past its header, which are setDigestBytes's bytes.
 */
export async function checkEntrySet(manifest: MirrorManifest, entries: MirrorEntries, fullFile: Uint8Array): Promise<void> {
  if (entries.count !== manifest.count) {
    throw new MirrorChecksumError(`version ${manifest.version}: ${entries.count} entries, the manifest says ${manifest.count}`);
  }
  const digest = await webCrypto().digest('SHA-256', fullFile.subarray(MIRROR_HEADER_BYTES) as Uint8Array<ArrayBuffer>);
  const hex = Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
  if (hex !== manifest.sha256) {
    throw new MirrorChecksumError(`version ${manifest.version}: the entry set's SHA-256 is ${hex}, the manifest says ${manifest.sha256}`);
  }
}

/** parseManifest, its refusal as a MirrorFileError. */
export function readManifest(value: unknown): MirrorManifest {
  return asFileError(() => parseManifest(value));
}

/** `read()`, a MirrorFormatError of mirror-format.ts thrown as the client's MirrorFileError. */
export function asFileError<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof MirrorFormatError) throw new MirrorFileError(error.problem, error.message, { cause: error });
    throw error;
  }
}

/** Standard base64 (padding optional) as bytes, or null when it is not base64. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}

function webCrypto(): SubtleCrypto {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new Error('Web Crypto (globalThis.crypto.subtle) is needed to check the mirror');
  return subtle;
}
