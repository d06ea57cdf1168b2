import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '../server-process.js';
import { testClient, withTestSchema } from '../store-fixtures.js';
import { tempDataDir, ndjson, evidence } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { connectStore } from '../../src/store/postgres.js';
import { appendEvidenceBytes } from '../../src/store/evidence-log.js';

test('ingest --store appends each file in one transaction, skipping evidence ids seen before however old', { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    const t = await tempDataDir();
    const store = ['--store', location.url, '--store-schema', location.schema];
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    const write = async (name: string, items: readonly object[] | string) => {
      const path = join(t.root, name);
      await writeFile(path, typeof items === 'string' ? items : ndjson(items));
      return path;
    };
    const first = await write('first.ndjson', [
      evidence('Mule@YBL', 'https://a.example', { evidence_id: 'e1' }),
      evidence('other@ybl', 'https://b.example/?q="quoted",x', { evidence_id: 'e2' }),
      evidence('mule@ybl', 'https://c.example', { evidence_id: 'e1' }),
    ]);
    const bad = await write('bad.ndjson', `${JSON.stringify(evidence('x@ybl', 'https://x.example', { evidence_id: 'e9' }))}\n{"evidence_id": 1}\nnot json\n`);
    const second = await write('second.ndjson', [evidence('late@ybl', 'https://d.example', { evidence_id: 'e3' }), evidence('again@ybl', 'https://e.example', { evidence_id: 'e2' })]);
    const run = await runCli(['ingest', ...store, first, bad, second]);
    assert.equal(run.code, 1, 'one file refused');
    assert.match(run.stdout, /stored .*first\.ndjson: 3 evidence lines, 2 new, 1 duplicates; log at position 2/);
    assert.match(run.stdout, /refused .*bad\.ndjson: 2 invalid of 3 lines/);
    assert.match(run.stdout, /stored .*second\.ndjson: 2 evidence lines, 1 new, 1 duplicates; log at position 3/);
    assert.match(run.stderr, /bad\.ndjson:2: /);
    assert.match(run.stderr, /bad\.ndjson:3: /);

    const client = await testClient(location);
    try {
      const rows = (await client.query('SELECT position, evidence_id, upi, url FROM evidence ORDER BY position')).rows;
      assert.deepEqual(rows, [
        { position: '1', evidence_id: 'e1', upi: 'mule@ybl', url: 'https://a.example' },
        { position: '2', evidence_id: 'e2', upi: 'other@ybl', url: 'https://b.example/?q="quoted",x' },
        { position: '3', evidence_id: 'e3', upi: 'late@ybl', url: 'https://d.example' },
      ]);
      assert.deepEqual((await client.query('SELECT items, duplicates, first_position, last_position FROM ingests ORDER BY id')).rows, [
        { items: 2 + 1, duplicates: 1, first_position: '1', last_position: '2' },
        { items: 2, duplicates: 1, first_position: '3', last_position: '3' },
      ]);
    } finally {
      await client.end();
    }
    await t.cleanup();
  });
});

test('concurrent ingests commit in position order: a reader following the log never finds a position behind it later', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const writers = 6;
    const batches = 8;
    const perBatch = 150;
    let stop = false;
    const reader = await connectStore(location);
    const seen: number[] = [];
    const follow = (async () => {
      let last = 0;
      while (!stop || last < writers * batches * perBatch) {
        const rows = (await reader.query<{ position: string }>('SELECT position FROM evidence WHERE position > $1 ORDER BY position LIMIT 1000', [last])).rows;
        for (const row of rows) {
          const position = Number(row.position);
          // Read in commit order, the next position is always the one after the last (no duplicates here leave one unused): none appears behind the reader later.
          assert.equal(position, last + 1, `after ${last} the reader found ${position}`);
          last = position;
          seen.push(position);
        }
        if (rows.length === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const client = await connectStore(location);
        try {
          for (let b = 0; b < batches; b++) {
            const items = Array.from({ length: perBatch }, (_, i) => evidence(`w${w}b${b}i${i}@ybl`, 'https://shared.example', { evidence_id: `w${w}-b${b}-i${i}` }));
            const result = await appendEvidenceBytes(client, location, Buffer.from(ndjson(items)), `writer ${w} batch ${b}`);
            assert.equal(result.added, perBatch);
          }
        } finally {
          await client.end();
        }
      }),
    );
    stop = true;
    await follow;
    await reader.end();
    assert.equal(seen.length, writers * batches * perBatch);
  });
});

test('a large ingest is stored in batches, all or nothing, the first of each evidence id kept across batches', { timeout: 120_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const lines = 110_000;
    const items = Array.from({ length: lines }, (_, i) => evidence(`payee${i}@ybl`, `https://site${i % 500}.example`, { evidence_id: `big-${i}` }));
    // Repeats of earlier ids: one in a later batch than its first, one in the same batch; both lose to the first.
    items[60_000] = evidence('late.repeat@ybl', 'https://repeat.example', { evidence_id: 'big-10' });
    items[99_999] = evidence('near.repeat@ybl', 'https://repeat.example', { evidence_id: 'big-99998' });
    const client = await connectStore(location);
    try {
      // A bad line in the last batch: nothing of the earlier batches stays.
      const bad = [...items.map((item) => JSON.stringify(item)), '{"evidence_id": "broken"}'].join('\n');
      const refused = await appendEvidenceBytes(client, location, Buffer.from(bad), 'bad');
      assert.equal(refused.accepted, false);
      assert.deepEqual(refused.errors.map((e) => e.line), [lines + 1]);
      assert.equal(Number((await client.query('SELECT count(*) AS n FROM evidence')).rows[0].n), 0);

      const stored = await appendEvidenceBytes(client, location, Buffer.from(ndjson(items)), 'good');
      assert.equal(stored.added, lines - 2);
      assert.equal(stored.duplicates, 2);
      const rows = (await client.query<{ position: string; evidence_id: string; upi: string }>('SELECT position, evidence_id, upi FROM evidence ORDER BY position')).rows;
      assert.equal(rows.length, lines - 2);
      const byId = new Map(rows.map((r) => [r.evidence_id, r.upi]));
      assert.equal(byId.get('big-10'), 'payee10@ybl');
      assert.equal(byId.get('big-99998'), 'payee99998@ybl');
      // In line order, each after the one before; the log's head is the last.
      for (let i = 1; i < rows.length; i++) assert.ok(Number(rows[i]!.position) > Number(rows[i - 1]!.position));
      assert.equal(rows[0]!.evidence_id, 'big-0');
      assert.equal(Number(rows.at(-1)!.position), stored.position);
      assert.equal(Number((await client.query('SELECT position FROM log_head')).rows[0].position), stored.position);

      // Sent again whole: every item a duplicate, nothing added.
      const again = await appendEvidenceBytes(client, location, Buffer.from(ndjson(items)), 'again');
      assert.equal(again.added, 0);
      assert.equal(again.duplicates, lines);
      assert.equal(again.position, stored.position);
    } finally {
      await client.end();
    }
  });
});
