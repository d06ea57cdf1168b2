import { messageOf } from '../common/errors.js';
import type { UsageEntry } from '../access/key-usage.js';
import type { DeltaFigures, ServedData } from '../service/served-data.js';

/**
 * The figures of GET /v1/admin/stats (docs/console.md), which the console's
 * Intelligence page draws: the snapshot and delta served, recent builds,
 * freshness, and a sample of the main figures every `intervalMs` over the
 * last hour, kept in a ring.
 */
export interface BuildRecord {
  readonly finished_at: string;
  /** Null for a publication of the fleet, whose builder measured it. */
  readonly duration_ms: number | null;
  readonly outcome: 'built' | 'failed' | 'published';
  readonly snapshot: string | null;
  readonly message: string | null;
}

export interface StatsSample {
  readonly at: string;
  readonly requests_per_second: number;
  readonly rate_limited_per_second: number;
  readonly delta_vpas: number;
  readonly resident_bytes: number;
}

export interface StatsSources {
  readonly mode: 'embedded' | 'fleet';
  readonly served: ServedData;
  readonly delta: () => DeltaFigures;
  /** Recent builds (embedded: BuildHistory) or publications (fleet), newest first. */
  readonly builds: () => Promise<readonly BuildRecord[]>;
  /** The fleet store's state, for a follower. */
  readonly store?: () => { readonly connected: boolean; readonly caughtUpAt: number };
}

export const SAMPLE_INTERVAL_MS = 15_000;
export const HISTORY_MS = 60 * 60 * 1000;
export const KEPT_BUILDS = 20;

/** The embedded server's recent builds, newest first. */
export class BuildHistory {
  readonly #records: BuildRecord[] = [];

  built(snapshot: string, durationMs: number, at = new Date()): void {
    this.#add({ finished_at: at.toISOString(), duration_ms: Math.round(durationMs), outcome: 'built', snapshot, message: null });
  }

  failed(error: unknown, durationMs: number, at = new Date()): void {
    this.#add({ finished_at: at.toISOString(), duration_ms: Math.round(durationMs), outcome: 'failed', snapshot: null, message: messageOf(error) });
  }

  recent(): readonly BuildRecord[] {
    return this.#records;
  }

  #add(record: BuildRecord): void {
    this.#records.unshift(record);
    this.#records.length = Math.min(this.#records.length, KEPT_BUILDS);
  }
}

export class IntelligenceStats {
  readonly #sources: StatsSources;
  readonly #intervalMs: number;
  readonly #samples: StatsSample[] = [];
  #requests = 0;
  #limited = 0;
  #lastSampleAt = Date.now();
  #timer: NodeJS.Timeout | null = null;
  #lastIngest: { at: number; items: number; servedMs: number } | null = null;

  constructor(sources: StatsSources, intervalMs = SAMPLE_INTERVAL_MS) {
    this.#sources = sources;
    this.#intervalMs = intervalMs;
  }

  start(): void {
    this.#lastSampleAt = Date.now();
    this.#timer = setInterval(() => this.sample(), this.#intervalMs).unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Keyed requests, as the serving threads hand their key usage over. */
  countRequests(entries: readonly UsageEntry[]): void {
    for (const [, requests, limited] of entries) {
      this.#requests += requests;
      this.#limited += limited;
    }
  }

  /** Evidence taken over HTTP: how many items, and how long from the request to their being served. */
  noteIngest(items: number, servedMs: number, at = Date.now()): void {
    this.#lastIngest = { at, items, servedMs };
  }

  /** Take a sample now (the timer calls this every interval). */
  sample(now = Date.now()): void {
    const seconds = Math.max(0.001, (now - this.#lastSampleAt) / 1000);
    this.#samples.push({
      at: new Date(now).toISOString(),
      requests_per_second: round(this.#requests / seconds),
      rate_limited_per_second: round(this.#limited / seconds),
      delta_vpas: this.#sources.delta().vpas,
      resident_bytes: process.memoryUsage.rss(),
    });
    this.#requests = 0;
    this.#limited = 0;
    this.#lastSampleAt = now;
    const oldest = now - HISTORY_MS;
    while (this.#samples.length > 0 && Date.parse(this.#samples[0]!.at) < oldest) this.#samples.shift();
  }

  async json(now = Date.now()): Promise<string> {
    const view = this.#sources.served.view;
    const meta = view.base.meta;
    const delta = this.#sources.delta();
    const store = this.#sources.store?.();
    return JSON.stringify({
      mode: this.#sources.mode,
      data_version: view.version,
      snapshot: {
        id: meta.id,
        as_of: meta.dataAsOf === 0 ? null : new Date(meta.dataAsOf).toISOString(),
        built_at: new Date(meta.createdAt).toISOString(),
        vpas: meta.vpaCount,
        clusters: meta.clusterCount,
        urls: meta.urlCount,
        evidence_items: meta.evidenceCount,
      },
      delta: { vpas: delta.vpas, evidence_items: delta.evidenceItems, bytes: delta.bytes, age_seconds: round(delta.ageSeconds) },
      seconds_since_compaction: round(delta.secondsSinceCompaction),
      builds: await this.#sources.builds(),
      freshness: {
        last_ingest_at: this.#lastIngest === null ? null : new Date(this.#lastIngest.at).toISOString(),
        last_ingest_items: this.#lastIngest?.items ?? null,
        last_ingest_served_ms: this.#lastIngest?.servedMs ?? null,
        ...(store === undefined
          ? {}
          : { store_connected: store.connected, seconds_since_caught_up: round(Math.max(0, (now - store.caughtUpAt) / 1000)) }),
      },
      history: { interval_seconds: this.#intervalMs / 1000, samples: this.#samples },
    });
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
