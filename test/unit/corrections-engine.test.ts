import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import type { ServingView } from '../../src/engine/serving-view.js';
import { TEST_SCORED_AT, buildInProcess, evidence, ingest, tempDataDir, type EvidenceInput } from '../helpers.js';
import { ASKED, evidenceArb, settledFields, urlsOf } from '../delta-fixtures.js';
import { MemoryCorrections } from '../correction-fixtures.js';
import { silentLogger, type Logger } from '../../src/common/logger.js';

const DAY = 86_400_000;

async function startService(first: readonly EvidenceInput[], corrections: MemoryCorrections, logger: Logger = silentLogger) {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, first);
  corrections.stored(first);
  const start = () => SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 2, scoredAt: () => TEST_SCORED_AT, corrections, logger });
  const s = {
    service: await start(),
    ingest: async (items: readonly EvidenceInput[]) => {
      await ingest(t.dir, t.root, items);
      corrections.stored(items);
      await s.service.refresh();
    },
    /** A new server over the same data directory and corrections: it serves the newest snapshot with what came after. */
    restart: async () => {
      await s.service.close();
      s.service = await start();
    },
    close: async () => {
      await s.service.close();
      await t.cleanup();
    },
  };
  return s;
}

/** Every VPA asked about answers as a full build of the counting evidence: the fields the delta settles, or with `every`, all but the cluster id. */
function assertAnswersAsRebuilt(view: ServingView, corrections: MemoryCorrections, every: boolean, context: string): void {
  const rebuilt = buildInProcess(corrections.counting());
  // A url's category is settled by the delta only for urls new in it, and not on urls a correction touched.
  const baseUrls = new Set([...urlsOf(view.base), ...corrections.urlsCorrected()]);
  for (const upi of ASKED) {
    const served = view.verdict(upi);
    const expected = rebuilt.verdict(upi);
    if (every) assert.deepEqual({ ...served, cluster_id: null }, { ...expected, cluster_id: null }, `${context}: ${upi}`);
    else assert.deepEqual(settledFields(served, baseUrls), settledFields(expected, baseUrls), `${context}: ${upi}`);
  }
}

test('a retraction takes an item back at once; a resend of its id stays a duplicate; a compaction agrees', async () => {
  const corrections = new MemoryCorrections();
  const s = await startService(
    [evidence('a@ybl', 'https://x.example', { evidence_id: 'x1' }), evidence('a@ybl', 'https://y.example', { evidence_id: 'y1' }), evidence('b@ybl', 'https://y.example', { evidence_id: 'b1' })],
    corrections,
  );
  try {
    const located = await s.service.locate(['x1', 'nope', 'b1']);
    assert.deepEqual(Object.fromEntries(located), { x1: 'a@ybl', b1: 'b@ybl' });
    await s.service.apply(corrections.state(), corrections.retract(located));
    const view = s.service.view;
    assert.equal(view.verdict('a@ybl').evidence_count, 1);
    assert.deepEqual(view.verdict('a@ybl').sources.map((x) => x.url), ['https://y.example']);
    assert.equal(view.verdict('b@ybl').status, 'CLEARED');
    assert.deepEqual(view.verdict('b@ybl'), buildInProcess([]).verdict('b@ybl'));
    await s.ingest([evidence('b@ybl', 'https://z.example', { evidence_id: 'b1' })]);
    assert.equal(s.service.view.verdict('b@ybl').status, 'CLEARED', 'the retracted id sent again is a duplicate');
    assertAnswersAsRebuilt(s.service.view, corrections, false, 'before compaction');
    await s.service.compact();
    corrections.compacted();
    assertAnswersAsRebuilt(s.service.view, corrections, true, 'after compaction');
    assert.equal(s.service.view.delta, null);
    assert.deepEqual(
      (await s.service.evidenceOf('a@ybl')).map((i) => i.evidence_id),
      ['y1'],
    );
  } finally {
    await s.close();
  }
});

test('a clearance suppresses what was known; a new url flags again; its end restores the rest', async () => {
  const corrections = new MemoryCorrections();
  const s = await startService([evidence('shop@ybl', 'https://copied.example', { evidence_id: 's1', captured_at: '2026-06-01T00:00:00Z' })], corrections);
  try {
    const clearedAt = Date.parse('2026-07-01T00:00:00Z');
    await s.service.apply(corrections.state(), corrections.clear('shop@ybl', clearedAt));
    assert.equal(s.service.view.verdict('shop@ybl').status, 'CLEARED');
    // Later evidence from the url it was cleared of does not count; from a new url it does.
    await s.ingest([evidence('shop@ybl', 'https://copied.example', { evidence_id: 's2', captured_at: '2026-08-01T00:00:00Z' })]);
    assert.equal(s.service.view.verdict('shop@ybl').status, 'CLEARED');
    await s.ingest([evidence('shop@ybl', 'https://new-scam.example', { evidence_id: 's3', captured_at: '2026-08-02T00:00:00Z' })]);
    const flagged = s.service.view.verdict('shop@ybl');
    assert.equal(flagged.status, 'FLAGGED');
    assert.deepEqual(flagged.sources.map((x) => x.url), ['https://new-scam.example'], 'no trace of the cleared evidence');
    assert.equal(flagged.evidence_count, 1);
    assertAnswersAsRebuilt(s.service.view, corrections, false, 'cleared');
    await s.service.compact();
    corrections.compacted();
    assertAnswersAsRebuilt(s.service.view, corrections, true, 'cleared, compacted');
    await s.service.apply(corrections.state(), corrections.endClearance('shop@ybl'));
    assert.equal(s.service.view.verdict('shop@ybl').evidence_count, 3);
    assertAnswersAsRebuilt(s.service.view, corrections, false, 'ended');
  } finally {
    await s.close();
  }
});

test('a clearance ended on a url nothing else names shows that url with its own category, not one made up', async () => {
  const corrections = new MemoryCorrections();
  const items = [
    evidence('other@ybl', 'https://other.example', { evidence_id: 'o1', source_category: 'scam', captured_at: '2026-06-01T00:00:00Z' }),
    evidence('merchant@ybl', 'https://only-here.example', { evidence_id: 'm1', source_category: 'telegram', captured_at: '2026-06-01T00:00:00Z' }),
  ];
  const s = await startService(items, corrections);
  try {
    await s.service.apply(corrections.state(), corrections.clear('merchant@ybl', Date.parse('2026-07-01T00:00:00Z')));
    // Built under the clearance: the snapshot knows neither the VPA nor its url.
    await s.service.compact();
    corrections.compacted();
    assert.equal(s.service.view.verdict('merchant@ybl').status, 'CLEARED');
    await s.service.apply(corrections.state(), corrections.endClearance('merchant@ybl'));
    const restored = s.service.view.verdict('merchant@ybl');
    assert.deepEqual(
      restored.sources.map((x) => [x.url, x.category]),
      [['https://only-here.example', 'telegram']],
    );
    assert.deepEqual(restored, buildInProcess(corrections.counting()).verdict('merchant@ybl'), 'as a full build of the same evidence');
  } finally {
    await s.close();
  }
});

type Step =
  | { readonly kind: 'ingest'; readonly items: readonly EvidenceInput[] }
  | { readonly kind: 'retract'; readonly ids: readonly string[] }
  | { readonly kind: 'clear'; readonly upi: string; readonly daysAgo: number }
  | { readonly kind: 'end'; readonly upi: string }
  | { readonly kind: 'compact' }
  | { readonly kind: 'restart' }
  | { readonly kind: 'ingest-and-retract'; readonly items: readonly EvidenceInput[]; readonly ids: readonly string[] };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('ingest' as const), items: fc.array(evidenceArb, { minLength: 1, maxLength: 6 }) }),
  fc.record({ kind: fc.constant('retract' as const), ids: fc.array(fc.integer({ min: 1, max: 44 }).map((n) => `id-${n}`), { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('clear' as const), upi: fc.constantFrom(...ASKED), daysAgo: fc.integer({ min: -2, max: 3 * 365 }) }),
  fc.record({ kind: fc.constant('end' as const), upi: fc.constantFrom(...ASKED) }),
  fc.constant({ kind: 'compact' as const }),
  fc.constant({ kind: 'restart' as const }),
  fc.record({
    kind: fc.constant('ingest-and-retract' as const),
    items: fc.array(evidenceArb, { minLength: 1, maxLength: 4 }),
    ids: fc.array(fc.integer({ min: 1, max: 44 }).map((n) => `id-${n}`), { minLength: 1, maxLength: 3 }),
  }),
);

test('snapshot, delta and corrections answer as a full build of the evidence that counts, after every step', async () => {
  // A restart starts from the carry the stop kept (kept-carry.ts), with what the delta served handed on again: counted over the runs.
  const kept = { used: 0, refused: [] as unknown[] };
  const logger: Logger = {
    ...silentLogger,
    info: (_fields, message) => {
      if (message.startsWith('stored evidence read from the carry kept')) kept.used++;
    },
    warn: (fields, message) => {
      if (message.startsWith('the carry kept at the last stop') || message.startsWith('the carry was not kept')) kept.refused.push({ message, ...fields });
    },
  };
  await fc.assert(
    fc.asyncProperty(fc.array(evidenceArb, { minLength: 1, maxLength: 8 }), fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (first, steps) => {
      const corrections = new MemoryCorrections();
      const s = await startService(first, corrections, logger);
      try {
        for (const [i, step] of steps.entries()) {
          let every = false;
          if (step.kind === 'ingest') await s.ingest(step.items);
          else if (step.kind === 'retract') {
            const located = await s.service.locate(step.ids);
            await s.service.apply(corrections.state(), corrections.retract(located));
          } else if (step.kind === 'clear') {
            if (corrections.state().clearances.has(step.upi)) continue;
            await s.service.apply(corrections.state(), corrections.clear(step.upi, TEST_SCORED_AT - step.daysAgo * DAY));
          } else if (step.kind === 'end') {
            if (!corrections.state().clearances.has(step.upi)) continue;
            await s.service.apply(corrections.state(), corrections.endClearance(step.upi));
          } else if (step.kind === 'ingest-and-retract') {
            // Evidence read while a correction reads the same VPAs: neither may count it twice, nor lose it.
            await Promise.all([
              s.ingest(step.items),
              (async () => {
                const located = await s.service.locate(step.ids);
                await s.service.apply(corrections.state(), corrections.retract(located));
              })(),
            ]);
            await s.service.refresh();
          } else if (step.kind === 'restart') {
            await s.restart();
          } else {
            await s.service.compact();
            corrections.compacted();
            every = true;
          }
          assertAnswersAsRebuilt(s.service.view, corrections, every, `step ${i} (${step.kind})`);
        }
      } finally {
        await s.close();
      }
    }),
    { numRuns: 25 },
  );
  assert.deepEqual(kept.refused, []);
  assert.ok(kept.used > 0, 'some restarts started from a kept carry');
});
