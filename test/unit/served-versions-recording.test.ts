import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SnapshotService } from '../../src/service/snapshot-service.js';
import { dataVersion } from '../../src/engine/delta-data.js';
import type { DataVersionRecord, ServedAt, ServedState, ServedVersions } from '../../src/history/served-versions.js';
import { TEST_SCORED_AT, evidence, ingest, tempDataDir } from '../helpers.js';

/** A record in memory that notes, at each record, what the service served then. */
class NotedVersions implements ServedVersions {
  readonly recorded: string[] = [];
  readonly servedWhenRecorded: (string | null)[] = [];
  readonly unavailable = null;
  readonly lastAt = 0;
  service: SnapshotService | null = null;
  #highest = 0;
  readonly #alone = new Set<string>();

  get highestPosition(): number {
    return this.#highest;
  }

  record(state: ServedState): Promise<void> {
    this.recorded.push(dataVersion(state.snapshot, state.position));
    this.servedWhenRecorded.push(this.service?.view.version ?? null);
    this.#highest = Math.max(this.#highest, state.position);
    if (state.position === 0) this.#alone.add(state.snapshot);
    return Promise.resolve();
  }

  stateAt(): Promise<ServedAt | null> {
    return Promise.resolve(null);
  }

  firstAt(): Promise<number | null> {
    return Promise.resolve(null);
  }

  served(state: ServedState): boolean {
    return state.position === 0 ? this.#alone.has(state.snapshot) : state.position <= this.#highest;
  }

  find(): Promise<DataVersionRecord | null> {
    return Promise.resolve(null);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

test('every version served is recorded once, before it is served, in the order served, and a restart on a snapshot served alone takes a new one', async () => {
  const t = await tempDataDir();
  const versions = new NotedVersions();
  const start = async () => {
    const service = await SnapshotService.start({ dataDir: t.dir, pollMs: 0, buildThreads: 1, scoredAt: () => TEST_SCORED_AT, versions });
    versions.service = service;
    return service;
  };
  try {
    await ingest(t.dir, t.root, [evidence('first@ybl', 'https://a.example', { evidence_id: 'a1' })]);
    let service = await start();
    const seen = [service.view.version];
    for (const [i, upi] of ['second@ybl', 'third@ybl'].entries()) {
      await ingest(t.dir, t.root, [evidence(upi, 'https://b.example', { evidence_id: `b${i}` })]);
      await service.refresh();
      seen.push(service.view.version);
    }
    await service.compact();
    seen.push(service.view.version);
    await service.close();

    versions.service = null;
    service = await start();
    seen.push(service.view.version);
    await service.close();

    assert.deepEqual(versions.recorded, seen, 'each version served was recorded, once, in order');
    // Each was recorded while the one before it was still served.
    assert.deepEqual(versions.servedWhenRecorded.slice(1, 4), seen.slice(0, 3));
    const [alone, , , compacted, restarted] = seen;
    assert.ok(!alone!.includes('+') && !compacted!.includes('+'), `${alone} ${compacted}`);
    assert.ok(restarted!.startsWith(`${compacted}+`), `restarted on the compacted snapshot under a new version: ${restarted}`);
    const positions = seen.map((v) => Number(v.split('+')[1] ?? 0)).filter((p) => p > 0);
    assert.deepEqual([...positions].sort((a, b) => a - b), positions, 'positions grow in the order served');
  } finally {
    await t.cleanup();
  }
});
