import { access, mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { generate } from 'selfsigned';
import uWS from 'uWebSockets.js';
import type { TemplatedApp } from 'uWebSockets.js';
import type { DataDir } from '../common/data-dir.js';
import { ConfigError } from '../common/errors.js';

/**
 * TLS 1.3 only (spec, Authentication 2). uWebSockets.js exposes no minimum
 * protocol version, but its TLS library negotiates TLS 1.3 with its own
 * fixed suites and uses `ssl_ciphers` only for TLS 1.2 and older. Limiting
 * that list to a pre-shared-key suite, which this server has no key for,
 * leaves older clients with no common cipher: their handshake fails, while
 * TLS 1.3 is unaffected. Tests prove both with real clients.
 */
export const TLS12_DISABLING_CIPHERS = 'PSK-AES128-CBC-SHA';

export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** A uWebSockets.js TLS app serving TLS 1.3 only. */
export function createTlsApp(files: TlsFiles): TemplatedApp {
  try {
    return uWS.SSLApp({ cert_file_name: files.certFile, key_file_name: files.keyFile, ssl_ciphers: TLS12_DISABLING_CIPHERS });
  } catch (error) {
    throw new ConfigError(`cannot start TLS with ${files.certFile} and ${files.keyFile}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Check that a certificate and key given by the operator exist, parse and
 * belong together; a clear error beats a failed start deep in uWS ("App
 * construction failed"), and comes before a possibly long snapshot build.
 */
export async function checkTlsFiles(files: TlsFiles): Promise<void> {
  let pem: Buffer;
  let keyPem: Buffer;
  try {
    pem = await readFile(files.certFile);
    keyPem = await readFile(files.keyFile);
  } catch (error) {
    throw new ConfigError(`cannot read TLS files: ${(error as Error).message}`, { cause: error });
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (error) {
    throw new ConfigError(`${files.certFile} is not a PEM certificate`, { cause: error });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    throw new ConfigError(`${files.keyFile} is not an unencrypted PEM private key`, { cause: error });
  }
  if (!certificate.checkPrivateKey(key)) throw new ConfigError(`${files.keyFile} is not the private key of the certificate in ${files.certFile}`);
}

/**
 * A self-signed certificate for localhost and 127.0.0.1 in `<data-dir>/tls/`,
 * generated on first use and reused afterwards, for development and demos.
 */
export async function ensureSelfSignedCertificate(dir: DataDir): Promise<TlsFiles> {
  const tlsDir = join(dir.root, 'tls');
  const files = { certFile: join(tlsDir, 'localhost-cert.pem'), keyFile: join(tlsDir, 'localhost-key.pem') };
  const exists = await access(files.certFile).then(
    () => access(files.keyFile).then(() => true, () => false),
    () => false,
  );
  if (exists) return files;
  await mkdir(tlsDir, { recursive: true, mode: 0o700 });
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    notBeforeDate: new Date(Date.now() - 60_000),
    notAfterDate: new Date(Date.now() + 825 * 24 * 3600 * 1000),
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  });
  await writeFile(files.keyFile, pems.private, { mode: 0o600 });
  await chmod(files.keyFile, 0o600);
  await writeFile(files.certFile, pems.cert, { mode: 0o644 });
  return files;
}
