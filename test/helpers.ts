import assert from 'node:assert/strict';
import type { AnswerFacts } from '../src/history/change-log.js';
import type { AnswerDetail } from '../src/history/answer-detail.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { get, type Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataDir, type DataDir } from '../src/common/data-dir.js';
import { ingestFile } from '../src/evidence/store.js';
import { SnapshotBuilder } from '../src/builder/snapshot-builder.js';
import { SnapshotView } from '../src/engine/snapshot-view.js';
import { readSnapshotFile } from '../src/engine/snapshot-files.js';

export interface EvidenceInput {
  evidence_id: string;
  upi: string;
  url: string;
  source_category: string;
  captured_at: string;
  risk_category?: string;
  screenshot_available?: boolean;
}

/** Scoring reference time used by tests, so confidences are reproducible. */
export const TEST_SCORED_AT = Date.parse('2026-11-01T00:00:00Z');

export async function tempDataDir(prefix = 'upi-risk-test-'): Promise<{ dir: DataDir; root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  return { dir: dataDir(join(root, 'data')), root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

/** Run `run` with the path of a history of answers (history/changes.log) in a data directory of its own, removed after. */
export async function withHistoryLog(run: (path: string) => Promise<void>): Promise<void> {
  const t = await tempDataDir();
  try {
    await run(join(t.root, 'history', 'changes.log'));
  } finally {
    await t.cleanup();
  }
}

/** A FLAGGED answer as the history records it, for tests of the log alone: its fingerprint and detail follow its fields. */
export function flaggedFacts(confidence: number, cluster = 0, risk = 0): AnswerFacts {
  const captured = '2026-11-01T00:00:00Z';
  const detail: AnswerDetail = {
    cluster_size: cluster === 0 ? 0 : 2,
    first_seen: captured,
    last_seen: captured,
    sources: [{ url: `https://${risk}.example/${cluster}`, category: 'scam', captured_at: captured, screenshot_available: false }],
    evidence_count: 1,
  };
  return { flagged: true, risk, confidence, cluster, printA: cluster + 1, printB: risk, detail: () => detail };
}

export function ndjson(items: readonly object[]): string {
  return items.map((item) => JSON.stringify(item)).join('\n') + '\n';
}

/** Write evidence to a file under `root` and ingest it; fails the test if refused. */
export async function ingest(dir: DataDir, root: string, items: readonly EvidenceInput[], name = `batch-${Math.random().toString(16).slice(2)}.ndjson`) {
  const path = join(root, name);
  await writeFile(path, ndjson(items));
  const result = await ingestFile(dir, path);
  if (!result.accepted) throw new Error(`fixture refused: ${JSON.stringify(result.errors)}`);
  return result;
}

/** Build with a real pool and load the result. */
export async function buildAndLoad(dir: DataDir, options: { urlMemberCap?: number; threads?: number } = {}): Promise<SnapshotView> {
  const builder = new SnapshotBuilder({ threads: options.threads ?? 2 });
  try {
    const report = await builder.build({
      dataDir: dir,
      scoredAt: TEST_SCORED_AT,
      ...(options.urlMemberCap === undefined ? {} : { urlMemberCap: options.urlMemberCap }),
    });
    return new SnapshotView(await readSnapshotFile(report.path));
  } finally {
    await builder.close();
  }
}

let counter = 0;
/** An evidence item with sensible defaults. */
export function evidence(upi: string, url: string, overrides: Partial<EvidenceInput> = {}): EvidenceInput {
  counter++;
  return {
    evidence_id: `ev-${counter}`,
    upi,
    url,
    source_category: 'gambling',
    captured_at: '2026-06-01T10:00:00+05:30',
    ...overrides,
  };
}

import { validateEvidence } from '../src/evidence/record.js';
import type { ArrayAllocator } from '../src/common/scratch-arrays.js';
import { RecordWriter, packFlags } from '../src/builder/record-codec.js';
import { aggregatePartition, dedupPartition, type AggregateResult } from '../src/builder/phases.js';
import { assembleSnapshot, type AssembleOptions } from '../src/builder/assemble.js';
import { emptyClusterIdState } from '../src/builder/cluster-ids/state.js';
import { DEFAULT_URL_MEMBER_CAP } from '../src/builder/clustering.js';
import { countsFrom } from '../src/builder/scoring.js';

/**
 * The build phases called in-process on one partition: the same code the
 * pool runs, without threads or files, for property tests that build
 * hundreds of small snapshots.
 */
export function buildInProcess(items: readonly EvidenceInput[], scoredAt = TEST_SCORED_AT, urlMemberCap = DEFAULT_URL_MEMBER_CAP, evidenceMaxAgeMs = 0): SnapshotView {
  const { data } = assembleSnapshot([aggregateInProcess(items, scoredAt, undefined, evidenceMaxAgeMs)], assembleOptionsInProcess(scoredAt, urlMemberCap, evidenceMaxAgeMs));
  return new SnapshotView(data);
}

/** Phases A to C on one partition: what assembly takes. */
export function aggregateInProcess(items: readonly EvidenceInput[], scoredAt = TEST_SCORED_AT, scratch?: ArrayAllocator, evidenceMaxAgeMs = 0): AggregateResult {
  const writer = new RecordWriter();
  items.forEach((item, line) => {
    const parsed = validateEvidence(item);
    if (!parsed.ok) throw new Error(`invalid fixture: ${parsed.reason}`);
    const r = parsed.record;
    writer.append(0, line, r.capturedAt, packFlags(r.sourceCategory, r.riskCategory, r.screenshot), r.upi, r.url, r.evidenceId);
  });
  const deduped = dedupPartition({ inputs: [writer.finish()], partitions: 1 });
  return aggregatePartition({ inputs: deduped.parts, scoredAt, countsFrom: countsFrom(scoredAt, evidenceMaxAgeMs) }, scratch);
}

export function assembleOptionsInProcess(scoredAt = TEST_SCORED_AT, urlMemberCap = DEFAULT_URL_MEMBER_CAP, evidenceMaxAgeMs = 0): AssembleOptions {
  return {
    urlMemberCap,
    scoredAt,
    evidenceMaxAgeMs,
    previousClusterIds: emptyClusterIdState(),
    meta: { id: 'in-process', createdAt: scoredAt, dataAsOf: scoredAt, evidenceFiles: [], skippedLines: 0 },
  };
}

/** What /readyz answers with several serving threads. */
export interface Ready {
  snapshot: string;
  /** The snapshot and the live delta's position: what X-Data-Version names. */
  data_version: string;
  delta_vpas: number;
  thread: number;
}

/** Ask /readyz over fresh connections until every serving thread has answered; the snapshot each one serves. */
export async function snapshotsByThread(base: string, threads: number): Promise<Map<number, string>> {
  return readyByThread(base, threads, (ready) => ready.snapshot);
}

/** The data version (snapshot and delta) each serving thread serves, asked as snapshotsByThread asks. */
export async function versionsByThread(base: string, threads: number): Promise<Map<number, string>> {
  return readyByThread(base, threads, (ready) => ready.data_version);
}

async function readyByThread(base: string, threads: number, field: (ready: Ready) => string): Promise<Map<number, string>> {
  const seen = new Map<number, string>();
  for (let attempt = 0; attempt < 400 && seen.size < threads; attempt++) {
    const body = await readyOverNewConnection(`${base}/readyz`);
    seen.set(body.thread, field(body));
  }
  assert.equal(seen.size, threads, `reached ${seen.size} of ${threads} threads`);
  return seen;
}

/** GET on a connection of its own: the kernel spreads connections, not requests, over the threads. */
export async function readyOverNewConnection(url: string): Promise<Ready> {
  return JSON.parse((await getText(url)).body) as Ready;
}

/**
 * GET `url`, the body as text: over `agent` (a kept-alive connection of its
 * own), or a new connection by default; fails rather than waits past `timeoutMs`.
 */
export function getText(
  url: string,
  options: { readonly agent?: Agent | false; readonly headers?: Record<string, string>; readonly timeoutMs?: number } = {},
): Promise<{ status: number; body: string }> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: options.agent ?? false, headers: options.headers ?? {}, timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer to ${url} within ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}

/** The value of one sample line of Prometheus text (`name{labels}` as written), or undefined when absent. */
export function sample(text: string, line: string): number | undefined {
  const escaped = line.replace(/[{}"+.]/g, (c) => `\\${c}`);
  const match = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Wait until `check` holds, looking every 10 ms; fails the test, naming
 * `what`, after `timeoutMs`. Resolves with how long it took, ms.
 */
export async function until(what: string, timeoutMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}
