import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { appendFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDataDir, ingest, evidence, ndjson, sample, until } from '../helpers.js';
import { assertSchema } from '../schema-check.js';
import { formatIso } from '../../src/common/time.js';
import { DataVersionSchema } from '../../src/api/history-paths.js';
import type { DataVersionRecord } from '../../src/history/served-versions.js';
import { startServer, runCli, lastLine, type RunningServer } from '../server-process.js';

async function kill(server: RunningServer): Promise<void> {
  server.child.kill('SIGKILL');
  if (server.child.exitCode === null && server.child.signalCode === null) await once(server.child, 'exit');
}

/** How long after a new state is recorded the serving threads may still answer from the one before, at most, ms. */
const HANDOVER_MS = 1_000;

test('GET /v1/data-versions/{version} resolves every version served, across ingests, a SIGKILL, a stop and restarts', { timeout: 180_000 }, async () => {
  const t = await tempDataDir();
  const started: RunningServer[] = [];
  const start = async () => {
    const running = await startServer(t.dir.root);
    started.push(running);
    return running;
  };
  try {
    await ingest(t.dir, t.root, [evidence('base@ybl', 'https://base.example', { evidence_id: 'b1' })]);
    const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
    const ingestOnly = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root, '--scopes', 'ingest'])).stdout);
    const get = async (server: RunningServer, path: string, bearer = key) => {
      const response = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    /** The version an answer carried, with the time window around the answer. */
    const screened: { version: string; before: number; after: number }[] = [];
    const screen = async (server: RunningServer) => {
      const before = Date.now();
      const response = await fetch(`${server.base}/v1/verify/upi?upi=base@ybl`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(response.status, 200);
      await response.text();
      const version = response.headers.get('x-data-version')!;
      screened.push({ version, before, after: Date.now() });
      return version;
    };
    const resolve = async (server: RunningServer, version: string) => {
      const answer = await get(server, `/v1/data-versions/${encodeURIComponent(version)}`);
      assert.equal(answer.status, 200, `${version}: ${JSON.stringify(answer.body)}`);
      assertSchema(DataVersionSchema, answer.body);
      return answer.body as unknown as DataVersionRecord;
    };
    const ingestFile = async (name: string) => {
      const path = join(t.root, name);
      await writeFile(path, ndjson([evidence(`${name}@ybl`, `https://${name}.example`, { evidence_id: name })]));
      assert.equal((await runCli(['ingest', '--data-dir', t.dir.root, path])).code, 0);
    };

    const startedAt = Date.now();
    let server = await start();
    const alone = await screen(server);
    assert.ok(!alone.includes('+'), alone);
    const first = await resolve(server, alone);
    assert.deepEqual({ ...first, from: '' }, { version: alone, from: '', until: null, snapshot: alone, position: 0 });
    assert.equal(sample(await (await fetch(`${server.base}/metrics`)).text(), 'upi_risk_data_versions_recorded'), 1);
    assert.ok(Date.parse(first.from) >= startedAt && Date.parse(first.from) <= screened[0]!.after, first.from);
    assert.equal(await server.stop(), 0);

    // Started again on the same snapshot and nothing new: the same state, under a new version.
    server = await start();
    const again = await screen(server);
    assert.ok(again.startsWith(`${alone}+`), again);
    const stopped = (await resolve(server, alone)).until;
    assert.ok(stopped !== null && Date.parse(stopped) <= Date.parse((await resolve(server, again)).from), 'the stop ended the first');
    assert.equal((await resolve(server, again)).until, null);

    await ingestFile('one');
    await until('one is served', 10_000, async () => (await screen(server)) !== again);
    const merged = screened.at(-1)!.version;
    const [snapshot, position] = merged.split('+');
    const resolvedMerged = await resolve(server, merged);
    assert.deepEqual({ ...resolvedMerged, from: '' }, { version: merged, from: '', until: null, snapshot, position: Number(position) });
    assert.equal((await resolve(server, again)).until, resolvedMerged.from, 'a version ends when the next begins');
    await kill(server);

    // The restart serves the same snapshot and delta: under a new version, the killed server's last one ended by it.
    server = await start();
    const restarted = await screen(server);
    assert.notEqual(restarted, merged);
    assert.equal((await resolve(server, merged)).until, (await resolve(server, restarted)).from);
    assert.equal(await server.stop(), 0);
    const stoppedAt = Date.now();

    server = await start();
    const third = await screen(server);
    const ended = await resolve(server, restarted);
    assert.ok(ended.until !== null && Date.parse(ended.until) <= stoppedAt, 'a stop ends the version served');
    assert.ok(Date.parse((await resolve(server, third)).from) >= Date.parse(ended.until));

    // A compaction serves a new snapshot: the version before it ends when it begins, and both resolve.
    server.child.kill('SIGUSR2');
    await until('the compaction served', 60_000, async () => !(await screen(server)).startsWith(`${snapshot}+`));
    const compacted = screened.at(-1)!.version;
    const afterCompaction = await resolve(server, compacted);
    assert.notEqual(afterCompaction.snapshot, snapshot);
    assert.equal((await resolve(server, third)).until, afterCompaction.from);

    // Every answer's version was served at the time of the answer.
    for (const s of screened) {
      const r = await resolve(server, s.version);
      assert.ok(Date.parse(r.from) <= s.after, `${s.version} from ${r.from}`);
      // A serving thread takes the next state over at its next request after `until`: moments later.
      assert.ok(r.until === null || Date.parse(r.until) >= s.before - HANDOVER_MS, `${s.version} until ${r.until}, answered from ${formatIso(s.before)}`);
    }

    // Refusals.
    assert.equal((await get(server, `/v1/data-versions/${encodeURIComponent(`${snapshot}+999999999`)}`)).status, 404);
    assert.equal((await get(server, '/v1/data-versions/20200101T000000000Z-000000')).status, 404);
    const malformed = await get(server, '/v1/data-versions/a%ZZb');
    assert.deepEqual([malformed.status, malformed.body.error], [400, 'bad_request']);
    assert.equal((await get(server, `/v1/data-versions/${encodeURIComponent('bad version')}`)).status, 400);
    assert.equal((await get(server, '/v1/data-versions/')).status, 400);
    assert.equal((await get(server, `/v1/data-versions/${encodeURIComponent(third)}`, ingestOnly)).status, 403);
    assert.equal((await fetch(`${server.base}/v1/data-versions/${encodeURIComponent(third)}`)).status, 401);
    assert.equal(await server.stop(), 0);

    // A record cut short is refused with a clear error; the server serves on, and says why versions are not resolved.
    await appendFile(t.dir.versions, Buffer.alloc(7));
    server = await start();
    await screen(server);
    const refused = await get(server, `/v1/data-versions/${encodeURIComponent(third)}`);
    assert.equal(refused.status, 503);
    assert.match(String(refused.body.message), /cut short/);
    assert.match(server.stderr(), /ERR_HISTORY/);
    assert.equal(sample(await (await fetch(`${server.base}/metrics`)).text(), 'upi_risk_data_versions_recorded'), 0);
    assert.equal(await server.stop(), 0);
  } finally {
    for (const running of started) if (running.child.exitCode === null && running.child.signalCode === null) await kill(running);
    await t.cleanup();
  }
});

test('--history-days 0 records nothing and says so; a value out of range is refused at start', { timeout: 60_000 }, async () => {
  const t = await tempDataDir();
  try {
    await ingest(t.dir, t.root, [evidence('base@ybl', 'https://base.example', { evidence_id: 'b1' })]);
    const key = lastLine((await runCli(['keys', 'create', '--data-dir', t.dir.root])).stdout);
    for (const bad of ['-1', '36501', 'year']) {
      const refused = await runCli(['serve', '--data-dir', t.dir.root, '--plain-http', '--port', '0', '--history-days', bad]);
      assert.equal(refused.code, 2, `--history-days ${bad}: ${refused.stderr}`);
      assert.match(refused.stderr, /--history-days/);
    }
    const server = await startServer(t.dir.root, { args: ['--history-days', '0'] });
    try {
      const screened = await fetch(`${server.base}/v1/verify/upi?upi=base@ybl`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(screened.status, 200);
      const version = screened.headers.get('x-data-version')!;
      const response = await fetch(`${server.base}/v1/data-versions/${encodeURIComponent(version)}`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await response.json()) as { error: string; message: string };
      assert.deepEqual([response.status, body.error], [503, 'service_unavailable']);
      assert.match(body.message, /--history-days 0/);
      await assert.rejects(stat(t.dir.versions), { code: 'ENOENT' });
    } finally {
      assert.equal(await server.stop(), 0);
    }
  } finally {
    await t.cleanup();
  }
});
