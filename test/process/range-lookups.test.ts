import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, sample, until } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';
import { assertSchema } from '../schema-check.js';
import { RangeAnswerSchema } from '../../src/api/private-lookup-schemas.js';

interface RangeBody {
  prefix: string;
  data_version: string;
  entries: { suffix: string; status: string; risk_category: string; confidence: number; cluster_id: string | null }[];
}

const sha = (upi: string) => createHash('sha256').update(upi.toLowerCase()).digest('hex');
const UPIS = Array.from({ length: 120 }, (_, i) => `payee.${i}@${['ybl', 'okaxis', 'paytm'][i % 3]}`);

test('range lookups over two serving threads: every flagged VPA found by its prefix, padded answers of one length, ETags, errors, and new evidence from the delta and after a compaction', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, UPIS.map((upi, i) => evidence(upi, `https://fraud.example/${i % 9}`, { evidence_id: `e${i}` })));
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
  const ingestOnly = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--scopes', 'ingest'])).stdout);
  const server = await startServer(t.dir.root, { args: ['--threads', '2'] });
  const get = (path: string, headers: Record<string, string> = {}, apiKey = key) =>
    fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${apiKey}`, ...headers } });
  const range = async (upi: string, headers: Record<string, string> = {}) => {
    const r = await get(`/v1/verify/upi/range/${sha(upi).slice(0, 5)}`, headers);
    assert.equal(r.status, 200, await r.clone().text());
    const body = (await r.json()) as RangeBody;
    assertSchema(RangeAnswerSchema, body);
    return { response: r, body };
  };
  try {
    // The first snapshot's ranges are made once it is served: 503 with Retry-After until then.
    await until('the ranges are made', 30_000, async () => {
      const r = await get('/v1/verify/upi/range/00000');
      if (r.status === 503) assert.ok(r.headers.get('retry-after'));
      return r.status === 200;
    });
    // What the ranges hold: 4 bytes of order and 40 of records a VPA, and a start for each of the 2^20 ranges and one past.
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.equal(sample(metrics, 'upi_risk_hash_ranges_bytes'), 44 * UPIS.length + 4 * (2 ** 20 + 1));

    const lengths = new Set<number>();
    for (const upi of UPIS) {
      const verdict = (await (await get(`/v1/verify/upi?upi=${upi}`)).json()) as { status: string; risk_category: string; confidence: number; cluster_id: string | null };
      const { response, body } = await range(upi);
      lengths.add(Number(response.headers.get('content-length')));
      assert.equal(body.prefix, sha(upi).slice(0, 5));
      assert.equal(body.data_version, response.headers.get('x-data-version'));
      const mine = body.entries.find((e) => e.suffix === sha(upi).slice(5));
      assert.deepEqual(mine, { suffix: sha(upi).slice(5), status: 'FLAGGED', risk_category: verdict.risk_category, confidence: verdict.confidence, cluster_id: verdict.cluster_id });
    }
    for (const prefix of ['00000', 'fffff', '7a7a7', 'c0ffe']) lengths.add(Number((await get(`/v1/verify/upi/range/${prefix}`)).headers.get('content-length')));
    assert.equal(lengths.size, 1, `padded answers of one version have one length: ${[...lengths].join(', ')}`);

    // Unpadded: only real entries. A VPA never seen is CLEARED: its suffix is in no answer.
    const { body: unpadded } = await range(UPIS[0]!, { 'upi-risk-padding': 'off' });
    assert.ok(unpadded.entries.length >= 1 && unpadded.entries.every((e) => UPIS.some((u) => sha(u) === unpadded.prefix + e.suffix)));
    const { body: never } = await range('never.seen@ybl');
    assert.ok(!never.entries.some((e) => e.suffix === sha('never.seen@ybl').slice(5)));

    // Cached by ETag: the same version and prefix answer 304.
    const first = await get('/v1/verify/upi/range/c0ffe');
    const etag = first.headers.get('etag')!;
    assert.match(first.headers.get('cache-control')!, /^private, max-age=\d+$/);
    assert.equal((await get('/v1/verify/upi/range/c0ffe', { 'if-none-match': etag })).status, 304);
    assert.equal((await get('/v1/verify/upi/range/c0ffe', { 'if-none-match': '"another"' })).status, 200);
    assert.notEqual((await get('/v1/verify/upi/range/c0ffe', { 'upi-risk-padding': 'off' })).headers.get('etag'), etag);

    for (const bad of ['0000', '000000', 'ABCDE', 'g0000', '']) {
      const r = await get(`/v1/verify/upi/range/${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(((await r.json()) as { error: string }).error, 'bad_request');
    }
    assert.equal((await get('/v1/verify/upi/range/00000', { 'upi-risk-padding': 'maybe' })).status, 400);
    assert.equal((await get('/v1/verify/upi/range/00000', {}, ingestOnly)).status, 403);
    assert.equal((await fetch(`${server.base}/v1/verify/upi/range/00000`)).status, 401);

    // New evidence is found through its range once served from the delta, and after the compaction that folds it in.
    const fresh = 'fresh.mule@ybl';
    const path = join(t.root, 'fresh.ndjson');
    await writeFile(path, ndjson([evidence(fresh, 'https://fraud.example/new', { evidence_id: 'fresh-1' })]));
    assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, path])).code, 0);
    await until('the delta serves the new VPA', 30_000, async () => ((await (await get(`/v1/verify/upi?upi=${fresh}`)).json()) as { status: string }).status === 'FLAGGED');
    for (let i = 0; i < 4; i++) assert.ok((await range(fresh)).body.entries.some((e) => e.suffix === sha(fresh).slice(5)), 'found from the delta on every thread');
    const before = (await range(fresh)).body.data_version;
    server.child.kill('SIGUSR2');
    await until('the compaction is served with its ranges', 60_000, async () => {
      const r = await get(`/v1/verify/upi/range/${sha(fresh).slice(0, 5)}`);
      if (r.status !== 200) return false;
      const body = (await r.json()) as RangeBody;
      return !body.data_version.startsWith(before.split('+')[0]!) && body.entries.some((e) => e.suffix === sha(fresh).slice(5));
    });
  } finally {
    await server.stop();
    await t.cleanup();
  }
});
