/**
 * Re-screening every watched VPA after the intelligence changes (watch/
 * rescreen.ts): 1,000,000 watched VPAs (half of them flagged in the
 * snapshot, half unknown to it) in one watchlist of a data directory's
 * store, screened against the snapshot (nothing changes), then against the
 * snapshot with a live delta that flags `--changed` of the unknown ones
 * (each makes an event, written to the journal with the new states). The
 * main thread's event-loop delay is sampled meanwhile: a pass runs in
 * slices, so its largest delay is one slice, not the pass.
 *
 *   node dist/bench/watch-rescreen.bench.js [--vpas 1000000] [--watched 1000000] [--changed 10000] [--json FILE]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { ServingView } from '../src/engine/serving-view.js';
import type { DeltaData } from '../src/engine/delta-data.js';
import type { SnapshotData } from '../src/engine/snapshot-data.js';
import type { ServedData, SwapEvent } from '../src/service/served-data.js';
import { mergeDelta } from '../src/builder/delta-merge.js';
import { RecordWriter, packFlags } from '../src/builder/record-codec.js';
import { FileWatchStore } from '../src/watch/file-watch-store.js';
import { Rescreener, type PassReport } from '../src/watch/rescreen.js';
import { stateOf } from '../src/watch/watchlist.js';
import { silentLogger } from '../src/common/logger.js';
import { fakeSnapshot } from '../test/fixtures/fake-snapshot.js';
import { knownVpas, unknownVpas } from './support/vpas.js';
import { wholeNumberOption, writeBenchReport } from './support/report.js';

const { values } = parseArgs({
  options: { vpas: { type: 'string', default: '1000000' }, watched: { type: 'string', default: '1000000' }, changed: { type: 'string', default: '10000' }, json: { type: 'string' } },
  strict: true,
});
const vpaCount = wholeNumberOption('vpas', values.vpas);
const watchedCount = wholeNumberOption('watched', values.watched);
const changedCount = wholeNumberOption('changed', values.changed);

/** What is served, switched by the bench: the rescreener listens to it as to a server's. */
class BenchServed {
  view: ServingView;
  readonly #delta: ((delta: DeltaData) => void)[] = [];
  constructor(view: ServingView) {
    this.view = view;
  }
  onDelta(listener: (delta: DeltaData) => void): void {
    this.#delta.push(listener);
  }
  onSwap(_listener: (event: SwapEvent) => void): void {}
  serve(view: ServingView, delta: DeltaData): void {
    this.view = view;
    for (const listener of this.#delta) listener(delta);
  }
}

/** A delta flagging `upis` (one evidence item each) over `base`. */
function deltaFlagging(base: SnapshotData, upis: readonly string[]): DeltaData {
  const writer = new RecordWriter();
  const capturedAt = base.meta.scoredAt - 86_400_000;
  upis.forEach((upi, i) => writer.append(0, i, capturedAt, packFlags(i % 4, i % 5, false), upi, `https://watch.example/${i % 5_000}`, `watch-${i}`));
  const { delta } = mergeDelta({ base, previous: null, inputs: [writer.finish()], files: [{ name: 'watch.ndjson', firstChunk: 0, endChunk: 1, storedAt: capturedAt }], now: Date.now() });
  return delta;
}

async function pass(rescreener: Rescreener, served: BenchServed, snapshot: SnapshotView, delta: DeltaData): Promise<PassReport & { maxLoopDelayMs: number }> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const done = new Promise<PassReport>((resolve) => rescreener.onPass(resolve));
  served.serve(new ServingView(snapshot, delta), delta);
  const report = await done;
  delay.disable();
  return { ...report, maxLoopDelayMs: Math.round(delay.max / 1e6) };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-watch-bench-'));
  try {
    const snapshot = new SnapshotView(fakeSnapshot(vpaCount));
    const flagged = [...new Set(knownVpas(snapshot.data, watchedCount, 1).map((v) => v.toLowerCase()))].slice(0, watchedCount / 2);
    // Drawn with room to spare: case variants of one VPA are one watched VPA.
    const unknown = [...new Set(unknownVpas(snapshot, Math.ceil((watchedCount - flagged.length) * 1.2), 2).map((v) => v.toLowerCase()))].slice(0, watchedCount - flagged.length);
    const base = new ServingView(snapshot);
    const store = await FileWatchStore.open(join(dir, 'journal.ndjson'));
    await store.create({ id: 'wl_bench', owner: 'key_000000000000', name: 'bench', webhook_url: 'https://hooks.example.com/x', filters: {}, secret: 'whsec_bench', created_at: new Date().toISOString() });
    const watched = [...flagged, ...unknown];
    const addStarted = performance.now();
    for (let i = 0; i < watched.length; i += 1000) {
      await store.addVpas('wl_bench', watched.slice(i, i + 1000).map((upi) => [upi, stateOf(base.batchItem(upi))] as const));
    }
    const addMs = Math.round(performance.now() - addStarted);
    const served = new BenchServed(base);
    const rescreener = new Rescreener(store, served as unknown as ServedData, { logger: silentLogger, onEvents: () => {} });
    rescreener.start();
    await rescreener.schedule();
    const rss = process.memoryUsage.rss();
    const unchanged = await pass(rescreener, served, snapshot, deltaFlagging(snapshot.data, []));
    const changed = await pass(rescreener, served, snapshot, deltaFlagging(snapshot.data, unknown.slice(0, changedCount)));
    await rescreener.close();
    await store.close();
    const rows = [
      { pass: 'nothing changed', watched: unchanged.watched, events: unchanged.events, ms: unchanged.ms, 'max loop delay ms': unchanged.maxLoopDelayMs },
      { pass: `${changedCount} flagged by the delta`, watched: changed.watched, events: changed.events, ms: changed.ms, 'max loop delay ms': changed.maxLoopDelayMs },
    ];
    console.log(`node ${process.version}, ${vpaCount} VPAs in the snapshot, ${watched.length} watched (added in ${addMs} ms, 1,000 a call), resident ${Math.round(rss / 2 ** 20)} MiB`);
    console.table(rows);
    if (changed.events !== changedCount) throw new Error(`expected ${changedCount} events, got ${changed.events}`);
    if (values.json !== undefined) writeBenchReport(values.json, 'watch-rescreen', vpaCount, { watched: watched.length, addMs, residentBytes: rss, rows });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
