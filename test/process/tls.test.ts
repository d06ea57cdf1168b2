import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import { runCli, startServer, type RunningServer } from '../server-process.js';
import { createKey, edgeDataDir, eventually, type EdgeDataDir } from '../fixtures/edge-server.js';

// TLS 1.3 only (spec, Authentication 2), checked with real clients against a
// real server process serving its generated self-signed certificate.

let data: EdgeDataDir;
let server: RunningServer;
let key: string;
let port: number;
let certPem: Buffer;

before(async () => {
  data = await edgeDataDir();
  key = await createKey(data.dataDir);
  server = await startServer(data.dataDir, { tls: true });
  port = Number(new URL(server.base).port);
  certPem = await readFile(join(data.dataDir, 'tls', 'localhost-cert.pem'));
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit');
  await data.cleanup();
});

interface Handshake {
  readonly protocol: string | null;
  readonly subjectAltName: string | undefined;
}

/** A bare TLS handshake with the given client options; rejects when it fails. */
function handshake(to: number, options: tls.ConnectionOptions): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: to, ...options }, () => {
      const result = { protocol: socket.getProtocol(), subjectAltName: socket.getPeerCertificate().subjectaltname };
      socket.end();
      resolve(result);
    });
    socket.once('error', reject);
  });
}

/** GET over HTTPS, TLS 1.3 only on the client side too; resolves with the status, body and negotiated protocol. */
function httpsGet(to: number, path: string, ca: Buffer, apiKey: string): Promise<{ status: number; body: string; protocol: string | null }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port: to, path, ca, minVersion: 'TLSv1.3', agent: false, headers: { authorization: `Bearer ${apiKey}` } },
      (res) => {
        const protocol = (res.socket as tls.TLSSocket).getProtocol();
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, protocol }));
      },
    );
    req.once('error', reject);
  });
}

test('a self-signed certificate for localhost is generated into the data directory, its key with mode 0600', async () => {
  const keyStat = await stat(join(data.dataDir, 'tls', 'localhost-key.pem'));
  assert.equal(keyStat.mode & 0o777, 0o600);
  const certificate = new X509Certificate(certPem);
  assert.match(certificate.subjectAltName ?? '', /DNS:localhost/);
  assert.match(certificate.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
  assert.ok(Date.parse(certificate.validTo) > Date.now(), 'not expired');
  await eventually(() => /self-signed/.test(server.stderr()), 'a log line saying the certificate is self-signed');
});

test('a client limited to TLS 1.2 fails the handshake', async () => {
  await assert.rejects(handshake(port, { ca: certPem, maxVersion: 'TLSv1.2' }), (error: NodeJS.ErrnoException) => {
    assert.match(String(error.code), /^ERR_SSL_/);
    return true;
  });
});

test('a TLS 1.3 client completes the handshake and the certificate names 127.0.0.1', async () => {
  const result = await handshake(port, { ca: certPem, minVersion: 'TLSv1.3' });
  assert.equal(result.protocol, 'TLSv1.3');
  assert.match(result.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
});

test('an HTTPS request over TLS 1.3 with a valid key is answered 200', async () => {
  const r = await httpsGet(port, '/v1/verify/upi?upi=payee@ybl', certPem, key);
  assert.equal(r.protocol, 'TLSv1.3');
  assert.equal(r.status, 200, r.body);
  assert.equal((JSON.parse(r.body) as { status: string }).status, 'CLEARED');
});

test('plain HTTP to the TLS port gets no HTTP answer', async () => {
  const received = await new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A reset is as good as a close: either way no HTTP answer came.
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    // Guard only: a server that kept the connection open would never answer HTTP either.
    socket.setTimeout(5000, () => socket.destroy());
  });
  assert.doesNotMatch(received.toString('latin1'), /HTTP\/1\.[01] \d{3}/);
});

/** A certificate for 127.0.0.1 and its key, written under `dir`. */
async function writeCertificate(dir: string, name: string): Promise<{ cert: string; key: string; pem: string }> {
  const pems = await generate([{ name: 'commonName', value: name }], {
    keyType: 'rsa',
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate: new Date(Date.now() - 60_000),
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const cert = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  await writeFile(cert, pems.cert);
  await writeFile(keyFile, pems.private, { mode: 0o600 });
  return { cert, key: keyFile, pem: pems.cert };
}

// Each with its own server or none: side by side.
describe('certificates and options', { concurrency: true }, () => {
  test('--tls-cert and --tls-key serve the operator certificate over TLS 1.3 only', async () => {
    const own = await edgeDataDir();
    let custom: RunningServer | undefined;
    try {
      const files = await writeCertificate(own.root, 'operator');
      const ownKey = await createKey(own.dataDir);
      custom = await startServer(own.dataDir, { tls: true, args: ['--tls-cert', files.cert, '--tls-key', files.key] });
      const customPort = Number(new URL(custom.base).port);
      const r = await httpsGet(customPort, '/v1/verify/upi?upi=payee@ybl', Buffer.from(files.pem), ownKey);
      assert.equal(r.status, 200, r.body);
      assert.equal(r.protocol, 'TLSv1.3');
      await assert.rejects(handshake(customPort, { ca: files.pem, maxVersion: 'TLSv1.2' }));
      assert.equal(existsSync(join(own.dataDir, 'tls')), false, 'no self-signed certificate generated');
    } finally {
      if (custom !== undefined) assert.equal(await custom.stop(), 0);
      await own.cleanup();
    }
  });

  test('TLS options that cannot work are refused at start with a clear message', async () => {
    const own = await edgeDataDir();
    try {
      const files = await writeCertificate(own.root, 'operator');
      const other = await writeCertificate(own.root, 'other');
      const notPem = join(own.root, 'notes.txt');
      await writeFile(notPem, 'this is not a certificate\n');
      const serve = (...args: string[]) => runCli(['serve', '--data-dir', own.dataDir, '--port', '0', ...args]);

      const [certOnly, keyOnly, notCertificate, notKey, wrongKey, missing] = await Promise.all([
        serve('--tls-cert', files.cert),
        serve('--tls-key', files.key),
        serve('--tls-cert', notPem, '--tls-key', files.key),
        serve('--tls-cert', files.cert, '--tls-key', notPem),
        serve('--tls-cert', files.cert, '--tls-key', other.key),
        serve('--tls-cert', files.cert, '--tls-key', join(own.root, 'missing.pem')),
      ]);

      assert.equal(certOnly.code, 2, certOnly.stderr);
      assert.match(certOnly.stderr, /--tls-cert and --tls-key go together/);
      assert.equal(keyOnly.code, 2, keyOnly.stderr);

      assert.notEqual(notCertificate.code, 0);
      assert.match(notCertificate.stderr, /notes\.txt is not a PEM certificate/);
      assert.notEqual(notKey.code, 0);
      assert.match(notKey.stderr, /notes\.txt is not an unencrypted PEM private key/);
      assert.notEqual(wrongKey.code, 0);
      assert.match(wrongKey.stderr, /other-key\.pem is not the private key of the certificate/);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /cannot read TLS files.*missing\.pem/);
      for (const r of [certOnly, keyOnly, notCertificate, notKey, wrongKey, missing]) assert.doesNotMatch(r.stdout, /listening/);
    } finally {
      await own.cleanup();
    }
  });

  test('--plain-http serves HTTP and warns on stderr', async () => {
    const own = await edgeDataDir();
    const plain = await startServer(own.dataDir, { args: ['--threads', '1'] });
    try {
      assert.match(plain.base, /^http:/);
      const health = await fetch(`${plain.base}/healthz`);
      assert.equal(health.status, 200);
      await health.arrayBuffer();
      const warned = () =>
        plain
          .stderr()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { level: number; msg: string })
          .some((entry) => entry.level === 40 && /--plain-http/.test(entry.msg) && /unencrypted/.test(entry.msg));
      await eventually(warned, 'a warning about plain HTTP on stderr');
    } finally {
      assert.equal(await plain.stop(), 0);
      await own.cleanup();
    }
  });
});
