/**
 * A man in the middle between the mirror and the service, and a service
 * that fails: every sync refused with its typed error, the state held kept
 * and check() answering exactly as before.
 */
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskMirror } from '../src/mirror.js';
import {
  MirrorChecksumError,
  MirrorError,
  MirrorFileError,
  MirrorReplayError,
  MirrorSignatureError,
  ResponseFormatError,
  ServiceUnavailableError,
  UnauthorizedError,
} from '../src/errors.js';
import { MIRROR_ENTRY_BYTES, MIRROR_HEADER_BYTES } from '../src/mirror-format.js';
import { fakeClock } from './fakes.js';
import { API_KEY, FakeMirrorService, ed25519Keys, flagSome, signManifest, someVpas } from './mirror-fakes.js';

const VPAS = someVpas(4_000, 21);
const SAMPLE = [...VPAS.slice(0, 1_500), ...someVpas(500, 22).map((upi) => `x${upi}`)];

let service: FakeMirrorService;
let base: string;
let mirror: UpiRiskMirror;
let clock: ReturnType<typeof fakeClock>;
/** check() of every sampled VPA at version 1, the state every refused sync must keep. */
let answersAtVersion1: unknown[];

before(async () => {
  service = new FakeMirrorService();
  base = await service.listen();
});

after(() => service.close());

beforeEach(async () => {
  service.versions.length = 0;
  service.tamper = null;
  service.manifestOverride = null;
  service.scripted.clear();
  service.diffsKept = 3;
  service.publish(flagSome(VPAS, 0.3, 23));
  clock = fakeClock();
  mirror = new UpiRiskMirror({ baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey, now: clock.now, sleep: clock.sleep });
  await mirror.sync();
  answersAtVersion1 = SAMPLE.map((upi) => mirror.check(upi));
  // Version 2: a tenth of version 1's entries dropped, as many others flagged.
  const next = new Map([...service.latest.set].filter((_, i) => i % 10 !== 0));
  for (const upi of VPAS.slice(-400)) next.set(upi.toLowerCase(), 0x10);
  service.publish(next);
  service.requests.length = 0;
});

/** The sync is refused with `expected`, and the mirror still holds and answers version 1. */
async function assertRefused(expected: (error: unknown) => boolean): Promise<void> {
  await assert.rejects(mirror.sync(), expected);
  assert.equal(mirror.version, 1);
  assert.deepEqual(SAMPLE.map((upi) => mirror.check(upi)), answersAtVersion1);
}

/** Whether a path is one of the mirror's files (a diff or a full file), not its manifest. */
const isMirrorFile = (path: string) => path.startsWith('/v1/mirror/diff/') || path.startsWith('/v1/mirror/full/');

/** The last byte of the first entry's prefix flipped: the entries stay in order, the set is another. */
const flipFirstEntry = (body: Uint8Array) => {
  const changed = Buffer.from(body);
  changed[MIRROR_HEADER_BYTES + 7]! ^= 0x01;
  return changed;
};

test('a diff damaged on the way is made up for by the full file, in the same sync', async () => {
  service.tamper = (path, body) => (path.startsWith('/v1/mirror/diff/') ? flipFirstEntry(body) : body);
  const result = await mirror.sync();
  assert.deepEqual([result.version, result.applied], [2, 'full']);
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/diff/1/2', '/v1/mirror/full/2']);
});

test('a byte flipped on the way in the diff and in the full file: MirrorChecksumError', async () => {
  service.tamper = (path, body) => (isMirrorFile(path) ? flipFirstEntry(body) : body);
  await assertRefused((e) => e instanceof MirrorChecksumError && e.code === 'mirror_checksum' && e instanceof MirrorError);
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/diff/1/2', '/v1/mirror/full/2']);
});

test('a category changed in the diff and in the full file: MirrorChecksumError', async () => {
  service.tamper = (path, body) => {
    if (!isMirrorFile(path)) return body;
    const changed = Buffer.from(body);
    // An entry's byte with another (known) band: the diff still reads.
    const at = MIRROR_HEADER_BYTES + 8;
    changed[at] = (changed[at]! & 0xf0) | ((changed[at]! & 15) === 0 ? 1 : 0);
    return changed;
  };
  await assertRefused((e) => e instanceof MirrorChecksumError);
});

test('the full file truncated: MirrorFileError, truncated', async () => {
  const fresh = new UpiRiskMirror({ baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey, now: clock.now, sleep: clock.sleep });
  service.tamper = (path, body) => (path.startsWith('/v1/mirror/full/') ? body.subarray(0, body.length - 5) : body);
  await assert.rejects(fresh.sync(), (e) => e instanceof MirrorFileError && e.code === 'mirror_format' && e.problem === 'truncated');
  assert.equal(fresh.version, null);

  // With a state held: the full file is fetched when no diff is listed.
  service.diffsKept = 0;
  await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'truncated');
});

test('two entries of the full file swapped: MirrorFileError, order', async () => {
  service.diffsKept = 0;
  service.tamper = (path, body) => {
    if (!path.startsWith('/v1/mirror/full/')) return body;
    const changed = Buffer.from(body);
    const first = MIRROR_HEADER_BYTES + 10 * MIRROR_ENTRY_BYTES;
    const second = first + MIRROR_ENTRY_BYTES;
    const entry = Buffer.from(changed.subarray(first, second));
    changed.copyWithin(first, second, second + MIRROR_ENTRY_BYTES);
    entry.copy(changed, second);
    return changed;
  };
  await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'order');
});

test('a diff and a full file whose magic is changed: MirrorFileError, format', async () => {
  service.tamper = (path, body) => {
    if (!isMirrorFile(path)) return body;
    const changed = Buffer.from(body);
    changed[0] = 0x58;
    return changed;
  };
  await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'format');
});

test('a stale manifest (an older version, genuinely signed) replayed: MirrorReplayError', async () => {
  await mirror.sync();
  assert.equal(mirror.version, 2);
  const answersAtVersion2 = SAMPLE.map((upi) => mirror.check(upi));
  const stale = service.manifest(1);
  service.manifestOverride = () => stale;
  service.requests.length = 0;
  await assert.rejects(mirror.sync(), (e) => e instanceof MirrorReplayError && e.code === 'mirror_replay' && e.heldVersion === 2 && e.offeredVersion === 1);
  assert.equal(mirror.version, 2);
  assert.deepEqual(SAMPLE.map((upi) => mirror.check(upi)), answersAtVersion2);
  // Nothing was downloaded for it.
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest']);
});

test('a manifest re-signed with another key: MirrorSignatureError, before any download', async () => {
  const intruder = ed25519Keys();
  service.manifestOverride = () => service.manifest(2, intruder.privateKey);
  await assertRefused((e) => e instanceof MirrorSignatureError && e.code === 'mirror_signature');
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest']);
});

test('a file that unpacks to far more than the manifest says: cut off at that size, MirrorFileError; the full file too', async () => {
  // 64 MiB of zeros, a few hundred kilobytes gzipped: read no further than the manifest's length.
  const bomb = Buffer.alloc(64 * 1024 * 1024);
  service.compression = 'gzip';
  service.tamper = (path, body) => (isMirrorFile(path) ? bomb : body);
  try {
    await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'format' && /larger than the \d+ bytes it may be/.test(e.message));
    assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/diff/1/2', '/v1/mirror/full/2']);
  } finally {
    service.compression = null;
  }
});

test('a manifest larger than any the service writes: refused before it is parsed', async () => {
  const genuine = service.manifest();
  service.manifestOverride = () => ({ ...genuine, padding: 'x'.repeat(2 * 1024 * 1024) }) as never;
  await assertRefused((e) => e instanceof ResponseFormatError && /larger than/.test(e.message));
});

test('a manifest changed after signing (its sha256): MirrorSignatureError', async () => {
  const genuine = service.manifest();
  service.manifestOverride = () => ({ ...genuine, sha256: '0'.repeat(64) });
  await assertRefused((e) => e instanceof MirrorSignatureError);
});

test('a manifest that is not one: MirrorFileError, format', async () => {
  service.manifestOverride = () => ({ version: 'two' }) as never;
  await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'format');
});

test('a manifest naming a file on another host: MirrorFileError, before any request there', async () => {
  const genuine = service.manifest();
  const unsigned = { ...genuine, full: { url: '@evil.example/v1/mirror/full/2', bytes: genuine.full.bytes }, diffs: [] };
  const { signature: _, ...fields } = unsigned;
  service.manifestOverride = () => ({ ...fields, signature: signManifest(fields, service.keys.privateKey) });
  await assertRefused((e) => e instanceof MirrorFileError && e.problem === 'format');
});

test('HTTP errors: the transport’s error after its retries, the state kept', async () => {
  const unavailable = { status: 503, body: { error: 'service_unavailable', message: 'down' } };
  service.scripted.set('/v1/mirror/diff/', [unavailable, unavailable, unavailable, unavailable]);
  await assertRefused((e) => e instanceof ServiceUnavailableError);
  assert.deepEqual(clock.delays, [1000, 2000, 4000]);

  service.scripted.set('/v1/mirror/manifest', [{ status: 401, body: { error: 'unauthorized', message: 'key revoked' } }]);
  await assertRefused((e) => e instanceof UnauthorizedError);

  // The next sync, unhindered, takes version 2.
  assert.equal((await mirror.sync()).applied, 'diff');
  assert.equal(mirror.version, 2);
});
