import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';
import { assertSchema } from '../schema-check.js';
import { MirrorManifestSchema } from '../../src/api/private-lookup-schemas.js';
import {
  MIRROR_BANDS,
  MIRROR_HEADER_BYTES,
  MIRROR_RISK_CATEGORIES,
  applyMirrorDiff,
  decodeMirrorFile,
  findMirrorEntry,
  manifestSigningText,
  type MirrorEntries,
  type MirrorManifest,
} from '../../src/mirror/mirror-format.js';
import { vpaHashWords } from '../../src/vpa/vpa-hash.js';
import { confidenceBand } from '../../src/api/advice.js';

const UPIS = Array.from({ length: 150 }, (_, i) => `mirror.payee${i}@${['ybl', 'okaxis', 'paytm'][i % 3]}`);
const ADDED = 'added.later@ybl';

test('the mirror: a signed manifest, a full file and diffs that agree with the service, new evidence and retractions within a version, versions that go on across a restart', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, UPIS.map((upi, i) => evidence(upi, `https://fraud.example/${i % 11}`, { evidence_id: `m${i}`, risk_category: ['mule', 'scam', 'phishing'][i % 3] })));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  // Without a signing key, the mirror answers 503 and says how to make one.
  let server = await startServer(t.dir.root, { args: ['--threads', '2', '--mirror-seconds', '1'] });
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
  try {
    const refused = await get('/v1/mirror/manifest');
    assert.equal(refused.status, 503);
    assert.match(((await refused.json()) as { message: string }).message, /mirror-key create/);
  } finally {
    await server.stop();
  }

  const created = await runCli(['mirror-key', 'create', '--data-dir', t.dir.root]);
  assert.equal(created.code, 0, created.stderr);
  const publicKey = lastLine(created.stdout);
  assert.equal(lastLine((await runCli(['mirror-key', 'show', '--data-dir', t.dir.root])).stdout), publicKey);
  assert.equal((await runCli(['mirror-key', 'create', '--data-dir', t.dir.root])).code, 1, 'a second key is refused');
  const verifier = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey, 'base64').toString('base64url') }, format: 'jwk' });

  const manifestOf = async (): Promise<MirrorManifest> => {
    const r = await get('/v1/mirror/manifest');
    assert.equal(r.status, 200);
    const manifest = (await r.json()) as MirrorManifest;
    assertSchema(MirrorManifestSchema, manifest);
    assert.ok(verify(null, Buffer.from(manifestSigningText(manifest)), verifier, Buffer.from(manifest.signature, 'base64')), 'signed with the key made');
    return manifest;
  };
  const fileOf = async (url: string, encoding?: string): Promise<Uint8Array> => {
    const r = await get(url, encoding === undefined ? {} : { 'accept-encoding': encoding });
    assert.equal(r.status, 200, url);
    assert.equal(r.headers.get('content-type'), 'application/octet-stream');
    assert.equal(r.headers.get('cache-control'), 'private, max-age=31536000, immutable');
    return new Uint8Array(await r.arrayBuffer());
  };
  /** A diff named by a manifest, or null when a newer version has replaced it since (the client then reads the manifest again). */
  const diffOf = async (url: string): Promise<Uint8Array | null> => {
    const r = await get(url);
    if (r.status === 404) return null;
    assert.equal(r.status, 200, url);
    return new Uint8Array(await r.arrayBuffer());
  };
  const digest = (entries: MirrorEntries) => {
    const hash = createHash('sha256');
    const full = new DataView(new ArrayBuffer(entries.count * 9));
    for (let i = 0; i < entries.count; i++) {
      full.setUint32(i * 9, entries.hi[i]!);
      full.setUint32(i * 9 + 4, entries.lo[i]!);
      full.setUint8(i * 9 + 8, entries.meta[i]!);
    }
    return hash.update(new Uint8Array(full.buffer)).digest('hex');
  };
  /** The mirror's answer for a VPA, as a client's check gives it. */
  const check = (entries: MirrorEntries, upi: string) => {
    const words = vpaHashWords(upi, new Uint32Array(8));
    const at = findMirrorEntry(entries, words[0]!, words[1]!);
    return at < 0 ? null : { risk_category: MIRROR_RISK_CATEGORIES[entries.meta[at]! >> 4], band: MIRROR_BANDS[entries.meta[at]! & 15] };
  };
  const agrees = async (entries: MirrorEntries, upis: readonly string[]) => {
    for (const upi of upis) {
      const verdict = (await (await get(`/v1/verify/upi?upi=${upi}`)).json()) as { status: 'FLAGGED' | 'CLEARED'; risk_category: string; confidence: number | null };
      const found = check(entries, upi);
      if (verdict.status === 'CLEARED') assert.equal(found, null, `${upi} is CLEARED`);
      else assert.deepEqual(found, { risk_category: verdict.risk_category, band: confidenceBand('FLAGGED', verdict.confidence) }, upi);
    }
  };

  let held: MirrorEntries;
  server = await startServer(t.dir.root, { args: ['--threads', '2', '--mirror-seconds', '1'] });
  try {
    await until('the first mirror version', 30_000, async () => (await get('/v1/mirror/manifest')).status === 200);
    assert.deepEqual(await (await get('/v1/mirror/public-key')).json(), { public_key: publicKey });
    const first = await manifestOf();
    const full = await fileOf(first.full.url);
    assert.equal(full.length, first.full.bytes);
    assert.deepEqual(await fileOf(first.full.url, 'br'), full, 'Brotli');
    assert.deepEqual(await fileOf(first.full.url, 'gzip'), full, 'gzip');
    held = decodeMirrorFile(full).entries;
    assert.equal(held.count, first.count);
    assert.equal(createHash('sha256').update(full.subarray(MIRROR_HEADER_BYTES)).digest('hex'), first.sha256);
    await agrees(held, [...UPIS, 'never.seen@ybl', 'nobody.else@okaxis']);

    // New evidence and a retraction, then a version that holds both, reached by its diff.
    const path = join(t.root, 'later.ndjson');
    await writeFile(path, ndjson([evidence(ADDED, 'https://fraud.example/new', { evidence_id: 'later-1' })]));
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, path])).code, 0);
    const retracted = await runCli(['retract', '--data-dir', t.dir.root, '--reason', 'sent in error', 'm0']);
    assert.equal(retracted.code, 0, retracted.stderr);
    await until('a version without the retracted VPA and with the new one', 30_000, async () => {
      const manifest = await manifestOf();
      if (manifest.version === first.version) return false;
      const diff = manifest.diffs.find((d) => d.from === first.version);
      assert.ok(diff !== undefined, 'a diff from the version held');
      const bytes = await diffOf(diff.url);
      if (bytes === null) return false;
      const next = applyMirrorDiff(held, decodeMirrorFile(bytes));
      assert.equal(digest(next), manifest.sha256, 'the diff builds the set the manifest names');
      assert.equal(next.count, manifest.count);
      if (check(next, ADDED) === null || check(next, UPIS[0]!) !== null) return false;
      held = next;
      return true;
    });
    await agrees(held, [ADDED, ...UPIS.slice(0, 30)]);

    // A compaction: the versions after it are made from the new snapshot's entries, and name the same set.
    const snapshotOf = async () => (await get(`/v1/verify/upi?upi=${ADDED}`)).headers.get('x-data-version')!.split('+')[0]!;
    const compacted = await snapshotOf();
    const beforeCompaction = (await manifestOf()).version;
    server.child.kill('SIGUSR2');
    await until('the compacted snapshot served', 60_000, async () => (await snapshotOf()) !== compacted);
    await until('a version made after the compaction', 30_000, async () => {
      const manifest = await manifestOf();
      if (manifest.version === beforeCompaction) return false;
      const diff = manifest.diffs.find((d) => d.from === beforeCompaction);
      assert.ok(diff !== undefined, 'a diff from the version before the compaction');
      const bytes = await diffOf(diff.url);
      if (bytes === null) return false;
      const next = applyMirrorDiff(held, decodeMirrorFile(bytes));
      assert.equal(digest(next), manifest.sha256);
      assert.equal(digest(next), digest(held), 'a compaction changes no entry');
      return true;
    });

    // Old full files are not kept; malformed versions are refused.
    assert.equal((await get(first.full.url)).status, 404);
    for (const bad of ['/v1/mirror/full/0', '/v1/mirror/full/01', '/v1/mirror/full/x', '/v1/mirror/diff/1/a']) assert.equal((await get(bad)).status, 400, bad);
    const etag = (await get((await manifestOf()).full.url)).headers.get('etag')!;
    assert.equal((await get((await manifestOf()).full.url, { 'if-none-match': etag })).status, 304);
  } finally {
    await server.stop();
  }

  // A restart goes on numbering: a version number never names two sets.
  const before = held;
  server = await startServer(t.dir.root, { args: ['--threads', '1', '--mirror-seconds', '1'] });
  try {
    await until('a version after the restart', 30_000, async () => (await get('/v1/mirror/manifest')).status === 200);
    const after = await manifestOf();
    assert.ok(after.version > 2, `version ${after.version} follows those made before`);
    assert.deepEqual(after.diffs, [], 'none of the sets before is held: no diff from one is offered');
    const entries = decodeMirrorFile(await fileOf(after.full.url)).entries;
    assert.equal(digest(entries), digest(before), 'the same data makes the same set');
  } finally {
    await server.stop();
    await t.cleanup();
  }
});
