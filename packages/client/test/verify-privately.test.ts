/**
 * verifyPrivately: the service sees the first five hex digits of h(upi)
 * and nothing else of the VPA; the client finds its own suffix among the
 * range's entries and padding.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { recommendedAction } from '../src/advice.js';
import { UpiRiskClient } from '../src/client.js';
import { BadRequestError, ResponseFormatError } from '../src/errors.js';
import { MIRROR_RISK_CATEGORIES } from '../src/mirror-format.js';
import { vpaHashHex } from '../src/vpa-hash.js';
import { scriptedFetch, BASE_URL } from './fakes.js';
import { API_KEY, FakeMirrorService, RANGE_PADDING, flagSome, someVpas } from './mirror-fakes.js';

const VPAS = someVpas(2_000, 51);

let service: FakeMirrorService;
let base: string;
let client: UpiRiskClient;

before(async () => {
  service = new FakeMirrorService();
  base = await service.listen();
  client = new UpiRiskClient({ baseUrl: base, apiKey: API_KEY });
  service.publish(flagSome(VPAS, 0.3, 52));
});

after(() => service.close());

/** The request a private lookup made: only the range's path, nothing of the VPA elsewhere. */
function assertOnlyPrefixSent(upi: string): void {
  const hash = vpaHashHex(upi);
  assert.equal(service.requests.length, 1);
  const [request] = service.requests;
  assert.equal(request!.method, 'GET');
  assert.equal(request!.url, `/v1/verify/upi/range/${hash.slice(0, 5)}`);
  const headers = JSON.stringify(request!.headers).toLowerCase();
  assert.ok(!headers.includes(upi.toLowerCase()) && !headers.includes(hash.slice(5, 15)), 'a header carries the VPA or more of its hash');
}

test('a flagged VPA is found among the padding of its range', async () => {
  const flagged = [...service.latest.set].slice(0, 25);
  const sample = await (await fetch(`${base}/v1/verify/upi/range/${vpaHashHex(flagged[0]![0]).slice(0, 5)}`, { headers: { authorization: `Bearer ${API_KEY}` } })).json();
  assert.ok((sample as { entries: unknown[] }).entries.length > RANGE_PADDING);
  for (const [upi, meta] of flagged) {
    service.requests.length = 0;
    const result = await client.verifyPrivately(upi.toUpperCase());
    assertOnlyPrefixSent(upi);
    const hash = vpaHashHex(upi);
    assert.deepEqual(
      { ...result },
      {
        upi: upi.toUpperCase(),
        status: 'FLAGGED',
        risk_category: MIRROR_RISK_CATEGORIES[meta >> 4],
        confidence: 0.9,
        cluster_id: `MC-${Number.parseInt(hash.slice(0, 4), 16)}`,
        data_version: `snap-${service.latest.version}`,
        requestId: 'fake-200',
        dataVersion: 'snap-test',
        dataAsOf: null,
      },
    );
    assert.equal(recommendedAction(result, 'payment'), 'block_and_alert');
  }
});

test('a VPA whose suffix is not in its range is CLEARED', async () => {
  const unflagged = VPAS.filter((upi) => !service.latest.set.has(upi.toLowerCase())).slice(0, 25);
  for (const upi of unflagged) {
    service.requests.length = 0;
    const result = await client.verifyPrivately(upi);
    assertOnlyPrefixSent(upi);
    assert.deepEqual([result.status, result.risk_category, result.confidence, result.cluster_id], ['CLEARED', null, null, null]);
    assert.equal(recommendedAction(result, 'payment'), 'allow');
    assert.equal(result.data_version, `snap-${service.latest.version}`);
  }
});

test('an entry one hex digit away from the suffix is another VPA’s', async () => {
  const upi = VPAS[0]!;
  const hash = vpaHashHex(upi);
  const near = `${hash.slice(5, -1)}${hash.endsWith('0') ? '1' : '0'}`;
  const body = { prefix: hash.slice(0, 5), data_version: 'snap-9', entries: [{ suffix: near, status: 'FLAGGED', risk_category: 'scam', confidence: 0.95, cluster_id: 'MC-1' }] };
  const local = new UpiRiskClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch: scriptedFetch([{ status: 200, body }]).fetch });
  assert.equal((await local.verifyPrivately(upi)).status, 'CLEARED');
});

test('an answer for another prefix, or without entries: ResponseFormatError', async () => {
  const upi = VPAS[0]!;
  const prefix = vpaHashHex(upi).slice(0, 5);
  const otherPrefix = prefix === 'fffff' ? '00000' : 'fffff';
  for (const body of [{ prefix: otherPrefix, data_version: 'x', entries: [] }, { prefix, data_version: 'x' }]) {
    const local = new UpiRiskClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch: scriptedFetch([{ status: 200, body }]).fetch });
    await assert.rejects(local.verifyPrivately(upi), ResponseFormatError);
  }
});

test('what is not a VPA is refused before any request', async () => {
  service.requests.length = 0;
  await assert.rejects(client.verifyPrivately('not a vpa'), BadRequestError);
  await assert.rejects(client.verifyPrivately('a@b'), BadRequestError);
  await assert.rejects(client.verifyPrivately(''), TypeError);
  assert.deepEqual(service.requests, []);
});

test('mirrorPublicKey: the key as the service gives it', async () => {
  assert.equal(await client.mirrorPublicKey(), service.keys.publicKey);
});
