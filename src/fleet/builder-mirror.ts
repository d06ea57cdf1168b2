import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { dataDir, type DataDir } from '../common/data-dir.js';
import type { Logger } from '../common/logger.js';
import { diffPath, type MirrorPublication } from '../mirror/mirror-publication.js';
import type { MirrorKey } from '../mirror/signing-key.js';
import type { MirrorVersionRecord } from '../mirror/version-record.js';
import { HashRangeKeeper } from '../service/hash-range-keeper.js';
import { DIFF_VERSIONS, MirrorKeeper } from '../service/mirror-keeper.js';
import { mirrorBaseAtOrBefore, newestMirrorVersion, recordMirrorVersion } from '../store/mirror-versions.js';
import { storePool, type StoreLocation } from '../store/postgres.js';
import { FollowerService } from './follower-service.js';

export interface BuilderMirrorOptions {
  readonly location: StoreLocation;
  /** The builder's data directory: the key in its `mirror/`, and what is followed in `mirror/served/`. */
  readonly dataDir: DataDir;
  readonly key: MirrorKey;
  readonly logger: Logger;
  /** The least time between two versions, ms (MirrorKeeper's default when not given). */
  readonly intervalMs?: number;
  /** How often to look at the store when no notification came, ms. */
  readonly pollMs?: number;
  /** Runs inside each version's recording transaction: throws when this builder no longer holds the lease, and nothing is recorded. */
  readonly stillActive: (client: pg.ClientBase) => Promise<void>;
}

/**
 * The fleet's mirror, made by the active builder (docs/deployment.md): it
 * follows the store exactly as a follower does (FollowerService, in
 * DIR/mirror/served), so each version holds what followers serve; it makes
 * the versions (MirrorKeeper) signed with the key in DIR/mirror, and
 * records each in the store, where every follower serves it
 * (fleet/store-mirror.ts). Numbers go on from the store's newest version,
 * whichever builder made it.
 */
export class BuilderMirror {
  readonly #follower: FollowerService;
  readonly #hashes: HashRangeKeeper;
  readonly #keeper: MirrorKeeper;
  readonly #pool: pg.Pool;

  private constructor(follower: FollowerService, hashes: HashRangeKeeper, keeper: MirrorKeeper, pool: pg.Pool) {
    this.#follower = follower;
    this.#hashes = hashes;
    this.#keeper = keeper;
    this.#pool = pool;
  }

  /** Follow the store (resolves once the newest publication is served, as a follower's start does) and make versions from then on. */
  static async start(options: BuilderMirrorOptions): Promise<BuilderMirror> {
    const { location, logger } = options;
    const pool = storePool(location, 1);
    const record = new StoreVersionRecord(pool, location, options.key, logger, options.stillActive);
    // The cheap read first: a store whose versions cannot be read fails the start before a snapshot is loaded.
    await record.last().catch(async (error: unknown) => {
      await pool.end().catch(() => {});
      throw error;
    });
    const follower = await FollowerService.start({ location, dataDir: dataDir(join(options.dataDir.mirror, 'served')), logger, ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }) }).catch(
      async (error: unknown) => {
        await pool.end().catch(() => {});
        throw error;
      },
    );
    const hashes = new HashRangeKeeper(follower, { threads: Math.max(1, Math.min(2, availableParallelism())), logger });
    try {
      // The builder serves no version: the store's record is what followers serve, compressed by them.
      const keeper = await MirrorKeeper.start(follower, hashes, { record, key: options.key, logger, serves: false, ...(options.intervalMs === undefined ? {} : { intervalMs: options.intervalMs }) });
      logger.info({ publicKey: options.key.publicKey }, 'making the fleet mirror');
      return new BuilderMirror(follower, hashes, keeper, pool);
    } catch (error) {
      hashes.close();
      await follower.close();
      await pool.end().catch(() => {});
      throw error;
    }
  }

  /** The newest version recorded by this builder, or null before its first. */
  get publication(): MirrorPublication | null {
    return this.#keeper.publication;
  }

  async close(): Promise<void> {
    this.#keeper.close();
    this.#hashes.close();
    await this.#follower.close();
    await this.#pool.end().catch(() => {});
  }
}

/**
 * A fleet's version record: the store. A version is a base, stored with
 * its full file, when its manifest offers no diff from the one before (the
 * first this builder makes, or one that changed much), and every
 * DIFF_VERSIONS versions, so that a follower starting afresh applies at
 * most that many diffs to the newest base.
 */
class StoreVersionRecord implements MirrorVersionRecord {
  readonly #location: StoreLocation;
  readonly #key: MirrorKey;
  readonly #logger: Logger;
  readonly #stillActive: (client: pg.ClientBase) => Promise<void>;
  readonly #pool: pg.Pool;
  #lastBase = 0;
  #keyChangeLogged = false;

  constructor(pool: pg.Pool, location: StoreLocation, key: MirrorKey, logger: Logger, stillActive: (client: pg.ClientBase) => Promise<void>) {
    this.#pool = pool;
    this.#location = location;
    this.#key = key;
    this.#logger = logger;
    this.#stillActive = stillActive;
  }

  async last(): Promise<number> {
    const newest = await newestMirrorVersion(this.#pool, this.#location);
    if (newest === null) return 0;
    // Said once: last() is asked again after a version could not be recorded.
    if (newest.publicKey !== this.#key.publicKey && !this.#keyChangeLogged) {
      this.#keyChangeLogged = true;
      this.#logger.warn(
        { was: newest.publicKey, now: this.#key.publicKey },
        "the fleet mirror's signing key changed: callers that hold the old public key refuse every version from now on (give each builder the same key file)",
      );
    }
    this.#lastBase = (await mirrorBaseAtOrBefore(this.#pool, this.#location, newest.version))?.version ?? 0;
    return newest.version;
  }

  async record(publication: MirrorPublication): Promise<void> {
    const version = publication.version;
    const base = !publication.files.has(diffPath(version - 1, version)) || version - this.#lastBase >= DIFF_VERSIONS;
    await recordMirrorVersion(this.#pool, this.#location, publication, base, this.#stillActive);
    if (base) this.#lastBase = version;
  }
}
