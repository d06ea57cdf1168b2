import { performance } from 'node:perf_hooks';
import { messageOf } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { cutMirrorOffThread } from '../mirror/mirror-cut.js';
import { MirrorDiffs } from '../mirror/mirror-diffs.js';
import { manifestSigningText, type MirrorEntries, type MirrorManifest } from '../mirror/mirror-format.js';
import { MirrorPublisher, diffPath, fileBodies, fullPath, type MirrorFileBodies, type MirrorPublication, type MirrorPublications } from '../mirror/mirror-publication.js';
import { signText, type MirrorKey } from '../mirror/signing-key.js';
import type { MirrorVersionRecord } from '../mirror/version-record.js';
import type { HashRangeKeeper } from './hash-range-keeper.js';
import type { ServedData } from './served-data.js';

/** The shortest time between two mirror versions, ms (docs/api.md, "The mirror"). */
export const DEFAULT_MIRROR_INTERVAL_MS = 60_000;
/** Older versions a manifest offers a diff from: an hour at one a minute. */
export const DIFF_VERSIONS = 60;
/** A diff holding more than this share of the entries is not offered: the full file is about as cheap. */
const DIFF_SHARE_LIMIT = 0.25;
/** The longest wait before a version that could not be made is tried again; the wait doubles from the interval up to it. */
const MAX_RETRY_MS = 10 * 60_000;
/**
 * The diffs a version offers hold at most this share of its full file's
 * bytes together (and at least MIN_DIFF_BUDGET_BYTES): after a change of
 * many entries, each diff may hold a quarter of them, and sixty of those
 * would be held in memory, and stored in a fleet, every minute.
 */
const DIFF_BUDGET_SHARE = 0.5;
const MIN_DIFF_BUDGET_BYTES = 1024 * 1024;

export interface MirrorKeeperOptions {
  /** Where each version is recorded before it is served: DIR/mirror, or the store. */
  readonly record: MirrorVersionRecord;
  readonly key: MirrorKey;
  readonly logger: Logger;
  readonly intervalMs?: number;
  /**
   * Whether versions are served from this process, compressed (default
   * true). A fleet's builder serves none: followers compress what they
   * serve, and the builder spares a gzip and a Brotli of the full file
   * (90 MB at 10M VPAs) every version.
   */
  readonly serves?: boolean;
}

/**
 * Makes the local mirror's versions from what is served (docs/api.md, "The
 * mirror"), on the thread that owns what is served: whenever what is served
 * changes, at most once every `intervalMs`, it makes the entry set of the
 * view served (off-thread, mirror-cut.ts), numbers it one past the last
 * version made, keeps the changes since each of the last DIFF_VERSIONS
 * versions, signs the manifest, records the version (version-record.ts:
 * before it is published, so a version number never names two sets), and
 * publishes it with the full file and the diffs, then compressed, to its
 * listeners: the serving threads, or nobody on a fleet's builder, whose
 * record is the store followers serve from.
 */
export class MirrorKeeper implements MirrorPublications {
  readonly #served: ServedData;
  readonly #hashes: HashRangeKeeper;
  readonly #options: MirrorKeeperOptions;
  readonly #intervalMs: number;
  #lastVersion = 0;
  #lastDataVersion: string | null = null;
  #entries: MirrorEntries | null = null;
  #diffs = new MirrorDiffs(DIFF_VERSIONS, DIFF_SHARE_LIMIT);
  readonly #publisher = new MirrorPublisher();
  /** When the last version was published, and how long its making took (performance.now, ms). */
  #lastPublished = Number.NEGATIVE_INFINITY;
  #lastCutMs = 0;
  /** Versions that could not be made one after another, and when the next may be tried (performance.now()). */
  #failures = 0;
  #retryAt = Number.NEGATIVE_INFINITY;
  #cutting = false;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  readonly #unsubscribe: (() => void)[] = [];

  private constructor(served: ServedData, hashes: HashRangeKeeper, options: MirrorKeeperOptions, lastVersion: number) {
    this.#served = served;
    this.#hashes = hashes;
    this.#options = options;
    this.#intervalMs = options.intervalMs ?? DEFAULT_MIRROR_INTERVAL_MS;
    this.#lastVersion = lastVersion;
  }

  /** A keeper that continues from the last version recorded; a record that cannot be read is refused (ERR_MIRROR_STATE, or the store's error). */
  static async start(served: ServedData, hashes: HashRangeKeeper, options: MirrorKeeperOptions): Promise<MirrorKeeper> {
    const keeper = new MirrorKeeper(served, hashes, options, await options.record.last());
    keeper.#unsubscribe.push(
      served.onDelta(() => keeper.#schedule()),
      served.onSwap(() => keeper.#schedule()),
      hashes.onRanges(() => keeper.#schedule()),
    );
    keeper.#schedule();
    return keeper;
  }

  /** The newest version published, or null before the first. */
  get publication(): MirrorPublication | null {
    return this.#publisher.publication;
  }

  get publicKey(): string {
    return this.#options.key.publicKey;
  }

  /** Called with every version published; the function returned stops that. */
  onPublication(listener: (publication: MirrorPublication) => void): () => void {
    return this.#publisher.onPublication(listener);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    for (const stop of this.#unsubscribe) stop();
    this.#publisher.close();
  }

  /**
   * Make a version now when the last was published long enough ago, else
   * early enough that it is ready when the interval has passed: the lag from
   * ingest to a version holding it is then the interval at most, not the
   * interval and the making (seconds at 10M).
   */
  #schedule(): void {
    if (this.#closed || this.#timer !== null || this.#cutting) return;
    const wait = Math.max(0, this.#lastPublished + this.#intervalMs - this.#lastCutMs - performance.now(), this.#retryAt - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#cut();
    }, wait);
  }

  async #cut(): Promise<void> {
    const snapshot = this.#hashes.snapshot;
    const view = this.#served.view;
    // Nothing new to make, or the snapshot's ranges are not made yet (onRanges schedules again).
    if (this.#closed || snapshot === null || view.version === this.#lastDataVersion) return;
    this.#cutting = true;
    const started = performance.now();
    try {
      const delta = this.#served.delta;
      const deltaHashes = this.#hashes.hashesOf(delta);
      const held = this.#entries;
      const cut = await cutMirrorOffThread({
        order: snapshot.ranges.order,
        records: snapshot.ranges.records,
        delta: deltaHashes === null ? null : { overlay: delta.overlay, baseVpa: delta.baseVpa, hashes: deltaHashes },
        previous: held,
      });
      if (this.#closed) return;
      const previousVersion = this.#lastVersion;
      const version = previousVersion + 1;
      // A diff from the version before only when its set is the one held: after a start or a failed
      // record the changes are from nothing, and a diff of them would claim the old set was empty.
      this.#diffs.advance(held === null ? 0 : previousVersion, version, cut.changes, cut.entries.count);
      this.#entries = cut.entries;
      this.#lastCutMs = performance.now() - started;
      // Never two versions within the interval: one made early waits for it.
      const early = this.#lastPublished + this.#intervalMs - performance.now();
      if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
      if (this.#closed) return;
      const publication = this.#publish(version, cut.entries.count, cut.sha256, cut.full);
      // Recorded before it is served: a restart never numbers another set with it.
      try {
        await this.#options.record.record(publication);
      } catch (error) {
        await this.#forget();
        throw error;
      }
      this.#lastVersion = version;
      this.#lastDataVersion = view.version;
      this.#lastPublished = performance.now();
      this.#options.logger.info(
        { mirrorVersion: version, dataVersion: view.version, entries: cut.entries.count, changes: cut.changes.count, diffs: publication.files.size - 1, ms: Math.round(this.#lastCutMs) },
        'mirror version made',
      );
      // Compressed once served: at 10M that is seconds no caller waits for.
      await this.#publisher.publish(publication, () => this.#closed, this.#options.serves ?? true);
      this.#failures = 0;
    } catch (error) {
      // Not made again at once: a cut is seconds of work at 10M, and what failed (a full disk, the store) seldom passes that soon.
      this.#failures++;
      const backoff = Math.min(MAX_RETRY_MS, this.#intervalMs * 2 ** (this.#failures - 1));
      this.#retryAt = performance.now() + backoff;
      this.#options.logger.error(
        { err: messageOf(error), failures: this.#failures, retryInMs: backoff },
        'a mirror version could not be made; the one before is still served',
      );
    } finally {
      this.#cutting = false;
      // What changed while this one was made comes in the next.
      if (!this.#closed && this.#served.view.version !== this.#lastDataVersion) this.#schedule();
    }
  }

  /**
   * After a version could not be recorded: its number may be used again, so
   * nothing made with it is kept (the next version offers no diffs), and the
   * last number is read again (on a fleet, another builder may have used it).
   */
  async #forget(): Promise<void> {
    this.#entries = null;
    this.#diffs = new MirrorDiffs(DIFF_VERSIONS, DIFF_SHARE_LIMIT);
    this.#lastVersion = Math.max(this.#lastVersion, await this.#options.record.last().catch(() => this.#lastVersion));
  }

  /** The version's manifest, signed, and its files, not yet compressed. */
  #publish(version: number, count: number, sha256: string, full: Uint8Array): MirrorPublication {
    const files = new Map<string, MirrorFileBodies>();
    files.set(fullPath(version), fileBodies(fullPath(version), full));
    const diffs: { from: number; url: string; bytes: number }[] = [];
    // A caller holding a version not offered fetches the full file.
    for (const { from, bytes } of this.#diffs.offered(Math.max(MIN_DIFF_BUDGET_BYTES, full.length * DIFF_BUDGET_SHARE))) {
      files.set(diffPath(from, version), fileBodies(diffPath(from, version), bytes));
      diffs.push({ from, url: `/v1/mirror/${diffPath(from, version)}`, bytes: bytes.length });
    }
    const unsigned: Omit<MirrorManifest, 'signature'> = {
      version,
      created_at: new Date().toISOString(),
      count,
      sha256,
      full: { url: `/v1/mirror/${fullPath(version)}`, bytes: full.length },
      diffs,
    };
    const manifest = JSON.stringify({ ...unsigned, signature: signText(this.#options.key, manifestSigningText(unsigned)) });
    return { version, manifest, publicKey: JSON.stringify({ public_key: this.#options.key.publicKey }), files };
  }
}
