/**
 * `npm start`: a working service on demo data in one command. On first run
 * it generates demo evidence and ingests it, creates a development API key
 * with every scope (kept in var/dev-api-key, git-ignored, mode 0600, so
 * later starts reuse it), prints ready-to-paste curl lines and the key to
 * sign in to the console with, and serves. Later runs serve the
 * same data directory.
 */
import { readFile, writeFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { dataDir } from '../src/common/data-dir.js';
import { writeDemoData } from '../src/demo/generator.js';
import { ingestFile, listEvidenceFiles } from '../src/evidence/store.js';
import { FileKeyBackend, keyFilePath } from '../src/access/key-file.js';
import { KeyAdmin } from '../src/access/key-admin.js';
import { FileAuditLog, auditLogPath } from '../src/access/audit-log.js';
import { KeyRegistry } from '../src/access/key-registry.js';
import { serveCommand } from '../src/cli/commands/serve.js';
import { ensureSelfSignedCertificate } from '../src/http/tls.js';
import { createMirrorKey, loadMirrorKey } from '../src/mirror/signing-key.js';
import { relative } from 'node:path';

const DEMO_VPAS = Number(process.env.UPI_RISK_DEMO_VPAS ?? 100_000);
const PORT = process.env.PORT ?? '8443';
const dir = dataDir();
const keyFile = join(dir.root, '..', 'dev-api-key');

if ((await listEvidenceFiles(dir)).length === 0) {
  const demo = join(dir.root, '..', 'demo-evidence.ndjson');
  await mkdir(dir.root, { recursive: true });
  process.stdout.write(`first start: generating demo evidence for ${DEMO_VPAS} VPAs...\n`);
  await writeDemoData({ vpas: DEMO_VPAS, seed: 42 }, demo);
  const result = await ingestFile(dir, demo);
  if (!result.accepted) throw new Error('demo evidence was refused');
  await rm(demo);
}

const key = await developmentKey();
// The demo serves the local mirror too: its signing key is made once, beside the data.
const mirrorKey = (await loadMirrorKey(dir.mirror)) ?? (await createMirrorKey(dir.mirror));
// serve generates it on first start; the examples point curl at it.
const CERT = relative(process.cwd(), (await ensureSelfSignedCertificate(dir)).certFile);
const flagged = await firstStoredVpa();
process.stdout.write(
  [
    '',
    `development API key (scopes screen, ingest, admin): ${key}`,
    `mirror public key (UpiRiskMirror's publicKey): ${mirrorKey.publicKey}`,
    `console: https://127.0.0.1:${PORT}/console/ (sign in with the key above; the certificate is self-signed)`,
    'try (once the server says it is listening):',
    `  curl -s --cacert ${CERT} -H "Authorization: Bearer ${key}" "https://127.0.0.1:${PORT}/v1/verify/upi?upi=${encodeURIComponent(flagged)}"`,
    `  curl -s --cacert ${CERT} -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" -d '{"upis":["${flagged}","someone@ybl"]}' https://127.0.0.1:${PORT}/v1/verify/upi/batch`,
    `(the certificate is self-signed for localhost and 127.0.0.1, generated once into ${CERT})`,
    '',
  ].join('\n'),
);
process.exitCode = await serveCommand.run(['--port', PORT]);

async function developmentKey(): Promise<string> {
  const backend = new FileKeyBackend(keyFilePath(dir));
  const registry = new KeyRegistry(backend);
  await registry.load();
  const existing = await readFile(keyFile, 'utf8').then((text) => text.trim(), () => '');
  // A key from before the console (no admin scope) is replaced by one that can sign in.
  if (existing !== '' && registry.verify(existing)?.scopes.includes('admin') === true) return existing;
  const { key } = await new KeyAdmin(backend, new FileAuditLog(auditLogPath(dir))).create({
    name: 'development (npm start)',
    plan: 'default',
    scopes: ['screen', 'ingest', 'admin'],
  });
  await writeFile(keyFile, `${key}\n`, { mode: 0o600 });
  return key;
}

/** A VPA that is in the served data, for the example: the first one of the first evidence file. */
async function firstStoredVpa(): Promise<string> {
  const [first] = await listEvidenceFiles(dir);
  const text = first === undefined ? '' : await readFile(join(dir.evidence, first), 'utf8');
  const line = text.slice(0, text.indexOf('\n'));
  return line === '' ? 'someone@ybl' : (JSON.parse(line) as { upi: string }).upi;
}
