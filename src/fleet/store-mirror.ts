import { createHash } from 'node:crypto';
import type pg from 'pg';
import { ErrorCode, messageOf, StoreError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { sharedArray } from '../engine/shared-arrays.js';
import {
  MIRROR_HEADER_BYTES,
  MIRROR_KIND_FULL,
  applyMirrorDiff,
  decodeMirrorFile,
  encodeMirrorFile,
  manifestSigningText,
  parseManifest,
  type MirrorEntries,
  type MirrorFile,
  type MirrorManifest,
} from '../mirror/mirror-format.js';
import { MirrorPublisher, diffPath, fileBodies, fullPath, type MirrorFileBodies, type MirrorPublication, type MirrorPublications } from '../mirror/mirror-publication.js';
import { verifyText } from '../mirror/signing-key.js';
import { mirrorBaseAtOrBefore, mirrorChannel, mirrorVersion, newestMirrorVersion, readMirrorFile, type StoredMirrorVersion } from '../store/mirror-versions.js';
import { storePool, type StoreLocation } from '../store/postgres.js';
import { StoreNotifications } from '../store/store-notifications.js';

export interface StoreMirrorOptions {
  readonly location: StoreLocation;
  readonly logger?: Logger;
  /** How often to look for a new version when no notification came, ms (default 5000). */
  readonly pollMs?: number;
  /**
   * The builder's public key (`serve --mirror-public-key`): a version
   * recorded under any other key is not served, whoever wrote it in the
   * store. Without it, the key recorded with each version is trusted.
   */
  readonly publicKey?: string;
}

const DEFAULT_POLL_MS = 5_000;

/**
 * A follower's mirror: the newest version the fleet's active builder
 * recorded in the store (store/mirror-versions.ts), served exactly as it
 * was signed, so every follower serves the same manifest and files.
 *
 * The store keeps a full file only for a base; the follower makes each
 * version's entries from the version it holds and the version's diff from
 * it, or from the newest base and the diffs after it, writes the full file
 * itself, and serves it only once its entries are the set the manifest
 * names (its count and SHA-256) under a signature that verifies with the
 * key recorded beside it. A version that cannot be made so is logged and
 * not served: the one before stays until a newer version can be. A store
 * that cannot be read is tried again at the next look.
 */
export class StoreMirror implements MirrorPublications {
  readonly #location: StoreLocation;
  readonly #logger: Logger;
  readonly #pool: pg.Pool;
  readonly #publisher = new MirrorPublisher();
  readonly #notifications: StoreNotifications;
  readonly #timer: NodeJS.Timeout;
  /** The entries of the version served. */
  #entries: MirrorEntries | null = null;
  #looking: Promise<void> | null = null;
  #lookAgain = false;
  /** The last version that could not be made, logged once. */
  #refused = 0;
  /** The last failure to read the store, logged once until a look succeeds. */
  #lastFailure: string | null = null;
  #closed = false;
  readonly #pinnedKey: string | undefined;

  constructor(options: StoreMirrorOptions) {
    this.#location = options.location;
    this.#pinnedKey = options.publicKey;
    this.#logger = options.logger ?? silentLogger;
    this.#pool = storePool(options.location, 2);
    this.#notifications = new StoreNotifications(options.location, [mirrorChannel(options.location)], () => this.#look(), this.#logger);
    this.#timer = setInterval(() => this.#look(), options.pollMs ?? DEFAULT_POLL_MS);
    this.#timer.unref();
  }

  get publication(): MirrorPublication | null {
    return this.#publisher.publication;
  }

  onPublication(listener: (publication: MirrorPublication) => void): () => void {
    return this.#publisher.onPublication(listener);
  }

  /** Resolves once the look under way, if any, has ended. */
  async settled(): Promise<void> {
    while (this.#looking !== null) await this.#looking;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#notifications.close();
    await this.settled();
    await this.#pool.end().catch(() => {});
  }

  /** Look for a newer version; one look at a time, and one more if asked meanwhile. */
  #look(): void {
    if (this.#closed) return;
    if (this.#looking !== null) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = this.#update()
      .then(
        () => {
          this.#lastFailure = null;
        },
        (error: unknown) => {
          const message = messageOf(error);
          if (message !== this.#lastFailure) this.#logger.warn({ err: message }, 'the store could not be read for a mirror version; the one held is still served');
          this.#lastFailure = message;
        },
      )
      .finally(() => {
        this.#looking = null;
        if (this.#lookAgain && !this.#closed) {
          this.#lookAgain = false;
          this.#look();
        }
      });
  }

  async #update(): Promise<void> {
    const newest = await newestMirrorVersion(this.#pool, this.#location);
    if (newest === null || newest.version <= (this.#publisher.publication?.version ?? 0) || newest.version === this.#refused) return;
    let made: { publication: MirrorPublication; entries: MirrorEntries };
    try {
      made = await this.#make(newest);
    } catch (error) {
      if (!isDataError(error)) throw error;
      this.#refused = newest.version;
      this.#logger.error({ mirrorVersion: newest.version, err: error.message }, 'a mirror version in the store cannot be served; the one held is still served');
      return;
    }
    if (this.#closed) return;
    this.#entries = made.entries;
    this.#logger.info({ mirrorVersion: newest.version, entries: made.entries.count }, 'serving a mirror version from the store');
    await this.#publisher.publish(made.publication, () => this.#closed);
  }

  /** The version's publication and entries, checked against its signed manifest. */
  async #make(stored: StoredMirrorVersion): Promise<{ publication: MirrorPublication; entries: MirrorEntries }> {
    const manifest = this.#signedManifest(stored);
    // The set held and the version's diff from it first; when they do not make the signed set (the
    // store was restored, and the number held names another set now), the base and its diffs.
    let entries = await this.#fromHeld(manifest).catch((error: unknown) => {
      if (!isDataError(error)) throw error;
      this.#logger.warn({ mirrorVersion: stored.version, err: (error as Error).message }, 'the mirror version held and its diff do not make the next; making it from the base');
      return null;
    });
    let full = entries === null ? null : signedFull(manifest, entries);
    if (entries !== null && full === null) this.#logger.warn({ mirrorVersion: stored.version }, 'the mirror version held and its diff do not make the set signed; making it from the base');
    if (full === null) {
      entries = await this.#fromBase(manifest);
      full = signedFull(manifest, entries);
      if (full === null) throw this.#bad(stored.version, `the entries made from the store are not the set its manifest names (${entries.count} entries)`);
    }
    const files = new Map<string, MirrorFileBodies>([[fullPath(stored.version), fileBodies(fullPath(stored.version), full)]]);
    for (const diff of manifest.diffs) {
      const path = diffPath(diff.from, stored.version);
      const bytes = await this.#file(stored.version, path);
      if (bytes.length !== diff.bytes) throw this.#bad(stored.version, `${path} holds ${bytes.length} bytes, its manifest says ${diff.bytes}`);
      files.set(path, fileBodies(path, bytes));
    }
    const publication: MirrorPublication = { version: stored.version, manifest: stored.manifest, publicKey: JSON.stringify({ public_key: stored.publicKey }), files };
    return { publication, entries: entries! };
  }

  /** The manifest, parsed, of this version and signed by the key recorded with it. */
  #signedManifest(stored: StoredMirrorVersion): MirrorManifest {
    let manifest: MirrorManifest;
    try {
      manifest = parseManifest(JSON.parse(stored.manifest));
    } catch (error) {
      throw this.#bad(stored.version, `its manifest is not one: ${(error as Error).message}`);
    }
    if (manifest.version !== stored.version) throw this.#bad(stored.version, `its manifest names version ${manifest.version}`);
    if (this.#pinnedKey !== undefined && stored.publicKey !== this.#pinnedKey) {
      throw this.#bad(stored.version, `it is recorded under public key ${stored.publicKey}, not the one given with --mirror-public-key`);
    }
    if (!verifyText(stored.publicKey, manifestSigningText(manifest), manifest.signature)) throw this.#bad(stored.version, 'its manifest is not signed by the key recorded with it');
    return manifest;
  }

  /** The entries from those held and the version's diff from them, or null when it has none. */
  async #fromHeld(manifest: MirrorManifest): Promise<MirrorEntries | null> {
    const held = this.#publisher.publication?.version;
    if (held === undefined || this.#entries === null || !manifest.diffs.some((d) => d.from === held)) return null;
    return this.#applied(this.#entries, manifest.version, diffPath(held, manifest.version));
  }

  /** The entries from the newest base at or before the version: its diff from the base, or the one-step diffs after it. */
  async #fromBase(manifest: MirrorManifest): Promise<MirrorEntries> {
    const version = manifest.version;
    const base = await mirrorBaseAtOrBefore(this.#pool, this.#location, version);
    if (base === null) throw await this.#missing(version, 'the store holds no base at or before it');
    const baseFile = await this.#decoded(base.version, fullPath(base.version));
    if (baseFile.kind !== MIRROR_KIND_FULL) throw this.#bad(base.version, 'its full file is a diff');
    let entries = baseFile.entries;
    if (base.version === version) return entries;
    if (manifest.diffs.some((d) => d.from === base.version)) return this.#applied(entries, version, diffPath(base.version, version));
    for (let step = base.version + 1; step <= version; step++) {
      // Each version after a base stores its diff from the one before: without one, it would be a base.
      if ((await mirrorVersion(this.#pool, this.#location, step)) === null) throw await this.#missing(version, `version ${step} after its base is not in the store`);
      entries = await this.#applied(entries, step, diffPath(step - 1, step));
    }
    return entries;
  }

  async #applied(entries: MirrorEntries, version: number, path: string): Promise<MirrorEntries> {
    const diff = await this.#decoded(version, path);
    try {
      return applyMirrorDiff(entries, diff);
    } catch (error) {
      throw this.#bad(version, `${path} does not apply: ${(error as Error).message}`);
    }
  }

  async #decoded(version: number, path: string): Promise<MirrorFile> {
    const bytes = await this.#file(version, path);
    try {
      return decodeMirrorFile(bytes);
    } catch (error) {
      throw this.#bad(version, `${path} is not a mirror file: ${(error as Error).message}`);
    }
  }

  /** A stored file; one missing is a race or bad data (#missing). */
  async #file(version: number, path: string): Promise<Uint8Array> {
    const bytes = await readMirrorFile(this.#pool, this.#location, version, path);
    if (bytes === null) throw await this.#missing(version, `its file ${path} is not in the store`);
    return bytes;
  }

  /**
   * What something missing for `version` means: with a newer version in the
   * store, a newer base deleted it while it was read (a store error: the
   * next look makes the newer one); without, the version names what was
   * never stored, and it is refused rather than made again at every look.
   */
  async #missing(version: number, what: string): Promise<StoreError> {
    const newest = await newestMirrorVersion(this.#pool, this.#location);
    if (newest !== null && newest.version > version) return new StoreError(ErrorCode.STORE, `mirror version ${version}: ${what}; a newer version replaced it while it was read`);
    return this.#bad(version, what);
  }

  #bad(version: number, why: string): StoreError {
    return new StoreError(ErrorCode.STORE_DATA, `store schema ${this.#location.schema}: mirror version ${version}: ${why}`);
  }
}

function isDataError(error: unknown): error is StoreError {
  return error instanceof StoreError && error.code === ErrorCode.STORE_DATA;
}

/** The full file of `entries` when they are the set `manifest` signed (count, SHA-256, length); null otherwise. */
function signedFull(manifest: MirrorManifest, entries: MirrorEntries): Uint8Array | null {
  const full = encodeMirrorFile(MIRROR_KIND_FULL, entries, undefined, (length) => sharedArray(Uint8Array, length));
  const sha256 = createHash('sha256').update(full.subarray(MIRROR_HEADER_BYTES)).digest('hex');
  return entries.count === manifest.count && sha256 === manifest.sha256 && full.length === manifest.full.bytes ? full : null;
}
