import { readFile, rm } from 'node:fs/promises';
import { NO_CORRECTIONS, type CorrectionState } from '../evidence/corrections.js';
import { clearancesAsOf, logHead, retractedAsOf } from '../store/correction-log.js';
import { join } from 'node:path';
import pg from 'pg';
import { writeFileAtomic } from '../common/atomic-file.js';
import { enableCollector, threadCollector } from '../common/collector.js';
import type { DataDir } from '../common/data-dir.js';
import { ErrorCode, messageOf, StoreError, UpiRiskError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { EvidenceBatch, storeCheckedEvidence } from '../evidence/store.js';
import { SnapshotBuilder, type BuildReport } from '../builder/snapshot-builder.js';
import { countsFrom } from '../builder/scoring.js';
import { earliestFirstSeen } from '../engine/snapshot-data.js';
import { checkSchema } from '../store/migrations.js';
import { connectStore, holdsAdvisoryLock, redactStoreUrl, storeError, storePool, type StoreLocation } from '../store/postgres.js';
import { copyLog, evidenceIdAt, type MirroredEvidence } from '../store/log-reader.js';
import { newestPublication, publishSnapshot, publishedClusterIds, type Publication } from '../store/snapshot-publications.js';
import { BuilderMirror } from '../fleet/builder-mirror.js';
import { loadMirrorKey, type MirrorKey } from '../mirror/signing-key.js';

export interface BuilderRoleOptions {
  readonly location: StoreLocation;
  /** The builder's working directory: the log mirrored as evidence files, its snapshots, its build state. */
  readonly dataDir: DataDir;
  readonly logger?: Logger;
  /** When to publish (default DEFAULT_PUBLISH_POLICY). */
  readonly policy?: Partial<PublishPolicy>;
  /** How often a standby tries for the lease and the active builder looks at the log, ms (default 2000). */
  readonly pollMs?: number;
  readonly buildThreads?: number;
  /** Log rows per mirrored evidence file (default 100,000). */
  readonly mirrorBatch?: number;
  /**
   * Evidence captured more than this many ms before a build's scoring time
   * does not count (BuildOptions.evidenceMaxAgeMs; default 0, never). With
   * it, a publication older than the policy's `afterMs` that holds evidence
   * expired since is due even when the log has not moved, so that what
   * expired is taken back (#holdsExpired).
   */
  readonly evidenceMaxAgeMs?: number;
  /** The least time between two versions of the fleet mirror, ms, made when DIR/mirror holds a signing key (MirrorKeeper's default when not given). */
  readonly mirrorIntervalMs?: number;
}

/**
 * When the active builder publishes: once the log holds `items` evidence
 * items past the newest publication, or the newest is older than `afterMs`
 * and the log has moved past it; and at once when nothing is published.
 */
export interface PublishPolicy {
  readonly items: number;
  readonly afterMs: number;
}

/** 100,000 items or ten minutes, as the embedded server's compaction (docs/deployment.md). */
export const DEFAULT_PUBLISH_POLICY: PublishPolicy = { items: 100_000, afterMs: 10 * 60_000 };

/**
 * `upi-risk builder`: builds snapshots from the store's evidence log and
 * publishes them, the compaction of every follower's live delta.
 *
 * Any number may run; one is active. The lease is a session-level advisory
 * lock held on a connection of its own: it ends with that connection, so a
 * builder that dies (even by SIGKILL) or loses the database lets a standby,
 * which tries every `pollMs`, take over within a few seconds. The
 * publication runs on that same connection, so a builder that has lost the
 * lease cannot publish.
 *
 * The active builder mirrors the log into its data directory as evidence
 * files (the files the embedded builder reads, so the build is the same
 * code), builds incrementally, and publishes the snapshot with the log
 * position it covers and the cluster id state it was built with. Before
 * its first build after taking the lease, the cluster id state of the
 * newest publication replaces its own, so cluster ids carry on from the
 * snapshot followers serve whoever builds next.
 */
export class BuilderRole {
  readonly #options: BuilderRoleOptions;
  readonly #logger: Logger;
  readonly #policy: PublishPolicy;
  readonly #pool: pg.Pool;
  #builder: SnapshotBuilder;
  /** The lease's connection while this builder is active. */
  #lease: pg.Client | null = null;
  /** The log position mirrored into the data directory. */
  #mirrored = 0;
  /** The publication whose cluster id state the data directory holds; undefined when not known. */
  #stateOf: number | null | undefined = undefined;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> = Promise.resolve();
  #requested = false;
  #closed = false;
  #lastFailure: string | null = null;
  /** The earliest first_seen of this process's last build (null before one): what expires first. */
  #earliestCounted: number | null = null;
  #published: Publication | null = null;
  /** The corrections up to the position the next build covers (correction-log.ts), read before it starts. */
  #corrections: CorrectionState = NO_CORRECTIONS;
  /** The key the fleet mirror is signed with (DIR/mirror), or null when there is none: then no mirror is made. */
  #mirrorKey: MirrorKey | null = null;
  /** The backend pid of the lease's connection: whoever holds the lease's advisory lock by it is active. */
  #leasePid = 0;
  /** The fleet mirror while this builder is active, and its start under way. */
  #fleetMirror: BuilderMirror | null = null;
  #mirrorStarting: Promise<void> | null = null;
  #mirrorFailure: string | null = null;

  private constructor(options: BuilderRoleOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#policy = { ...DEFAULT_PUBLISH_POLICY, ...options.policy };
    this.#pool = storePool(options.location, 2);
    this.#builder = newBuilder(options, () => this.#corrections);
  }

  /** Check the schema, then try for the lease now and every `pollMs`. */
  static async start(options: BuilderRoleOptions): Promise<BuilderRole> {
    const role = new BuilderRole(options);
    try {
      await checkSchema(role.#pool, options.location);
      role.#mirrorKey = await loadMirrorKey(options.dataDir.mirror);
    } catch (error) {
      await role.close();
      throw error;
    }
    role.#tick();
    return role;
  }

  /** Whether this builder holds the lease. */
  get active(): boolean {
    return this.#lease !== null;
  }

  /** The last publication this builder made. */
  get published(): Publication | null {
    return this.#published;
  }

  /** Build and publish at the next pass, whatever the policy says (SIGUSR2); only the active builder does. */
  requestBuild(): void {
    this.#requested = true;
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#tick();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    await this.#running;
    await this.#stopMirror();
    await this.#release();
    await this.#builder.close();
    await this.#pool.end().catch(() => {});
  }

  #tick(): void {
    this.#timer = null;
    this.#running = this.#pass()
      .catch((error: unknown) => this.#failed(error))
      .finally(() => {
        if (this.#closed) return;
        this.#timer = setTimeout(() => this.#tick(), this.#options.pollMs ?? DEFAULT_POLL_MS);
        this.#timer.unref();
      });
  }

  async #pass(): Promise<void> {
    if (this.#lease === null) {
      // Only the active builder signs: a mirror started under a lease now lost stops.
      await this.#stopMirror();
      if (!(await this.#acquire())) return;
    }
    // Taken before the log is read: a request made during this pass gets a pass that reads what came before it.
    const requested = this.#requested;
    this.#requested = false;
    try {
      const published = await newestPublication(this.#pool, this.#options.location);
      if (published !== null) this.#startMirror();
      // Read before the mirror: all evidence up to the head is mirrored then, and corrections up to it are built in.
      const head = await logHead(this.#pool, this.#options.location);
      await this.#mirror();
      const covered = Math.max(head, this.#mirrored);
      const due =
        requested ||
        published === null ||
        covered - published.position >= this.#policy.items ||
        ((covered > published.position || this.#holdsExpired()) && Date.now() - published.createdAt.getTime() >= this.#policy.afterMs);
      if (!due) return;
      await this.#restoreClusterIds(published);
      const position = covered;
      this.#corrections = {
        sequence: position,
        retracted: await retractedAsOf(this.#pool, this.#options.location, position),
        clearances: await clearancesAsOf(this.#pool, this.#options.location, position),
      };
      const maxAge = this.#options.evidenceMaxAgeMs;
      // The build moves the cluster-id state on, even one that fails after: until a publication holds it, it is none's.
      this.#stateOf = undefined;
      const report = await this.#builder.build({
        dataDir: this.#options.dataDir,
        logger: this.#logger,
        ...(maxAge === undefined ? {} : { evidenceMaxAgeMs: maxAge }),
        onAssembled: (data) => (this.#earliestCounted = earliestFirstSeen(data)),
      });
      await this.#publish(report, position);
      this.#startMirror();
      this.#lastFailure = null;
    } catch (error) {
      this.#requested ||= requested;
      throw error;
    }
  }

  /**
   * With an age limit on evidence: whether the newest publication may hold
   * evidence expired since, so that time alone makes one due. Unknown before
   * this process has built (a changed limit then applies at the next
   * publication), and the last build's earliest first_seen after.
   */
  #holdsExpired(): boolean {
    const maxAgeMs = this.#options.evidenceMaxAgeMs ?? 0;
    if (maxAgeMs === 0) return false;
    return this.#earliestCounted === null || this.#earliestCounted < countsFrom(Date.now(), maxAgeMs);
  }

  /** Try for the lease; on success, check the mirror against the log before anything is built from it. */
  async #acquire(): Promise<boolean> {
    const client = await connectStore(this.#options.location);
    client.on('error', () => {});
    try {
      const got = (await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [leaseName(this.#options.location)])).rows[0]?.got === true;
      if (!got) {
        await client.end().catch(() => {});
        return false;
      }
    } catch (error) {
      await client.end().catch(() => {});
      throw storeError(this.#options.location, error);
    }
    client.once('end', () => {
      if (this.#lease !== client) return;
      this.#lease = null;
      this.#logger.error({ store: redactStoreUrl(this.#options.location.url) }, 'lost the builder lease with its connection; standing by');
    });
    this.#lease = client;
    this.#leasePid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    this.#stateOf = undefined;
    this.#logger.info({ store: redactStoreUrl(this.#options.location.url), schema: this.#options.location.schema }, 'builder lease taken: this builder is active');
    try {
      await this.#checkMirror();
    } catch (error) {
      await this.#release();
      throw error;
    }
    return true;
  }

  async #release(): Promise<void> {
    const lease = this.#lease;
    this.#lease = null;
    await lease?.end().catch(() => {});
  }

  /**
   * Trust the mirror only if the log still holds, at the position it
   * reached, the item it recorded there; otherwise (another store, a log
   * restored from an older backup) start it again, with an empty directory.
   */
  async #checkMirror(): Promise<void> {
    const dir = this.#options.dataDir;
    const state = await readMirrorState(dir);
    if (state !== null && state.schema === this.#options.location.schema) {
      const id = state.position === 0 ? null : await evidenceIdAt(this.#pool, this.#options.location, state.position);
      if (state.position === 0 || id === state.evidenceId) {
        this.#mirrored = state.position;
        return;
      }
    }
    if (state !== null) this.#logger.warn({ dataDir: dir.root, position: state.position }, 'the mirrored log does not match the store; mirroring it again');
    // The builder first: it stops writing its carried records into state/ before that goes.
    await this.#builder.close();
    await Promise.all([dir.evidence, dir.snapshots, dir.state].map((path) => rm(path, { recursive: true, force: true })));
    this.#builder = newBuilder(this.#options, () => this.#corrections);
    this.#mirrored = 0;
  }

  /**
   * Append what was logged since the mirror's position to the data
   * directory, as evidence files of `mirrorBatch` rows. Rows are checked
   * once, as they are read (copyLog), and stored as they are
   * (storeCheckedEvidence). One file is written, flushed and recorded
   * while the next batch is read; files are stored in log order and the
   * mirror's state (log-mirror.json) names the last row of a stored file
   * only once that file is stored. A crash between a file and its state
   * leaves rows that the next pass mirrors again, which the build reads
   * once (the first of an evidence id is kept).
   */
  async #mirror(): Promise<void> {
    const { location, dataDir } = this.#options;
    const batch = this.#options.mirrorBatch ?? DEFAULT_MIRROR_BATCH;
    const rowsPerCopy = batch * MIRROR_BATCHES_PER_COPY;
    const store = async (records: EvidenceBatch, last: MirroredEvidence) => {
      await storeCheckedEvidence(dataDir, records);
      await writeFileAtomic(mirrorStatePath(dataDir), Buffer.from(JSON.stringify({ schema: location.schema, position: last.position, evidenceId: last.record.evidenceId })));
      this.#mirrored = last.position;
    };
    let storing: Promise<void> = Promise.resolve();
    let records = new EvidenceBatch();
    let last: MirroredEvidence | null = null;
    const handOff = async () => {
      const full = records;
      records = new EvidenceBatch();
      await storing;
      storing = store(full, last!);
      // Awaited with the next batch or at the end; until then a failure must not count as unhandled.
      storing.catch(() => {});
    };
    let read = this.#mirrored;
    try {
      for (;;) {
        const copied = await copyLog(this.#pool, location, read, rowsPerCopy, (entry) => {
          records.add(entry.record);
          last = entry;
          return records.records < batch ? undefined : handOff();
        });
        read = copied.position;
        if (copied.rows < rowsPerCopy) break;
      }
      if (records.records > 0) await handOff();
    } finally {
      await storing.catch(() => {});
    }
    await storing;
  }

  /** Make the build's cluster id state the newest publication's (none: the empty state), unless it is already. */
  async #restoreClusterIds(published: Publication | null): Promise<void> {
    const seq = published?.seq ?? null;
    if (this.#stateOf === seq) return;
    const path = this.#options.dataDir.clusterIds;
    if (published === null) {
      await rm(path, { force: true });
    } else {
      const bytes = await publishedClusterIds(this.#pool, this.#options.location, published);
      // Removed since it was the newest (newer ones were published): starting from no state would renumber every cluster.
      if (bytes === null) throw new StoreError(ErrorCode.STORE, `publication ${published.id} was removed before its cluster id state was read; looking again`);
      await writeFileAtomic(path, bytes);
    }
    this.#stateOf = seq;
  }

  async #publish(report: BuildReport, position: number): Promise<void> {
    const lease = this.#lease;
    if (lease === null) throw new StoreError(ErrorCode.STORE, 'the builder lease was lost during the build; not publishing');
    // The build moved the state on: until the publication commits, it is no publication's.
    this.#stateOf = undefined;
    const clusterIds = await readFile(this.#options.dataDir.clusterIds);
    const started = performance.now();
    const publication = await publishSnapshot(
      lease,
      this.#options.location,
      { id: report.meta.id, position, vpas: report.meta.vpaCount, path: report.path, clusterIds },
      (client) => this.#checkLease(client, 'not publishing'),
    );
    this.#stateOf = publication.seq;
    this.#published = publication;
    this.#logger.info(
      { snapshot: publication.id, seq: publication.seq, position, vpas: publication.vpas, bytes: publication.size, buildMs: Math.round(report.durationMs), publishMs: Math.round(performance.now() - started) },
      'snapshot published',
    );
  }

  /**
   * Throws unless the lease's connection (`pid`, by default the one held
   * now) still holds the lease's lock; runs in a transaction that commits
   * only if it does.
   */
  async #checkLease(client: pg.ClientBase, refused: string, pid = this.#leasePid): Promise<void> {
    const held = await holdsAdvisoryLock(client, leaseName(this.#options.location), pid);
    if (!held) throw new StoreError(ErrorCode.STORE, `the builder lease is no longer held; ${refused}`);
  }

  /**
   * With a signing key, start making the fleet mirror once a publication
   * exists (it follows what followers serve): not awaited, since following
   * the store loads a snapshot; a failure is logged and tried at the next pass.
   */
  #startMirror(): void {
    if (this.#mirrorKey === null || this.#fleetMirror !== null || this.#mirrorStarting !== null || this.#lease === null) return;
    const lease = this.#lease;
    // The lease this mirror was started under: a lease taken again later is another connection.
    const pid = this.#leasePid;
    this.#mirrorStarting = BuilderMirror.start({
      location: this.#options.location,
      dataDir: this.#options.dataDir,
      key: this.#mirrorKey,
      logger: this.#logger,
      ...(this.#options.mirrorIntervalMs === undefined ? {} : { intervalMs: this.#options.mirrorIntervalMs }),
      ...(this.#options.pollMs === undefined ? {} : { pollMs: this.#options.pollMs }),
      stillActive: (client) => this.#checkLease(client, 'not recording the mirror version', pid),
    }).then(
      async (mirror) => {
        this.#mirrorFailure = null;
        if (this.#closed || this.#lease !== lease) await mirror.close();
        else this.#fleetMirror = mirror;
      },
      (error: unknown) => {
        const message = messageOf(error);
        // The same failure at every pass is logged once.
        if (message !== this.#mirrorFailure) this.#logger.error({ err: message }, 'the fleet mirror could not start; trying again at the next pass');
        this.#mirrorFailure = message;
      },
    ).finally(() => (this.#mirrorStarting = null));
  }

  async #stopMirror(): Promise<void> {
    await this.#mirrorStarting;
    const mirror = this.#fleetMirror;
    this.#fleetMirror = null;
    await mirror?.close();
  }

  #failed(error: unknown): void {
    const message = messageOf(error);
    // The same failure at every pass (the store down) is logged once.
    if (message !== this.#lastFailure) {
      this.#logger.error({ code: error instanceof UpiRiskError ? error.code : undefined, err: message }, 'builder pass failed; trying again');
    }
    this.#lastFailure = message;
  }
}

const DEFAULT_POLL_MS = 2000;
const DEFAULT_MIRROR_BATCH = 100_000;
/** Batches a COPY of the log reads: what a failure mid-mirror reads and drops at most (copyLog). */
const MIRROR_BATCHES_PER_COPY = 10;

function newBuilder(options: BuilderRoleOptions, corrections: () => CorrectionState): SnapshotBuilder {
  // As a serving process's builder (SnapshotService.start): what is written out to its directory is given back then.
  enableCollector();
  return new SnapshotBuilder({
    corrections,
    collect: () => threadCollector()?.(),
    // Between builds the records are read from files of its directory, not held (spilled-segments.ts).
    spillDir: options.dataDir.carry,
    onSpillFailed: (error: unknown) => options.logger?.warn({ err: String(error) }, 'carried records could not be written to the data directory; they stay in memory'),
    // Publications are minutes apart: the working memory would be held beside the new snapshot for nothing.
    releaseWorkingMemory: true,
    ...(options.buildThreads === undefined ? {} : { threads: options.buildThreads }),
  });
}

/** The advisory lock every builder of one schema asks for. */
function leaseName(location: StoreLocation): string {
  return `upi-risk builder ${location.schema}`;
}

interface MirrorState {
  readonly schema: string;
  readonly position: number;
  readonly evidenceId: string;
}

function mirrorStatePath(dir: DataDir): string {
  return join(dir.state, 'log-mirror.json');
}

/** The mirror's state file, or null when there is none or it is not one (then the mirror starts again). */
async function readMirrorState(dir: DataDir): Promise<MirrorState | null> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(mirrorStatePath(dir), 'utf8'));
  } catch {
    return null;
  }
  const state = value as Partial<MirrorState> | null;
  if (
    typeof state !== 'object' ||
    state === null ||
    typeof state.schema !== 'string' ||
    typeof state.evidenceId !== 'string' ||
    !Number.isSafeInteger(state.position) ||
    state.position! < 0
  ) {
    return null;
  }
  return state as MirrorState;
}
