/**
 * The rules every record of served data versions keeps, as one suite run
 * against each: the data directory's journal (test/unit/version-journal.test.ts)
 * and the fleet store's table (test/process/store-served-versions.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatIso } from '../src/common/time.js';
import type { ServedState, ServedVersions } from '../src/history/served-versions.js';

/** A record to test, and a way to open the same record again as a new instance. */
export interface OpenedVersions {
  readonly versions: ServedVersions;
  reopen(): Promise<ServedVersions>;
  close(): Promise<void>;
}

const T0 = Date.parse('2026-03-03T10:00:00.000Z');
const S1 = '20260303T095500000Z-00a001';
const S2 = '20260303T101500000Z-00a002';

/** States in the order a server serves them: a snapshot alone, merges, then a compaction's snapshot. */
const SERVED: readonly (readonly [ServedState, number])[] = [
  [{ snapshot: S1, position: 0 }, T0],
  [{ snapshot: S1, position: 5 }, T0 + 1_000],
  [{ snapshot: S1, position: 9 }, T0 + 2_500],
  [{ snapshot: S2, position: 0 }, T0 + 60_000],
  [{ snapshot: S2, position: 12 }, T0 + 61_234],
];

const iso = (ms: number) => formatIso(ms);

export function servedVersionsCases(name: string, open: () => Promise<OpenedVersions>): void {
  const cases: [string, (o: OpenedVersions) => Promise<void>][] = [
    [
      'each version served runs from when it was served until the next one was',
      async ({ versions }) => {
        for (const [state, at] of SERVED) await versions.record(state, at);
        for (const [i, [state, at]] of SERVED.entries()) {
          const found = await versions.find(state);
          const next = SERVED[i + 1];
          assert.deepEqual(found, {
            version: state.position === 0 ? state.snapshot : `${state.snapshot}+${state.position}`,
            from: iso(at),
            until: next === undefined ? null : iso(next[1]),
            snapshot: state.snapshot,
            position: state.position,
          });
        }
      },
    ],
    [
      'a version never served is not found',
      async ({ versions }) => {
        for (const [state, at] of SERVED) await versions.record(state, at);
        for (const state of [
          { snapshot: S1, position: 7 },
          { snapshot: S2, position: 5 },
          { snapshot: S1, position: 12 },
          { snapshot: '20260303T120000000Z-00a003', position: 0 },
          { snapshot: S1, position: 13 },
        ]) {
          assert.equal(await versions.find(state), null, JSON.stringify(state));
        }
      },
    ],
    [
      'an empty record finds nothing',
      async ({ versions }) => {
        assert.equal(await versions.find({ snapshot: S1, position: 0 }), null);
        assert.equal(await versions.find({ snapshot: S1, position: 5 }), null);
        assert.equal(versions.unavailable, null);
      },
    ],
    [
      'what was recorded is found by another instance opened later',
      async (o) => {
        for (const [state, at] of SERVED) await o.versions.record(state, at);
        await o.versions.close();
        const again = await o.reopen();
        for (const [i, [state, at]] of SERVED.entries()) {
          const found = await again.find(state);
          assert.equal(found?.from, iso(at));
          if (i + 1 < SERVED.length) assert.equal(found?.until, iso(SERVED[i + 1]![1]));
        }
      },
    ],
  ];
  for (const [title, run] of cases) {
    test(`${name}: ${title}`, async () => {
      const opened = await open();
      try {
        await run(opened);
      } finally {
        await opened.close();
      }
    });
  }
}
