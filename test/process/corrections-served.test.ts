/**
 * Corrections as a running server serves them: verdicts that go from
 * FLAGGED to CLEARED and back, on every serving thread, through restarts,
 * a SIGKILL and a compaction, with watchlist events.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { TSchema } from '@sinclair/typebox';
import { KeyAdmin } from '../../src/access/key-admin.js';
import { FileKeyBackend, keyFilePath } from '../../src/access/key-file.js';
import { ClearanceChangeSchema, ClearanceConflictSchema, ClearanceListSchema, ClearanceSchema, RetractionOutcomeSchema } from '../../src/api/admin-schemas.js';
import { EvidenceReceiptSchema } from '../../src/api/schemas.js';
import type { DataDir } from '../../src/common/data-dir.js';
import { evidence, getText, ingest, ndjson, tempDataDir, until, versionsByThread, type EvidenceInput } from '../helpers.js';
import { assertSchema } from '../schema-check.js';
import { runCli, startServer, type RunningServer } from '../server-process.js';
import { startReceiver } from '../webhook-receiver.js';

const THREADS = 2;

interface Served {
  readonly t: { readonly dir: DataDir; readonly root: string };
  readonly server: RunningServer;
  readonly key: string;
  call(path: string, options?: { method?: string; body?: unknown; schema?: TSchema }): Promise<{ status: number; body: Record<string, unknown> }>;
  /** The status every serving thread answers for `upi`, asked over new connections. */
  statuses(upi: string): Promise<Set<string>>;
  /** Evidence sent over HTTP, served when answered. */
  send(items: readonly EvidenceInput[]): Promise<Record<string, unknown>>;
  /** SIGKILL the server, and start it again on the same data directory. */
  killAndRestart(): Promise<void>;
}

/** A server on a data directory holding `items`, and a key with every scope; stopped and removed afterwards. */
async function withServer(items: readonly EvidenceInput[], work: (s: Served) => Promise<void>, args: readonly string[] = []): Promise<void> {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, items);
  const { key } = await new KeyAdmin(new FileKeyBackend(keyFilePath(t.dir))).create({ name: 'ops', plan: 'default', limits: null, scopes: ['screen', 'ingest', 'admin'] });
  const start = () => startServer(t.dir.root, { args: ['--threads', String(THREADS), ...args] });
  const served = { server: await start() };
  const auth = { authorization: `Bearer ${key}` };
  const s: Served = {
    t,
    get server() {
      return served.server;
    },
    key,
    async call(path, options = {}) {
      const response = await fetch(`${served.server.base}${path}`, {
        method: options.method ?? 'GET',
        headers: { ...auth, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      });
      const body = (await response.json()) as Record<string, unknown>;
      if (response.status < 300 && options.schema !== undefined) assertSchema(options.schema, body);
      return { status: response.status, body };
    },
    async statuses(upi) {
      const seen = new Set<string>();
      for (let i = 0; i < 4 * THREADS; i++) {
        const answer = await getText(`${served.server.base}/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { headers: auth });
        seen.add((JSON.parse(answer.body) as { status: string }).status);
      }
      return seen;
    },
    async send(sent) {
      const response = await fetch(`${served.server.base}/v1/admin/evidence`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: ndjson(sent) });
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(response.status, 200, JSON.stringify(body));
      assertSchema(EvidenceReceiptSchema, body);
      return body;
    },
    async killAndRestart() {
      served.server.child.kill('SIGKILL');
      await once(served.server.child, 'close');
      served.server = await start();
    },
  };
  try {
    await work(s);
  } finally {
    await served.server.stop();
    await t.cleanup();
  }
}

/** Every serving thread serves `version` (or a later one). */
async function everyThreadServes(s: Served, version: string): Promise<void> {
  const versions = await versionsByThread(s.server.base, THREADS);
  for (const [thread, served] of versions) assert.ok(served === version || served > version, `thread ${thread} serves ${served}, not ${version}`);
}

const now = () => new Date().toISOString();

test('a retraction: FLAGGED to CLEARED on every serving thread when answered; the id sent again stays a duplicate', { timeout: 120_000 }, () =>
  withServer(
    [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' }), evidence('both@ybl', 'https://t.me/b', { evidence_id: 'b1' }), evidence('both@ybl', 'https://t.me/c', { evidence_id: 'b2' })],
    async (s) => {
      assert.deepEqual(await s.statuses('mule@ybl'), new Set(['FLAGGED']));
      const retracted = await s.call('/v1/admin/retractions', { method: 'POST', body: { evidence_ids: ['m1', 'b1', 'zz'], reason: 'reported by mistake' }, schema: RetractionOutcomeSchema });
      assert.equal(retracted.status, 200, JSON.stringify(retracted.body));
      assert.equal(retracted.body.retracted, 2);
      assert.deepEqual(retracted.body.unknown, ['zz']);
      await everyThreadServes(s, String(retracted.body.data_version));
      assert.deepEqual(await s.statuses('mule@ybl'), new Set(['CLEARED']));
      const both = await s.call('/v1/verify/upi?upi=both@ybl');
      assert.equal(both.body.status, 'FLAGGED');
      assert.equal(both.body.evidence_count, 1);

      const again = await s.send([evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1', captured_at: now() })]);
      assert.equal(again.duplicates, 1, 'a retracted id sent again is a duplicate');
      assert.deepEqual(await s.statuses('mule@ybl'), new Set(['CLEARED']));
      const twice = await s.call('/v1/admin/retractions', { method: 'POST', body: { evidence_ids: ['m1'], reason: 'again' }, schema: RetractionOutcomeSchema });
      assert.equal(twice.body.already_retracted, 1);
    },
  ),
);

test('a clearance: CLEARED when answered; evidence from a new url flags the VPA again, from its old urls not; ending it counts the evidence again', { timeout: 120_000 }, () =>
  withServer([evidence('shop@ybl', 'https://t.me/old', { evidence_id: 's1' }), evidence('shop@ybl', 'https://t.me/older', { evidence_id: 's2' })], async (s) => {
    const made = await s.call('/v1/admin/clearances', { method: 'POST', body: { upi: 'Shop@ybl', reason: 'merchant verified', reference: 'CASE-1' }, schema: ClearanceChangeSchema });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    await everyThreadServes(s, String(made.body.data_version));
    assert.deepEqual(await s.statuses('shop@ybl'), new Set(['CLEARED']));

    const conflict = await s.call('/v1/admin/clearances', { method: 'POST', body: { upi: 'shop@ybl', reason: 'again' } });
    assert.equal(conflict.status, 409);
    assertSchema(ClearanceConflictSchema, conflict.body);
    assert.equal(conflict.body.clearance_id, made.body.id);

    const createdAt = Date.parse(String(made.body.created_at));
    await s.send([
      evidence('shop@ybl', 'https://t.me/old', { evidence_id: 's3', captured_at: now() }),
      evidence('shop@ybl', 'https://t.me/new-before', { evidence_id: 's4', captured_at: new Date(createdAt - 1000).toISOString() }),
    ]);
    assert.deepEqual(await s.statuses('shop@ybl'), new Set(['CLEARED']), 'an old url, or a capture before the clearance: suppressed');
    await s.send([evidence('shop@ybl', 'https://t.me/new', { evidence_id: 's5', captured_at: now() })]);
    assert.deepEqual(await s.statuses('shop@ybl'), new Set(['FLAGGED']), 'a new url captured after it: counts');
    const flagged = await s.call('/v1/verify/upi?upi=shop@ybl');
    assert.equal(flagged.body.evidence_count, 1, 'only the new item counts');

    const ended = await s.call(`/v1/admin/clearances/${String(made.body.id)}`, { method: 'DELETE', schema: ClearanceChangeSchema });
    assert.equal(ended.status, 200);
    await until('every item counts again', 5_000, async () => (await s.call('/v1/verify/upi?upi=shop@ybl')).body.evidence_count === 5);
    const got = await s.call(`/v1/admin/clearances/${String(made.body.id)}`, { schema: ClearanceSchema });
    assert.equal(got.body.ended_by, ended.body.ended_by);
  }),
);

test('clearances are paged in the order made; a VPA no evidence names may be cleared', { timeout: 120_000 }, () =>
  withServer([evidence('a@ybl', 'https://t.me/a', { evidence_id: 'a1' })], async (s) => {
    const ids: string[] = [];
    for (const upi of ['a@ybl', 'b@ybl', 'c@ybl', 'd@ybl', 'e@ybl']) {
      const made = await s.call('/v1/admin/clearances', { method: 'POST', body: { upi, reason: 'verified' }, schema: ClearanceChangeSchema });
      assert.equal(made.status, 201);
      ids.push(String(made.body.id));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await s.call(`/v1/admin/clearances?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`, { schema: ClearanceListSchema });
      seen.push(...(page.body.clearances as { id: string }[]).map((c) => c.id));
      cursor = page.body.next_cursor as string | null;
    } while (cursor !== null);
    assert.deepEqual(seen, ids);
    const one = await s.call('/v1/admin/clearances?upi=C@YBL', { schema: ClearanceListSchema });
    assert.deepEqual((one.body.clearances as { id: string }[]).map((c) => c.id), [ids[2]]);
  }),
);

test('corrections survive a SIGKILL, a restart and a compaction', { timeout: 180_000 }, () =>
  withServer([evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' }), evidence('shop@ybl', 'https://t.me/b', { evidence_id: 's1' })], async (s) => {
    assert.equal((await s.call('/v1/admin/retractions', { method: 'POST', body: { evidence_ids: ['m1'], reason: 'wrong' } })).status, 200);
    assert.equal((await s.call('/v1/admin/clearances', { method: 'POST', body: { upi: 'shop@ybl', reason: 'verified' } })).status, 201);
    await s.killAndRestart();
    assert.deepEqual(await s.statuses('mule@ybl'), new Set(['CLEARED']), 'retraction after a SIGKILL');
    assert.deepEqual(await s.statuses('shop@ybl'), new Set(['CLEARED']), 'clearance after a SIGKILL');

    // Something for the compaction to fold in, so that it builds a snapshot of its own.
    await s.send([evidence('other@ybl', 'https://t.me/c', { evidence_id: 'o1' })]);
    const compaction = await s.call('/v1/admin/compaction', { method: 'POST' });
    assert.equal(compaction.status, 202);
    const before = String(compaction.body.snapshot);
    await until('a new snapshot is served', 60_000, async () => String((await s.call('/readyz')).body.snapshot) !== before);
    assert.deepEqual(await s.statuses('mule@ybl'), new Set(['CLEARED']), 'retraction after a compaction');
    assert.deepEqual(await s.statuses('shop@ybl'), new Set(['CLEARED']), 'clearance after a compaction');
  }),
);

test('a SIGKILL while retractions are being taken loses none that was acknowledged', { timeout: 180_000 }, () =>
  withServer(
    Array.from({ length: 40 }, (_, i) => evidence(`k${i}@ybl`, `https://t.me/k${i}`, { evidence_id: `k${i}` })),
    async (s) => {
      const acknowledged: number[] = [];
      // Two streams of retractions, each sending the next once the one before is answered: the server
      // takes changes sent together in one serve, so forty sent at once may all be answered before a
      // kill lands. Paced, the kill comes with one or two still being taken.
      let next = 0;
      let killing = false;
      const stream = async (): Promise<void> => {
        while (!killing && next < 40) {
          const i = next++;
          const answer = await s.call('/v1/admin/retractions', { method: 'POST', body: { evidence_ids: [`k${i}`], reason: 'wrong page' } }).catch(() => null);
          if (answer?.status === 200) acknowledged.push(i);
        }
      };
      const sent = [stream(), stream()];
      await until('some retractions acknowledged', 60_000, () => acknowledged.length >= 3);
      killing = true;
      // Killed with the streams' last ones still being taken: their answers never come.
      await s.killAndRestart();
      await Promise.allSettled(sent);
      assert.ok(acknowledged.length < 40, 'the server was killed while retractions were being taken');
      for (const i of acknowledged) assert.deepEqual(await s.statuses(`k${i}@ybl`), new Set(['CLEARED']), `k${i}, acknowledged before the kill`);
      // What was not acknowledged may or may not have been stored; sent again, each is retracted once in all.
      const again = await s.call('/v1/admin/retractions', { method: 'POST', body: { evidence_ids: Array.from({ length: 40 }, (_, i) => `k${i}`), reason: 'wrong page' } });
      assert.equal(again.status, 200);
      assert.equal(Number(again.body.retracted) + Number(again.body.already_retracted), 40);
      assert.ok(Number(again.body.already_retracted) >= acknowledged.length);
      for (let i = 0; i < 40; i++) assert.deepEqual(await s.statuses(`k${i}@ybl`), new Set(['CLEARED']), `k${i}`);
    },
  ),
);

test('upi-risk retract beside a running server is served without a restart, and the watchlist holding the VPA gets its event', { timeout: 120_000 }, async () => {
  const receiver = await startReceiver();
  try {
    await withServer(
      [evidence('mule@ybl', 'https://t.me/a', { evidence_id: 'm1' })],
      async (s) => {
        const created = await s.call('/v1/watchlists', { method: 'POST', body: { name: 'payees', webhook_url: receiver.url } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.equal((await s.call(`/v1/watchlists/${String(created.body.id)}/vpas`, { method: 'PUT', body: { upis: ['mule@ybl'] } })).status, 200);

        const retracted = await runCli(['retract', '--data-dir', s.t.dir.root, '--reason', 'reported by mistake', 'm1']);
        assert.equal(retracted.code, 0, retracted.stderr);
        assert.equal((JSON.parse(retracted.stdout) as { retracted: number }).retracted, 1);
        await until('CLEARED on every thread', 5_000, async () => {
          const seen = await s.statuses('mule@ybl');
          return seen.size === 1 && seen.has('CLEARED');
        });

        await until('the watchlist event is delivered', 30_000, () => receiver.received.length > 0);
        const event = JSON.parse(receiver.received[0]!.body) as { upi: string; before: { status: string }; after: { status: string } };
        assert.equal(event.upi, 'mule@ybl');
        assert.equal(event.before.status, 'FLAGGED');
        assert.equal(event.after.status, 'CLEARED');
      },
      ['--webhook-allow', '127.0.0.1'],
    );
  } finally {
    await receiver.close();
  }
});
