import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { copyToSharedMemory } from '../../src/engine/snapshot-format/shared-memory.js';
import type { SnapshotData } from '../../src/engine/snapshot-data.js';
import { ReleaseWatch, RetiredSnapshots } from '../../src/http/snapshot-release.js';
import { startIncrementalMarking } from '../../src/common/collector.js';
import { buildInProcess, evidence } from '../helpers.js';

// A replaced snapshot is let go by the main thread only after every serving
// thread's collector has dropped its references, so the unmapping of its
// memory never lands on a serving thread.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A snapshot with its own id, in shared memory as serving threads receive it. */
function snapshot(id: string): SnapshotData {
  const data = buildInProcess([evidence('a@ybl', 'https://u.example'), evidence('b@ybl', 'https://u.example')]).data;
  return copyToSharedMemory({ ...data, meta: { ...data.meta, id } });
}

test('a serving thread reports a snapshot once its collector has reclaimed every buffer of it', async () => {
  const released: string[] = [];
  const watch = new ReleaseWatch((id) => released.push(id));
  let old: SnapshotData | null = snapshot('old');
  const kept = snapshot('kept');
  watch.watch(old);
  watch.watch(kept);
  old = null;
  for (let i = 0; i < 20 && released.length === 0; i++) {
    gc();
    // Finalization callbacks run as tasks after the collection.
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(released, ['old']);
  assert.equal(kept.meta.id, 'kept', 'a snapshot still referenced is not reported');
});

/** Wait until `done()` or `ms` pass, checking every 20 ms. */
async function waitFor(done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

test('an idle serving thread collects a replaced snapshot by itself, without waiting for its collector', async () => {
  const released: string[] = [];
  let collections = 0;
  const watch = new ReleaseWatch((id) => released.push(id), {
    collect: () => {
      collections++;
      gc();
    },
    answered: () => 0,
    inFlight: () => 0,
    forceAfterMs: 60_000,
  });
  let old: SnapshotData | null = snapshot('idle-old');
  watch.watch(old);
  old = null;
  await waitFor(() => released.length > 0, 5_000);
  assert.deepEqual(released, ['idle-old']);
  assert.equal(collections, 1, 'one collection, at the first idle check');
  assert.deepEqual(watch.outstanding(), []);
});

test('a busy serving thread waits for forceAfterMs before it collects', async () => {
  let answered = 0;
  let collections = 0;
  const busy = new ReleaseWatch(() => {}, { collect: () => collections++, answered: () => answered++, inFlight: () => 0, forceAfterMs: 60_000 });
  // Kept referenced, as by a slow request: a collection elsewhere must not free it and end the watch.
  const busySnapshot = snapshot('busy');
  busy.watch(busySnapshot);
  await new Promise((resolve) => setTimeout(resolve, 800));
  assert.equal(collections, 0, 'requests arrived in every interval: no collection yet');

  let forcedCollections = 0;
  const forced = new ReleaseWatch(() => {}, { collect: () => forcedCollections++, answered: () => answered++, inFlight: () => 0, forceAfterMs: 0 });
  const forcedSnapshot = snapshot('forced');
  forced.watch(forcedSnapshot);
  await waitFor(() => forcedCollections > 0, 5_000);
  assert.equal(forcedCollections, 1, 'past forceAfterMs the busy thread collects');
  assert.deepEqual([busy.outstanding(), forced.outstanding()], [[busySnapshot.meta.id], [forcedSnapshot.meta.id]]);
});

test('a busy serving thread frees a replaced snapshot by incremental marking, without pausing for a full collection', async () => {
  const released: string[] = [];
  let answered = 0;
  let collections = 0;
  let markings = 0;
  const watch = new ReleaseWatch((id) => released.push(id), {
    collect: () => collections++,
    startMarking: () => {
      markings++;
      startIncrementalMarking();
    },
    answered: () => answered++,
    inFlight: () => 0,
    forceAfterMs: 60_000,
  });
  // Requests keep coming: the thread allocates as it answers them.
  let sink: unknown;
  const load = setInterval(() => {
    for (let i = 0; i < 1000; i++) sink = { i, text: `answer ${i}` };
  }, 1);
  try {
    let old: SnapshotData | null = snapshot('marked-old');
    watch.watch(old);
    old = null;
    await waitFor(() => released.length > 0, 10_000);
  } finally {
    clearInterval(load);
  }
  assert.ok(sink !== undefined);
  assert.deepEqual(released, ['marked-old'], 'the marking V8 started freed it');
  assert.equal(collections, 0, 'no full collection: forceAfterMs has not passed');
  assert.ok(markings >= 1);
  assert.deepEqual(watch.outstanding(), []);
});

test('busy serving threads take turns: one given markAfterMs starts marking no sooner than that after the swap', async () => {
  const markedAt: Record<string, number> = {};
  let answered = 0;
  const watchers = [0, 700].map(
    (markAfterMs) =>
      new ReleaseWatch(() => {}, {
        collect: () => {},
        startMarking: () => {
          markedAt[markAfterMs] ??= performance.now();
        },
        answered: () => answered++,
        inFlight: () => 0,
        forceAfterMs: 60_000,
        markAfterMs,
      }),
  );
  // Kept referenced, as by slow requests, so that neither watch ends before the checks.
  const held = [snapshot('turn-0'), snapshot('turn-1')];
  const swappedAt = performance.now();
  for (const [i, watch] of watchers.entries()) watch.watch(held[i]!);
  await waitFor(() => markedAt[700] !== undefined, 5_000);
  assert.ok(markedAt[0]! < markedAt[700]!, 'the first thread marked first');
  assert.ok(markedAt[700]! - swappedAt >= 700, `the second waited its turn: ${markedAt[700]! - swappedAt} ms after`);
  assert.deepEqual(
    watchers.map((watch) => watch.outstanding()),
    held.map((data) => [data.meta.id]),
  );
});

test('a swap while an older snapshot stays held gets its own marking before any forced collection', { timeout: 30_000 }, async () => {
  const released: string[] = [];
  let answered = 0;
  let collections = 0;
  let markings = 0;
  const watch = new ReleaseWatch((id) => released.push(id), {
    collect: () => {
      collections++;
      gc();
    },
    startMarking: () => {
      markings++;
      startIncrementalMarking();
    },
    answered: () => answered++,
    inFlight: () => 0,
    forceAfterMs: 3000,
  });
  const held = snapshot('held-by-a-slow-request');
  let next: SnapshotData | null = snapshot('next');
  watch.watch(held);
  await waitFor(() => collections > 0, 10_000);
  assert.equal(collections, 1, 'the snapshot still referenced was collected for, once forceAfterMs passed');
  // Close to forceAfterMs after that collection, and well after the last marking started for the held
  // snapshot (at 0.5, 0.75, 1.25 and 2.25 s): the next snapshot must not inherit the collection's clock.
  await new Promise((resolve) => setTimeout(resolve, 2850));
  const markingsBefore = markings;
  watch.watch(next);
  next = null;
  // Had it inherited the clock, the thread would pause for a full collection within the next 0.4 s.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(collections, 1, 'no forced collection: forceAfterMs counts from this swap');
  assert.ok(markings > markingsBefore, 'marking was started for it');
  await waitFor(() => released.includes('next'), 10_000);
  assert.deepEqual(released, ['next'], 'and freed it');
  assert.equal(held.meta.id, 'held-by-a-slow-request');
});

test('a request in flight is not idleness: the thread waits until it is answered', async () => {
  let inFlight = 1;
  let collections = 0;
  const watch = new ReleaseWatch(() => {}, { collect: () => collections++, answered: () => 0, inFlight: () => inFlight, forceAfterMs: 60_000 });
  const held = snapshot('in-flight');
  watch.watch(held);
  await new Promise((resolve) => setTimeout(resolve, 800));
  assert.equal(collections, 0, 'a slow request still answering from the old snapshot');
  inFlight = 0;
  await waitFor(() => collections > 0, 5_000);
  assert.equal(collections, 1);
  assert.deepEqual(watch.outstanding(), [held.meta.id]);
});

test('a replaced snapshot that stays reachable is collected again, further and further apart', async () => {
  const at: number[] = [];
  const watch = new ReleaseWatch(() => {}, { collect: () => at.push(performance.now()), answered: () => 0, inFlight: () => 0, forceAfterMs: 60_000 });
  const kept = snapshot('still-referenced');
  watch.watch(kept);
  await waitFor(() => at.length >= 3, 10_000);
  assert.ok(at.length >= 3, 'it keeps trying');
  const first = at[1]! - at[0]!;
  const second = at[2]! - at[1]!;
  // Checks fall on a 250 ms grid: the waits are 500 then 1000 ms, each late by up to a check.
  assert.ok(first >= 450, `first wait ${first} ms`);
  assert.ok(second >= 950 && second > first, `second wait ${second} ms after ${first} ms`);
  assert.deepEqual(watch.outstanding(), [kept.meta.id]);
});

/** Run `body` with setTimeout under node:test's mock clock (advanced by mock.timers.tick). */
function withMockedTimeouts(body: () => void): void {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    body();
  } finally {
    mock.timers.reset();
  }
}

test('the main thread holds a retired snapshot until every serving thread released it, then a grace period', () =>
  withMockedTimeouts(() => {
    const retired = new RetiredSnapshots(2);
    retired.retire(snapshot('s1'));
    retired.released('s1', 0);
    retired.released('s1', 0);
    assert.deepEqual(retired.held(), ['s1'], 'one of two threads still holds it, however often the other reports');
    retired.released('unknown', 1);
    retired.released('s1', 1);
    assert.deepEqual(retired.held(), ['s1'], 'kept while the last thread finishes sweeping');
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
  }));

test('at most maxHeld retired snapshots are kept: a thread that never collects cannot pile them up', () => {
  let collections = 0;
  const retired = new RetiredSnapshots(1, { maxHeld: 2, collect: () => collections++ });
  for (const id of ['s1', 's2', 's3']) retired.retire(snapshot(id));
  assert.deepEqual(retired.held(), ['s2', 's3']);
  assert.equal(collections, 1, 'the main thread collects what it let go of');
});

test('the main thread collects once it has let go of a released snapshot', () =>
  withMockedTimeouts(() => {
    let collections = 0;
    const retired = new RetiredSnapshots(1, { maxHeld: 2, collect: () => collections++ });
    retired.retire(snapshot('s1'));
    retired.released('s1', 0);
    assert.equal(collections, 0, 'not during the grace period');
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
    assert.equal(collections, 1);
  }));

test('a serving thread that stops holds nothing: no retired snapshot waits for it', () =>
  withMockedTimeouts(() => {
    const retired = new RetiredSnapshots(2);
    retired.retire(snapshot('s1'));
    retired.released('s1', 0);
    retired.exited(1);
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), [], 'let go without the stopped thread reporting');
    retired.retire(snapshot('s2'));
    retired.released('s2', 0);
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), [], 'a later snapshot waits for the running thread only');
  }));

test('a thread started in place of one that stopped is waited for by later snapshots only', () =>
  withMockedTimeouts(() => {
    const retired = new RetiredSnapshots(2);
    retired.retire(snapshot('before'));
    retired.exited(1);
    retired.started(1);
    retired.released('before', 0);
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), [], 'the new thread never had the snapshot retired before it started');
    retired.retire(snapshot('after'));
    retired.released('after', 0);
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), ['after'], 'a later one waits for the new thread too');
    retired.released('after', 1);
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
  }));

test('a snapshot retired when no serving thread runs is let go after the grace period', () =>
  withMockedTimeouts(() => {
    const retired = new RetiredSnapshots(1);
    retired.exited(0);
    retired.retire(snapshot('orphan'));
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
  }));

test('with reuse, a snapshot every serving thread has dropped is handed on at once, and one let go past maxHeld never is', () => {
  const handed: string[] = [];
  let collections = 0;
  const reuse = (data: SnapshotData) => {
    handed.push(data.meta.id);
    return true;
  };
  const retired = new RetiredSnapshots(2, { maxHeld: 2, collect: () => collections++, reuse });
  retired.retire(snapshot('s1'));
  retired.released('s1', 0);
  assert.deepEqual(handed, [], 'one thread may still read it');
  retired.released('s1', 1);
  assert.deepEqual(handed, ['s1'], 'no grace period: nothing has to be swept first');
  assert.deepEqual(retired.held(), []);
  assert.equal(collections, 0, 'its memory is kept for the next build: nothing to collect');
  // Three retired with none released: the oldest is let go while threads may read it.
  for (const id of ['s2', 's3', 's4']) retired.retire(snapshot(id));
  assert.deepEqual(retired.held(), ['s3', 's4']);
  retired.released('s2', 0);
  retired.released('s2', 1);
  assert.deepEqual(handed, ['s1'], 'a snapshot let go unreleased is never written over');
  // A thread that stops holds nothing: the other's report is the last one needed.
  retired.released('s3', 0);
  retired.exited(1);
  assert.deepEqual(handed, ['s1', 's3']);
});

test('a snapshot whose memory is not kept for reuse is let go after the grace period, as without reuse', () =>
  withMockedTimeouts(() => {
    let collections = 0;
    const offered: string[] = [];
    const retired = new RetiredSnapshots(1, {
      collect: () => collections++,
      reuse: (data) => {
        offered.push(data.meta.id);
        return false;
      },
    });
    retired.retire(snapshot('from-file'));
    retired.released('from-file', 0);
    assert.deepEqual(offered, ['from-file']);
    assert.deepEqual(retired.held(), ['from-file'], 'kept while the last thread finishes sweeping');
    mock.timers.tick(1000);
    assert.deepEqual(retired.held(), []);
    assert.equal(collections, 1);
  }));
