import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lastLine, runCli, startBuilder, startServer, type BuilderProcess, type RunningServer } from '../server-process.js';
import { evidence, ndjson, tempDataDir, until } from '../helpers.js';
import { TEST_STORE_URL, untilPublished, withTestSchema } from '../store-fixtures.js';
import { assertSchema } from '../schema-check.js';
import { DataVersionSchema } from '../../src/api/history-paths.js';
import type { DataVersionRecord } from '../../src/history/served-versions.js';

test('a follower started later resolves every version another follower served, from the store', { timeout: 180_000 }, async () => {
  await withTestSchema(async (location) => {
    const t = await tempDataDir();
    const store = ['--store', TEST_STORE_URL, '--store-schema', location.schema];
    let builder: BuilderProcess | null = null;
    const followers: RunningServer[] = [];
    try {
      assert.equal((await runCli(['migrate', ...store])).code, 0);
      const ingest = async (name: string) => {
        const path = join(t.root, `${name}.ndjson`);
        await writeFile(path, ndjson([evidence(`${name}@ybl`, `https://${name}.example`, { evidence_id: name })]));
        assert.equal((await runCli(['ingest', ...store, path])).code, 0);
      };
      await ingest('first');
      const key = lastLine((await runCli(['keys', 'create', ...store, '--scopes', 'screen'])).stdout);
      builder = startBuilder([...store, '--data-dir', join(t.root, 'builder'), '--poll-ms', '200', '--threads', '1']);
      const args = { args: [...store, '--threads', '1'] };
      await untilPublished(location);
      followers.push(await startServer(join(t.root, 'follower-1'), args));
      const first = followers[0]!;

      const versionOf = async (server: RunningServer, upi: string) => {
        const response = await fetch(`${server.base}/v1/verify/upi?upi=${upi}`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await response.json()) as { status: string };
        return { status: body.status, version: response.headers.get('x-data-version')! };
      };
      const resolve = async (server: RunningServer, version: string): Promise<DataVersionRecord> => {
        const response = await fetch(`${server.base}/v1/data-versions/${encodeURIComponent(version)}`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await response.json()) as DataVersionRecord;
        assert.equal(response.status, 200, `${version}: ${JSON.stringify(body)}`);
        assertSchema(DataVersionSchema, body);
        return body;
      };

      const served = [(await versionOf(first, 'first@ybl')).version];
      for (const name of ['second', 'third']) {
        await ingest(name);
        await until(`${name} served`, 10_000, async () => (await versionOf(first, `${name}@ybl`)).status === 'FLAGGED');
        served.push((await versionOf(first, `${name}@ybl`)).version);
      }
      const [snapshot, position] = served[2]!.split('+');
      // A new publication: the follower swaps to it, and the last version over the old snapshot ends then.
      builder.child.kill('SIGUSR2');
      await until('the next publication served', 60_000, async () => !(await versionOf(first, 'third@ybl')).version.startsWith(`${snapshot}+`));
      served.push((await versionOf(first, 'third@ybl')).version);
      assert.equal(new Set(served).size, 4, served.join(' '));
      const before = await Promise.all(served.map((v) => resolve(first, v)));
      assert.equal(before[3]!.until, null, 'served now');
      for (let i = 0; i < 3; i++) assert.equal(before[i]!.until, before[i + 1]!.from, `${served[i]} ends when ${served[i + 1]} begins`);
      assert.deepEqual([before[2]!.snapshot, before[2]!.position], [snapshot, Number(position)]);
      assert.notEqual(before[3]!.snapshot, snapshot);
      assert.equal(await first.stop(), 0);

      // A follower that was not running then answers for what the other served (one that never records the history, too).
      followers.push(await startServer(join(t.root, 'follower-2'), { args: [...args.args, '--read-history-only'] }));
      const later = followers[1]!;
      assert.deepEqual(await Promise.all(served.map((v) => resolve(later, v))), before);
      const missing = await fetch(`${later.base}/v1/data-versions/${encodeURIComponent(`${snapshot}+999999`)}`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(missing.status, 404);
      // The history of answers, from the store: what the first follower recorded.
      const history = await fetch(`${later.base}/v1/verify/upi/history?upi=third@ybl`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(history.status, 200);
      const changes = ((await history.json()) as { changes: { status: string; data_version: string }[] }).changes;
      assert.equal(changes[0]?.status, 'FLAGGED');
      assert.ok(served.includes(changes[0].data_version), `${changes[0].data_version} is a version served`);
      assert.doesNotMatch(later.stderr(), /answer history lease taken/);
      assert.match(await (await fetch(`${later.base}/metrics`)).text(), /^upi_risk_answer_history_recording 0$/m);
      assert.equal(await later.stop(), 0);
    } finally {
      for (const f of followers) if (f.child.exitCode === null && f.child.signalCode === null) await f.stop();
      await builder?.stop();
      await t.cleanup();
    }
  });
});
