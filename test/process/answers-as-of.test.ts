import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UpiRiskClient } from '@upi-risk/client';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { IntelligenceChanges, PAGES, PAYEES, RecordedAnswers, caller } from '../as-of-replay.js';
import { startServer, type RunningServer } from '../server-process.js';
import { mulberry32 } from '../fixtures/random.js';

// Answers as of a past instant on a real server: a randomized run of
// ingests, retractions, clearances and their end, compactions, clean
// restarts and SIGKILLs, with real answers recorded at instants between
// them; afterwards every one is told again byte for byte by a lookup with
// `as_of` (single and batch), with the X-Data-Version and X-Data-As-Of it
// was served with.

type Body = Record<string, unknown>;

test('every answer served is told again as of its instant, across corrections, compactions, restarts and a SIGKILL', { timeout: 600_000 }, async () => {
  const seed = Number(process.env.AS_OF_SEED ?? 20261137);
  const next = mulberry32(seed);
  const t = await tempDataDir();
  let server: RunningServer | null = null;
  try {
    await ingest(t.dir, t.root, [evidence('payee@ybl', PAGES[0]!, { evidence_id: 'ev-0' }), evidence('other@okaxis', PAGES[1]!, { evidence_id: 'ev-1' })]);
    const admin = new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir)));
    const key = (await admin.create({ name: 'all', scopes: ['screen', 'ingest', 'admin'] })).key;
    const start = async () => (server = await startServer(t.dir.root, { args: ['--threads', '2'] }));
    await start();
    const call = caller(() => server!.base, key);
    const json = (text: string) => JSON.parse(text) as Body;
    const answers = new RecordedAnswers();
    const record = () => answers.record(call);
    const version = async () => (await call('/v1/verify/upi?upi=payee@ybl')).headers.get('x-data-version')!;

    const changes = new IntelligenceChanges(next);
    const steps = changes.steps;
    await record();
    for (let step = 0; step < 16; step++) {
      const roll = next();
      if (await changes.make(roll, call)) {
        // New evidence or a correction, made.
      } else if (roll < 0.8) {
        const before = (await version()).split('+')[0];
        assert.equal((await call('/v1/admin/compaction', { method: 'POST' })).status, 202);
        const deadline = Date.now() + 120_000;
        while ((await version()).split('+')[0] === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        steps.push('compaction');
      } else if (roll < 0.9) {
        assert.equal(await server!.stop(), 0);
        await start();
        steps.push('restart');
      } else {
        const child = server!.child;
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        await start();
        steps.push('SIGKILL');
      }
      // Answers at instants apart from the change: a few milliseconds on, and again later.
      await new Promise((r) => setTimeout(r, 5 + Math.floor(next() * 20)));
      await record();
    }
    // Stopped and started again: the whole past is still told.
    assert.equal(await server!.stop(), 0);
    await start();

    for (const kind of ['evidence', 'retraction', 'clearance', 'compaction', 'restart', 'SIGKILL']) assert.ok(steps.includes(kind), `the run (seed ${seed}) holds a ${kind}: ${steps.join(', ')}`);
    await answers.assertToldAgain(call, `seed ${seed}, steps ${steps.join(', ')}`);

    // The client.
    const client = new UpiRiskClient({ baseUrl: server!.base, apiKey: key });
    const last = answers.single.at(-1)!;
    const byClient = await client.verify(last.upi, { asOf: new Date(last.at) });
    assert.deepEqual([byClient.verdict, byClient.dataVersion], [JSON.parse(last.body), last.version]);

    // What it refuses.
    const refused = async (query: string) => {
      const answer = await call(`/v1/verify/upi?upi=payee@ybl${query}`);
      return [answer.status, json(answer.text).error, json(answer.text).earliest_as_of];
    };
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    assert.deepEqual((await refused(`&as_of=${tomorrow}`)).slice(0, 2), [422, 'validation_error']);
    const early = await refused('&as_of=2020-01-01T00:00:00Z');
    assert.deepEqual(early.slice(0, 2), [422, 'validation_error']);
    assert.ok(typeof early[2] === 'string' && Date.parse(early[2]) <= answers.single[0]!.at, `earliest_as_of ${String(early[2])}`);
    assert.deepEqual((await refused('&as_of=yesterday')).slice(0, 2), [400, 'bad_request']);
    assert.deepEqual((await refused('&as_of=%zz')).slice(0, 2), [400, 'bad_request']);
    assert.deepEqual((await refused('&as_of=2026-03-03T10:02:00')).slice(0, 2), [400, 'bad_request'], 'an instant without its zone');
    const badBatch = await call('/v1/verify/upi/batch', { method: 'POST', body: JSON.stringify({ upis: PAYEES, as_of: 5 }) });
    assert.equal(badBatch.status, 422, 'an as_of of the wrong type');
    const malformedBatch = await call('/v1/verify/upi/batch', { method: 'POST', body: JSON.stringify({ upis: PAYEES, as_of: 'yesterday' }) });
    assert.equal(malformedBatch.status, 400);
    // With an offset, the same instant.
    const offset = new Date(last.at + 5.5 * 3600_000).toISOString().replace('Z', '+05:30');
    assert.equal((await call(`/v1/verify/upi?upi=${last.upi}&as_of=${encodeURIComponent(offset)}`)).text, last.body);
  } finally {
    if (server !== null && (server as RunningServer).child.exitCode === null) await (server as RunningServer).stop();
    await t.cleanup();
  }
});
