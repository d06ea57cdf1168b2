import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import { ErrorCode, UpiRiskError } from '../common/errors.js';

/**
 * The Ed25519 key that signs the mirror's manifests (docs/api.md, "The
 * mirror"): made once by `upi-risk mirror-key create`, kept as PKCS #8 PEM
 * readable by its owner alone. Callers hold its public key, as the base64
 * of its 32 raw bytes, and refuse any manifest it did not sign.
 */
export interface MirrorKey {
  readonly privateKey: KeyObject;
  /** Base64 of the public key's 32 bytes. */
  readonly publicKey: string;
}

export const MIRROR_KEY_FILE = 'signing-key.pem';

export function mirrorKeyPath(mirrorDir: string): string {
  return join(mirrorDir, MIRROR_KEY_FILE);
}

/** Make a new key in `mirrorDir`; refused when one is there, unless `replace` (callers holding the old public key then refuse every manifest). */
export async function createMirrorKey(mirrorDir: string, replace = false): Promise<MirrorKey> {
  const path = mirrorKeyPath(mirrorDir);
  if (!replace && (await stat(path).then(() => true, () => false))) {
    throw new UpiRiskError(ErrorCode.MIRROR_KEY, `${path} holds a mirror signing key already; --replace makes a new one, and every caller must then be given its public key`);
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  await mkdir(mirrorDir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' })), 0o600);
  return { privateKey, publicKey: publicKeyBase64(privateKey) };
}

/** The key in `mirrorDir`, or null when there is none; a file that is not an Ed25519 private key is refused. */
export async function loadMirrorKey(mirrorDir: string): Promise<MirrorKey | null> {
  const path = mirrorKeyPath(mirrorDir);
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new UpiRiskError(ErrorCode.MIRROR_KEY, `cannot read the mirror signing key ${path}: ${(error as Error).message}`, { cause: error });
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: text, format: 'pem' });
  } catch (error) {
    throw new UpiRiskError(ErrorCode.MIRROR_KEY, `${path} is not a PEM private key: ${(error as Error).message}`, { cause: error });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new UpiRiskError(ErrorCode.MIRROR_KEY, `${path} is a ${privateKey.asymmetricKeyType ?? 'symmetric'} key, not Ed25519: make one with upi-risk mirror-key create`);
  }
  return { privateKey, publicKey: publicKeyBase64(privateKey) };
}

/** Base64 of an Ed25519 key's 32 public bytes (the end of its SPKI DER form). */
function publicKeyBase64(privateKey: KeyObject): string {
  const der = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  return der.subarray(der.length - 32).toString('base64');
}

/** Base64 of the signature of `text` (UTF-8). */
export function signText(key: MirrorKey, text: string): string {
  return sign(null, Buffer.from(text, 'utf8'), key.privateKey).toString('base64');
}

/** Whether `text` is a public key as `mirror-key create` prints it: the base64 of 32 bytes. */
export function isPublicKeyText(text: string): boolean {
  return /^[A-Za-z0-9+/]{43}=$/.test(text) && Buffer.from(text, 'base64').length === 32;
}

/** Whether `signature` (base64) is the signature of `text` (UTF-8) under the public key given as the base64 of its 32 bytes. */
export function verifyText(publicKey: string, text: string, signature: string): boolean {
  const raw = Buffer.from(publicKey, 'base64');
  if (raw.length !== 32) return false;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  return verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(signature, 'base64'));
}
