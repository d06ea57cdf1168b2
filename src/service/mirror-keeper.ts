import { performance } from 'node:perf_hooks';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { writeFileAtomic } from '../common/atomic-file.js';
import { ErrorCode, UpiRiskError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { sharedArray } from '../engine/shared-arrays.js';
import { cutMirrorOffThread } from '../mirror/mirror-cut.js';
import { MirrorDiffs } from '../mirror/mirror-diffs.js';
import { manifestSigningText, type MirrorEntries, type MirrorManifest } from '../mirror/mirror-format.js';
import { diffPath, fullPath, type MirrorFileBodies, type MirrorPublication } from '../mirror/mirror-publication.js';
import { signText, type MirrorKey } from '../mirror/signing-key.js';
import type { HashRangeKeeper } from './hash-range-keeper.js';
import type { ServedData } from './served-data.js';

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/** The shortest time between two mirror versions, ms (docs/api.md, "The mirror"). */
export const DEFAULT_MIRROR_INTERVAL_MS = 60_000;
/** Older versions a manifest offers a diff from: an hour at one a minute. */
const DIFF_VERSIONS = 60;
/** A diff holding more than this share of the entries is not offered: the full file is about as cheap. */
const DIFF_SHARE_LIMIT = 0.25;
/** Brotli's quality for mirror files: most of their bytes are hash bits, so the higher qualities cost time for nothing. */
const BROTLI_QUALITY = 5;
const STATE_FILE = 'last-version.json';

export interface MirrorKeeperOptions {
  /** DataDir.mirror: the key, and the record of the last version made. */
  readonly dir: string;
  readonly key: MirrorKey;
  readonly logger: Logger;
  readonly intervalMs?: number;
}

/**
 * Makes the local mirror's versions from what is served (docs/api.md, "The
 * mirror"), on the thread that owns what is served: whenever what is served
 * changes, at most once every `intervalMs`, it makes the entry set of the
 * view served (off-thread, mirror-cut.ts), numbers it one past the last
 * version made (recorded in DIR/mirror before it is published, so a version
 * number never names two sets), keeps the changes since each of the last
 * DIFF_VERSIONS versions, and publishes the signed manifest with the full
 * file and the diffs, compressed, to the serving threads.
 */
export class MirrorKeeper {
  readonly #served: ServedData;
  readonly #hashes: HashRangeKeeper;
  readonly #options: MirrorKeeperOptions;
  readonly #intervalMs: number;
  #lastVersion = 0;
  #lastDataVersion: string | null = null;
  #entries: MirrorEntries | null = null;
  readonly #diffs = new MirrorDiffs(DIFF_VERSIONS, DIFF_SHARE_LIMIT);
  #publication: MirrorPublication | null = null;
  readonly #listeners = new Set<(publication: MirrorPublication) => void>();
  /** When the last version was published, and how long its making took (performance.now, ms). */
  #lastPublished = Number.NEGATIVE_INFINITY;
  #lastCutMs = 0;
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

  /** A keeper that continues from the last version recorded in `options.dir`; a record that cannot be read is refused (ERR_MIRROR_STATE). */
  static async start(served: ServedData, hashes: HashRangeKeeper, options: MirrorKeeperOptions): Promise<MirrorKeeper> {
    if (!hashes.keepsHeads) throw new RangeError('the mirror needs a HashRangeKeeper that keeps the hash heads (keepHeads)');
    const keeper = new MirrorKeeper(served, hashes, options, await readLastVersion(options.dir));
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
    return this.#publication;
  }

  get publicKey(): string {
    return this.#options.key.publicKey;
  }

  /** Called with every version published; the function returned stops that. */
  onPublication(listener: (publication: MirrorPublication) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    for (const stop of this.#unsubscribe) stop();
    this.#listeners.clear();
  }

  /**
   * Make a version now when the last was published long enough ago, else
   * early enough that it is ready when the interval has passed: the lag from
   * ingest to a version holding it is then the interval at most, not the
   * interval and the making (seconds at 10M).
   */
  #schedule(): void {
    if (this.#closed || this.#timer !== null || this.#cutting) return;
    const wait = Math.max(0, this.#lastPublished + this.#intervalMs - this.#lastCutMs - performance.now());
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
    // Kept whenever there is a mirror (start refuses a keeper that drops them).
    const heads = snapshot.heads;
    if (heads === null) return;
    this.#cutting = true;
    const started = performance.now();
    try {
      const delta = this.#served.delta;
      const deltaHashes = this.#hashes.hashesOf(delta);
      const cut = await cutMirrorOffThread({
        base: snapshot.data,
        heads,
        order: snapshot.ranges.order,
        delta: deltaHashes === null ? null : { overlay: delta.overlay, baseVpa: delta.baseVpa, hashes: deltaHashes },
        previous: this.#entries,
      });
      if (this.#closed) return;
      const version = this.#lastVersion + 1;
      // Recorded before it is served: a restart never numbers another set with it.
      await writeLastVersion(this.#options.dir, version);
      const previousVersion = this.#lastVersion;
      this.#lastVersion = version;
      this.#lastDataVersion = view.version;
      this.#entries = cut.entries;
      this.#diffs.advance(previousVersion, version, cut.changes, cut.entries.count);
      this.#lastCutMs = performance.now() - started;
      // Never two versions within the interval: one made early waits for it.
      const early = this.#lastPublished + this.#intervalMs - performance.now();
      if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
      if (this.#closed) return;
      const publication = this.#publish(version, cut.entries.count, cut.sha256, cut.full);
      this.#lastPublished = performance.now();
      this.#options.logger.info(
        { mirrorVersion: version, dataVersion: view.version, entries: cut.entries.count, changes: cut.changes.count, diffs: publication.files.size - 1, ms: Math.round(this.#lastCutMs) },
        'mirror version made',
      );
      this.#serve(publication);
      // Compressed once served: at 10M that is seconds no caller waits for.
      const compressed = await compress(publication);
      if (!this.#closed && this.#publication === publication) this.#serve(compressed);
    } catch (error) {
      this.#options.logger.error({ err: error instanceof Error ? error.message : String(error) }, 'a mirror version could not be made; the one before is still served');
    } finally {
      this.#cutting = false;
      // What changed while this one was made comes in the next.
      if (!this.#closed && this.#served.view.version !== this.#lastDataVersion) this.#schedule();
    }
  }

  #serve(publication: MirrorPublication): void {
    this.#publication = publication;
    for (const listener of this.#listeners) listener(publication);
  }

  /** The version's manifest, signed, and its files, not yet compressed. */
  #publish(version: number, count: number, sha256: string, full: Uint8Array): MirrorPublication {
    const files = new Map<string, MirrorFileBodies>();
    files.set(fullPath(version), { etag: `"full-${version}"`, identity: shared(full), gzip: null, br: null });
    const diffs: { from: number; url: string; bytes: number }[] = [];
    for (const from of this.#diffs.versions()) {
      const bytes = this.#diffs.file(from);
      files.set(diffPath(from, version), { etag: `"diff-${from}-${version}"`, identity: shared(bytes), gzip: null, br: null });
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

/** The publication with every file in each encoding too, in shared memory (zlib's threads do the work). */
async function compress(publication: MirrorPublication): Promise<MirrorPublication> {
  const files = new Map<string, MirrorFileBodies>();
  for (const [path, file] of publication.files) {
    const [gzipped, brotli] = await Promise.all([
      gzipAsync(file.identity),
      brotliAsync(file.identity, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: file.identity.length } }),
    ]);
    files.set(path, { ...file, gzip: shared(gzipped), br: shared(brotli) });
  }
  return { ...publication, files };
}

function shared(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof SharedArrayBuffer) return bytes;
  const copy = sharedArray(Uint8Array, bytes.length);
  copy.set(bytes);
  return copy;
}

async function readLastVersion(dir: string): Promise<number> {
  const path = join(dir, STATE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw new UpiRiskError(ErrorCode.MIRROR_STATE, `cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = null;
  }
  const version = (value as { version?: unknown } | null)?.version;
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    throw new UpiRiskError(ErrorCode.MIRROR_STATE, `${path} is not {"version": <whole number>}: restore it, or set it past every version callers may hold`);
  }
  return version;
}

async function writeLastVersion(dir: string, version: number): Promise<void> {
  try {
    await writeFileAtomic(join(dir, STATE_FILE), Buffer.from(`${JSON.stringify({ version })}\n`));
  } catch (error) {
    throw new UpiRiskError(ErrorCode.MIRROR_STATE, `cannot record mirror version ${version} in ${dir}: ${(error as Error).message}`, { cause: error });
  }
}
