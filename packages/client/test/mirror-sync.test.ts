/**
 * UpiRiskMirror.sync against the fake mirror service: a full sync, then
 * diffs, each leaving the mirror answering exactly as the published set
 * says, for every flagged VPA and a sample of unflagged ones.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskMirror, type UpiRiskMirrorOptions } from '../src/mirror.js';
import { BadRequestError, MirrorNotReadyError } from '../src/errors.js';
import type { FetchLike } from '../src/transport.js';
import { fakeClock, START_MS } from './fakes.js';
import { API_KEY, FakeMirrorService, expectedCheck, flagSome, randomMeta, seededRandom, someVpas, type FlaggedSet } from './mirror-fakes.js';

const VPAS = someVpas(6_000, 1);
/** Never flagged by any version: the sample of unflagged payees. */
const OTHERS = someVpas(3_000, 2).map((upi) => `other.${upi}`);

let service: FakeMirrorService;
let base: string;

before(async () => {
  service = new FakeMirrorService();
  base = await service.listen();
});

after(() => service.close());

function fresh(set: FlaggedSet = flagSome(VPAS, 0.3, 3)) {
  service.versions.length = 0;
  service.requests.length = 0;
  service.compression = null;
  service.compressedAnswers = 0;
  service.diffsKept = 3;
  service.scripted.clear();
  service.publish(set);
}

function mirrorOf(options: Partial<UpiRiskMirrorOptions> = {}) {
  const clock = fakeClock();
  const mirror = new UpiRiskMirror({ baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey, now: clock.now, sleep: clock.sleep, ...options });
  return { mirror, clock };
}

/** Every flagged VPA of the latest version, every VPA it dropped, and the unflagged sample, in the case they came in and upper-cased. */
function assertAgrees(mirror: UpiRiskMirror): void {
  const set = service.latest.set;
  const checked = [...VPAS, ...OTHERS.slice(0, 1_000)];
  for (const upi of checked) {
    assert.deepEqual(mirror.check(upi), expectedCheck(set, upi), upi);
  }
  for (const upi of set.keys()) assert.deepEqual(mirror.check(upi.toUpperCase()), expectedCheck(set, upi), upi);
}

/** The next version: some entries removed, some added, some with another category or band. */
function evolve(set: FlaggedSet, seed: number): FlaggedSet {
  const random = seededRandom(seed);
  const next: FlaggedSet = new Map();
  for (const [upi, meta] of set) {
    const roll = random();
    if (roll < 0.05) continue;
    next.set(upi, roll < 0.1 ? randomMeta(random) : meta);
  }
  for (const upi of VPAS) if (!set.has(upi.toLowerCase()) && random() < 0.05) next.set(upi.toLowerCase(), randomMeta(random));
  return next;
}

test('a full sync, then diffs: the mirror answers as each version says', async () => {
  fresh();
  const { mirror, clock } = mirrorOf();
  assert.equal(mirror.version, null);
  assert.equal(mirror.age, null);

  const first = await mirror.sync();
  assert.deepEqual(first, { version: 1, previousVersion: null, applied: 'full', count: service.latest.entries.count });
  assert.ok(first.count > 1_500);
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/full/1']);
  assertAgrees(mirror);

  for (let round = 2; round <= 4; round++) {
    service.publish(evolve(service.latest.set, round));
    service.requests.length = 0;
    const result = await mirror.sync();
    assert.deepEqual(result, { version: round, previousVersion: round - 1, applied: 'diff', count: service.latest.entries.count });
    assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', `/v1/mirror/diff/${round - 1}/${round}`]);
    assertAgrees(mirror);
  }
  assert.ok(service.requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`));
  assert.equal(mirror.version, 4);
  // Version 4 was made at START + 4 h.
  clock.advance(5 * 3_600_000 - (clock.now() - START_MS));
  assert.equal(mirror.age, 3_600);
});

test('the version held is current: the manifest alone is fetched', async () => {
  fresh();
  const { mirror } = mirrorOf();
  await mirror.sync();
  service.requests.length = 0;
  assert.deepEqual(await mirror.sync(), { version: 1, previousVersion: 1, applied: 'none', count: service.latest.entries.count });
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest']);
});

test('no diff from the version held: the full file', async () => {
  fresh();
  service.diffsKept = 1;
  const { mirror } = mirrorOf();
  await mirror.sync();
  service.publish(evolve(service.latest.set, 10));
  service.publish(evolve(service.latest.set, 11));
  service.requests.length = 0;
  assert.equal((await mirror.sync()).applied, 'full');
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/full/3']);
  assertAgrees(mirror);
});

test('a listed diff the service no longer keeps (404): the full file instead', async () => {
  fresh();
  const { mirror } = mirrorOf();
  await mirror.sync();
  service.publish(evolve(service.latest.set, 12));
  service.scripted.set('/v1/mirror/diff/', [{ status: 404, body: { error: 'not_found', message: 'version no longer kept' } }]);
  service.requests.length = 0;
  assert.equal((await mirror.sync()).applied, 'full');
  assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', '/v1/mirror/diff/1/2', '/v1/mirror/full/2']);
  assertAgrees(mirror);
});

for (const compression of ['gzip', 'br'] as const) {
  test(`files sent with Content-Encoding: ${compression} are checked once decompressed`, async () => {
    fresh();
    service.compression = compression;
    // The platform's fetch asks for what it decodes (Node 20's: gzip and deflate, and br when asked).
    const asking: FetchLike = (url, init) => fetch(url, { ...init, headers: { ...init.headers, 'accept-encoding': compression } });
    const { mirror } = mirrorOf({ fetch: asking });
    await mirror.sync();
    service.publish(evolve(service.latest.set, 13));
    assert.equal((await mirror.sync()).applied, 'diff');
    assertAgrees(mirror);
    assert.equal(service.compressedAnswers, 2);
  });
}

test('an empty set is a version like any other', async () => {
  fresh(new Map());
  const { mirror } = mirrorOf();
  assert.equal((await mirror.sync()).count, 0);
  assert.deepEqual(mirror.check(VPAS[0]!), { match: false });
  service.publish(flagSome(VPAS, 0.1, 14));
  assert.equal((await mirror.sync()).applied, 'diff');
  assertAgrees(mirror);
});

test('check: refused before any version is held, and for what is not a VPA', async () => {
  fresh();
  const { mirror } = mirrorOf();
  assert.throws(() => mirror.check(VPAS[0]!), MirrorNotReadyError);
  await mirror.sync();
  assert.throws(() => mirror.check(''), TypeError);
  assert.throws(() => mirror.check(42 as unknown as string), TypeError);
  for (const bad of ['no-at-sign', 'two@@ybl', 'a@1bank', 'a@b', 'späti@ybl', 'a b@ybl']) {
    assert.throws(() => mirror.check(bad), (e) => e instanceof BadRequestError && e.code === 'bad_request', bad);
  }
});

test('concurrent syncs run one after another', async () => {
  fresh();
  const { mirror } = mirrorOf();
  const [a, b] = await Promise.all([mirror.sync(), mirror.sync()]);
  assert.equal(a.applied, 'full');
  assert.equal(b.applied, 'none');
  assert.equal(service.requestsTo('/v1/mirror/full/').length, 1);
});

test('bad options are a TypeError or RangeError naming them, at construction', () => {
  const options = { baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey };
  assert.throws(() => new UpiRiskMirror({ ...options, publicKey: 'not-base64!' }), /publicKey/);
  assert.throws(() => new UpiRiskMirror({ ...options, publicKey: Buffer.alloc(31).toString('base64') }), TypeError);
  assert.throws(() => new UpiRiskMirror({ ...options, downloadTimeoutMs: 0 }), (e) => e instanceof RangeError && /downloadTimeoutMs/.test(e.message));
  assert.throws(() => new UpiRiskMirror({ ...options, syncDeadlineMs: -1 }), RangeError);
  assert.throws(() => new UpiRiskMirror({ ...options, directory: '' }), /directory/);
  assert.throws(() => new UpiRiskMirror({ ...options, baseUrl: 'nowhere' }), /baseUrl/);
});
