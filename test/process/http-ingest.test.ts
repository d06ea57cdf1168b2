import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { tempDataDir, ingest, evidence, ndjson } from '../helpers.js';
import { startServer, runCli, lastLine } from '../server-process.js';

interface Receipt {
  items: number;
  added: number | null;
  duplicates: number | null;
  data_version: string;
}

/** A server on a data directory with one known VPA, and a key that may ingest and screen. */
async function withServer(args: readonly string[], run: (post: (body: string, type?: string) => Promise<Response>, lookup: (upi: string) => Promise<{ status: string; evidence_count: number }>, evidenceFiles: () => Promise<number>) => Promise<void>) {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('known@ybl', 'https://a.example', { evidence_id: 'k1' })]);
  const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--scopes', 'screen,ingest'])).stdout);
  const server = await startServer(t.dir.root, { args });
  const authorization = `Bearer ${key}`;
  try {
    await run(
      (body, type = 'application/x-ndjson') => fetch(`${server.base}/v1/admin/evidence`, { method: 'POST', headers: { authorization, 'content-type': type }, body }),
      async (upi) => (await (await fetch(`${server.base}/v1/verify/upi?upi=${upi}`, { headers: { authorization } })).json()) as { status: string; evidence_count: number },
      async () => (await readdir(t.dir.evidence)).filter((name) => name.endsWith('.ndjson')).length,
    );
  } finally {
    assert.equal(await server.stop(), 0);
    await t.cleanup();
  }
}

test('evidence sent over HTTP is stored, served when the answer comes, and counted as new or duplicate', { timeout: 60_000 }, async () => {
  await withServer([], async (post, lookup, evidenceFiles) => {
    const items = [evidence('sent@ybl', 'https://b.example', { evidence_id: 's1' }), evidence('known@ybl', 'https://c.example', { evidence_id: 's2' })];
    const first = await post(ndjson(items));
    assert.equal(first.status, 200);
    const receipt = (await first.json()) as Receipt;
    assert.deepEqual({ ...receipt, data_version: '' }, { items: 2, added: 2, duplicates: 0, data_version: '' });
    assert.equal(first.headers.get('x-data-version') !== null, true);
    // Served by the time the answer came.
    assert.equal((await lookup('sent@ybl')).status, 'FLAGGED');
    assert.equal((await lookup('known@ybl')).evidence_count, 2);
    assert.match(receipt.data_version, /\+1$/);

    // The same ids again, and one seen at the start (k1): stored, but duplicates.
    const again = (await (await post(ndjson([...items, evidence('known@ybl', 'https://z.example', { evidence_id: 'k1' })]))).json()) as Receipt;
    assert.equal(again.items, 3);
    assert.equal(again.added, 0);
    assert.equal(again.duplicates, 3);
    assert.equal((await lookup('known@ybl')).evidence_count, 2);
    assert.equal(await evidenceFiles(), 3);
  });
});

test('a body with a bad line is refused whole, with every bad line, and nothing is stored', { timeout: 60_000 }, async () => {
  await withServer([], async (post, lookup, evidenceFiles) => {
    const good = JSON.stringify(evidence('ok@ybl', 'https://b.example'));
    const body = [good, '{"evidence_id":"x"}', good.replace('ok@ybl', 'not a vpa'), 'not json'].join('\n');
    const refused = await post(body);
    assert.equal(refused.status, 422);
    const answer = (await refused.json()) as { error: string; invalid_lines: number; errors: { line: number; reason: string }[] };
    assert.equal(answer.error, 'validation_error');
    assert.equal(answer.invalid_lines, 3);
    assert.deepEqual(answer.errors.map((e) => e.line), [2, 3, 4]);
    assert.ok(answer.errors.every((e) => e.reason.length > 0));
    assert.equal((await lookup('ok@ybl')).status, 'CLEARED');
    assert.equal(await evidenceFiles(), 1);

    assert.equal((await post(good, 'application/json')).status, 400, 'NDJSON only');
    assert.equal((await post('')).status, 400, 'an empty body');
    assert.equal((await post('\n\n')).status, 400, 'a body of blank lines');
    const big = await post('x'.repeat(16 * 1024 * 1024 + 1));
    assert.equal(big.status, 400, 'over the size cap');
    assert.equal(await evidenceFiles(), 1);
  });
});

test('without incremental builds the evidence is served by a rebuild and its duplicates are not known', { timeout: 60_000 }, async () => {
  await withServer(['--full-rebuilds'], async (post, lookup) => {
    const sent = await post(ndjson([evidence('rebuilt@ybl', 'https://b.example')]));
    assert.equal(sent.status, 200);
    const receipt = (await sent.json()) as Receipt;
    assert.equal(receipt.items, 1);
    assert.equal(receipt.added, null);
    assert.equal(receipt.duplicates, null);
    assert.equal((await lookup('rebuilt@ybl')).status, 'FLAGGED');
  });
});
