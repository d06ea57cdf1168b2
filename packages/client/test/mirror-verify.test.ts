/**
 * UpiRiskMirror.verify: a payee the mirror does not hold is CLEARED with no
 * request; one it holds goes to GET /v1/verify/upi for the full verdict.
 * And the state's bucket index finds exactly what findMirrorEntry finds.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskMirror } from '../src/mirror.js';
import { MirrorState } from '../src/mirror-state.js';
import { BadRequestError } from '../src/errors.js';
import { comparePrefixes, emptyEntries, findMirrorEntry, type MirrorManifest } from '../src/mirror-format.js';
import { fakeClock } from './fakes.js';
import { API_KEY, FakeMirrorService, flagSome, seededRandom, someVpas } from './mirror-fakes.js';

const VPAS = someVpas(3_000, 31);

let service: FakeMirrorService;
let base: string;

before(async () => {
  service = new FakeMirrorService();
  base = await service.listen();
  service.publish(flagSome(VPAS, 0.2, 32));
});

after(() => service.close());

function mirrorOf() {
  const clock = fakeClock();
  return new UpiRiskMirror({ baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey, now: clock.now, sleep: clock.sleep });
}

test('a miss is CLEARED from the mirror, with no request', async () => {
  const mirror = mirrorOf();
  await mirror.sync();
  service.requests.length = 0;
  const unflagged = VPAS.filter((upi) => !service.latest.set.has(upi.toLowerCase())).slice(0, 200);
  for (const upi of unflagged) {
    const result = await mirror.verify(upi);
    assert.deepEqual(result, {
      verdict: {
        upi,
        status: 'CLEARED',
        confidence: null,
        risk_category: null,
        cluster_id: null,
        cluster_size: 0,
        first_seen: null,
        last_seen: null,
        sources: [],
        evidence_count: 0,
      },
      requestId: null,
      dataVersion: null,
      dataAsOf: null,
      answeredBy: 'mirror',
      mirrorVersion: 1,
    });
  }
  assert.deepEqual(service.requests, []);
});

test('a hit is sent to GET /v1/verify/upi for the full verdict', async () => {
  const mirror = mirrorOf();
  await mirror.sync();
  service.requests.length = 0;
  const hits = [...service.latest.set.keys()].slice(0, 20);
  for (const upi of hits) {
    const result = await mirror.verify(upi);
    assert.equal(result.answeredBy, 'service');
    assert.equal(result.mirrorVersion, 1);
    assert.equal(result.verdict.status, 'FLAGGED');
    assert.equal(result.verdict.upi, upi);
    assert.equal(result.dataVersion, 'snap-test');
    assert.equal(result.requestId, 'fake-200');
  }
  assert.deepEqual(
    service.requests.map((r) => r.url),
    hits.map((upi) => `/v1/verify/upi?upi=${encodeURIComponent(upi)}`),
  );
});

test('a hit the service has cleared since: the service’s CLEARED verdict', async () => {
  const mirror = mirrorOf();
  await mirror.sync();
  const [upi] = service.latest.set.keys();
  service.latest.set.delete(upi!);
  try {
    const result = await mirror.verify(upi!);
    assert.equal(result.verdict.status, 'CLEARED');
    assert.equal(result.answeredBy, 'service');
  } finally {
    service.latest.set.set(upi!, 0);
  }
});

test('no version held: the service answers every call', async () => {
  const mirror = mirrorOf();
  service.requests.length = 0;
  const upi = VPAS.find((u) => !service.latest.set.has(u.toLowerCase()))!;
  const result = await mirror.verify(upi);
  assert.deepEqual([result.answeredBy, result.mirrorVersion, result.verdict.status], ['service', null, 'CLEARED']);
  assert.deepEqual(service.requests.map((r) => r.url), [`/v1/verify/upi?upi=${encodeURIComponent(upi)}`]);
});

test('a VPA outside the grammar is refused with no request', async () => {
  const mirror = mirrorOf();
  await mirror.sync();
  service.requests.length = 0;
  await assert.rejects(mirror.verify('not a vpa'), BadRequestError);
  await assert.rejects(mirror.verify(''), TypeError);
  assert.deepEqual(service.requests, []);
});

test('the filter and the bucket index find what findMirrorEntry finds', () => {
  const random = seededRandom(33);
  const manifest = { version: 1, created_at: '2027-01-15T08:00:00.000Z' } as MirrorManifest;
  for (const count of [0, 1, 7, 8, 100, 5_000, 40_000]) {
    const rows = Array.from({ length: count }, (_, i) => {
      // Edge words among random ones: the first and last buckets, and runs of entries sharing a first word.
      const hi = i === 0 ? 0 : i === 1 ? 0xffffffff : i % 4 === 3 ? 0x80000000 + (i % 3) : Math.floor(random() * 2 ** 32);
      return { hi, lo: Math.floor(random() * 2 ** 32) };
    });
    rows.sort((a, b) => comparePrefixes(a.hi, a.lo, b.hi, b.lo));
    const entries = emptyEntries(count);
    rows.forEach((row, i) => {
      entries.hi[i] = row.hi;
      entries.lo[i] = row.lo;
    });
    entries.count = count;
    const state = new MirrorState(manifest, entries);
    for (let i = 0; i < count; i++) assert.equal(state.find(entries.hi[i]!, entries.lo[i]!), i);
    for (let probe = 0; probe < 2_000; probe++) {
      const hi = probe % 2 === 0 && count > 0 ? entries.hi[probe % count]! : probe % 3 === 0 ? 0x80000000 + (probe % 4) : Math.floor(random() * 2 ** 32);
      const lo = Math.floor(random() * 2 ** 32);
      assert.equal(state.find(hi, lo), findMirrorEntry(entries, hi, lo));
    }
  }
});
