import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { UpiRiskClient } from '@upi-risk/client';
import { lastLine, runCli, startBuilder, startServer, type BuilderProcess, type RunningServer } from '../server-process.js';
import { evidence, ndjson, tempDataDir, until } from '../helpers.js';
import { IntelligenceChanges, PAGES, RecordedAnswers, caller } from '../as-of-replay.js';
import { TEST_STORE_URL, untilPublished, withTestSchema } from '../store-fixtures.js';
import { mulberry32 } from '../fixtures/random.js';

// Answers as of a past instant in the fleet: a randomized run of ingests,
// retractions, clearances and their end, publications, and the recording
// follower killed and another taking the history over, with real answers
// recorded at instants between them; afterwards a follower that was not
// running then tells every one again byte for byte, with its headers.

test('a follower that was not running tells every answer the fleet served as of its instant, across corrections, publications and a take-over', { timeout: 600_000 }, async () => {
  await withTestSchema(async (location) => {
    const seed = Number(process.env.AS_OF_SEED ?? 20261130);
    const next = mulberry32(seed);
    const t = await tempDataDir();
    const store = ['--store', TEST_STORE_URL, '--store-schema', location.schema];
    let builder: BuilderProcess | null = null;
    const servers: RunningServer[] = [];
    try {
      assert.equal((await runCli(['migrate', ...store])).code, 0);
      const first = join(t.root, 'first.ndjson');
      await writeFile(first, ndjson([evidence('payee@ybl', PAGES[0]!, { evidence_id: 'ev-0' }), evidence('other@okaxis', PAGES[1]!, { evidence_id: 'ev-1' })]));
      assert.equal((await runCli(['ingest', ...store, first])).code, 0);
      const key = lastLine((await runCli(['keys', 'create', ...store, '--name', 'all', '--scopes', 'screen,ingest,admin'])).stdout);
      builder = startBuilder([...store, '--data-dir', join(t.root, 'builder'), '--poll-ms', '200', '--threads', '1']);
      await untilPublished(location);
      let followers = 0;
      let server: RunningServer;
      const call = caller(() => server.base, key);
      // A follower started (in a new data directory, or again in the last), once it records: answers it serves before are not in the history.
      const startFollower = async (again = false) => {
        server = await startServer(join(t.root, `follower-${again ? followers : ++followers}`), { args: [...store, '--threads', '1'] });
        servers.push(server);
        // Told once a state it recorded began before the instant, and it said it was recording after it (every second).
        await until('the follower recording the history', 60_000, async () => (await call(`/v1/verify/upi?upi=payee@ybl&as_of=${encodeURIComponent(new Date(Date.now() - 1500).toISOString())}`)).status === 200);
        const metrics = await (await fetch(`${server.base}/metrics`)).text();
        assert.match(metrics, /^upi_risk_answer_history_recording 1$/m);
        assert.match(metrics, /^upi_risk_answer_history_index_bytes [1-9]\d*$/m, 'the recorder holds its index');
      };
      await startFollower();

      const answers = new RecordedAnswers();
      const record = () => answers.record(call);
      const snapshotServed = async () => (await call('/v1/verify/upi?upi=payee@ybl')).headers.get('x-data-version')!.split('+')[0];

      const changes = new IntelligenceChanges(next);
      const steps = changes.steps;
      await record();
      for (let step = 0; step < 16; step++) {
        const roll = next();
        if (await changes.make(roll, call)) {
          // New evidence or a correction, made.
        } else if (roll < 0.85) {
          const before = await snapshotServed();
          builder.child.kill('SIGUSR2');
          await until('the next publication served', 120_000, async () => (await snapshotServed()) !== before);
          steps.push('publication');
        } else if (roll < 0.93) {
          // Stopped and started again: it continues from its own files, which end where the store's history does.
          assert.equal(await server!.stop(), 0);
          await startFollower(true);
          assert.match(server!.stderr(), /recording the history of answers/);
          assert.doesNotMatch(server!.stderr(), /made again from the store/);
          steps.push('restart');
        } else {
          // The recording follower killed, once it said it recorded the answers above (its last second is not told), and the next started takes the history over from the store.
          await new Promise((r) => setTimeout(r, 1_500));
          const child = server!.child;
          child.kill('SIGKILL');
          await new Promise((resolve) => child.once('exit', resolve));
          await startFollower();
          assert.match(server!.stderr(), /made again from the store/);
          steps.push('take-over');
        }
        await new Promise((r) => setTimeout(r, 5 + Math.floor(next() * 20)));
        await record();
      }
      assert.equal(await server!.stop(), 0);

      for (const kind of ['evidence', 'clearance', 'publication', 'restart', 'take-over']) assert.ok(steps.includes(kind), `the run (seed ${seed}) holds a ${kind}: ${steps.join(', ')}`);

      // A follower that was not running at any of those instants.
      server = await startServer(join(t.root, 'later'), { args: [...store, '--threads', '1'] });
      servers.push(server);
      await answers.assertToldAgain(call, `seed ${seed}, steps ${steps.join(', ')}`);

      // The history of a VPA: its changes, oldest first, each at a version served; none for a VPA never seen.
      const client = new UpiRiskClient({ baseUrl: server.base, apiKey: key });
      const history = await client.history('payee@ybl');
      assert.ok(history.changes.length >= 1);
      assert.equal(history.changes[0]!.status, 'FLAGGED');
      const times = history.changes.map((c) => Date.parse(c.at));
      assert.deepEqual(times, [...times].sort((a, b) => a - b));
      assert.deepEqual((await client.history('never-seen@ybl')).changes, []);
      // Before the first state recorded: 422 with the earliest instant kept.
      const early = await call('/v1/verify/upi?upi=payee@ybl&as_of=2020-01-01T00:00:00Z');
      assert.equal(early.status, 422);
      const earliest = (JSON.parse(early.text) as { earliest_as_of: string | null }).earliest_as_of;
      assert.ok(earliest !== null && Date.parse(earliest) <= answers.single[0]!.at, String(earliest));

      // A record the store holds damaged is refused with a clear error; screening goes on.
      const damage = new pg.Client({ connectionString: TEST_STORE_URL });
      await damage.connect();
      try {
        await damage.query(`UPDATE "${location.schema}".answer_changes SET record = set_byte(record, 20, get_byte(record, 20) # 1) WHERE vpa = 'other@okaxis'`);
      } finally {
        await damage.end();
      }
      const refused = await call(`/v1/verify/upi?upi=other@okaxis&as_of=${encodeURIComponent(new Date(answers.single.at(-1)!.at).toISOString())}`);
      assert.equal(refused.status, 503);
      assert.match(refused.text, /fails its CRC/);
      assert.equal((await call('/v1/verify/upi?upi=other@okaxis')).status, 200);
    } finally {
      for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) await s.stop();
      await builder?.stop();
      await t.cleanup();
    }
  });
});
