import { rm } from 'node:fs/promises';
import type pg from 'pg';
import type { DataDir } from '../common/data-dir.js';
import { ErrorCode, SnapshotError, UpiRiskError } from '../common/errors.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { SnapshotBuilder } from '../builder/snapshot-builder.js';
import { emptyDelta } from '../builder/delta-merge.js';
import type { DeltaData } from '../engine/delta-data.js';
import { listSnapshots, snapshotPath } from '../engine/snapshot-files.js';
import { loadSnapshotOffThread } from '../engine/snapshot-loader.js';
import { SnapshotView } from '../engine/snapshot-view.js';
import { ServingView } from '../engine/serving-view.js';
import { BACKGROUND_NICE } from '../service/snapshot-service.js';
import { prepareToServe, type Preparation, type ServedData, type SwapEvent } from '../service/served-data.js';
import type { ServedVersions } from '../history/served-versions.js';
import { checkSchema } from '../store/migrations.js';
import { redactStoreUrl, storePool, type StoreLocation } from '../store/postgres.js';
import { evidenceChannel } from '../store/evidence-log.js';
import { readLog } from '../store/log-reader.js';
import { downloadSnapshot, newestPublication, snapshotsChannel, type Publication } from '../store/snapshot-publications.js';
import { StoreNotifications } from '../store/store-notifications.js';
import { logRecords } from './log-records.js';
import type { HistoryRecorder } from './history-recorder.js';
import type { ComparedAhead } from '../history/answer-changes.js';
import type { LoggedEvidence } from '../store/log-reader.js';
import { clearancesAsOf, evidenceOfVpas, logHead, readCorrections, type LoggedCorrection } from '../store/correction-log.js';
import type { ActiveClearance } from '../evidence/corrections.js';
import type { ClearanceEntry } from '../builder/clearance-filter.js';
import { subscribe } from '../common/listeners.js';

export interface FollowerOptions {
  readonly location: StoreLocation;
  /** Where downloaded snapshots are kept (its `snapshots/` folder). */
  readonly dataDir: DataDir;
  readonly logger?: Logger;
  /** How often to look at the store when no notification came, ms (default 1000). */
  readonly pollMs?: number;
  /** Log rows read and merged at a time (default 20,000). */
  readonly batchItems?: number;
  /** Where each state is recorded before it is served (history/served-versions.ts). Default: not recorded. */
  readonly versions?: ServedVersions;
  /** What records the fleet's history of answers, while this follower holds its lease (history-recorder.ts). Default: none. */
  readonly history?: HistoryRecorder;
}

/**
 * What a follower (`serve --store`) serves: the newest snapshot published
 * in the store, and as its live delta every evidence item logged after the
 * position that snapshot covers. It never builds. It follows the store by
 * LISTEN/NOTIFY with a poll behind it:
 * - new evidence is read from the log and merged into the delta (on the
 *   merge thread, delta-merge.ts) within moments of its commit;
 * - a new publication is downloaded, checked against its SHA-256, loaded
 *   off-thread, and swapped in with the log after its position as the new
 *   delta, while new evidence goes on being merged over the old one.
 * Every change of what is served (a merge, a swap) runs in order on one
 * queue, as in SnapshotService. When the store cannot be reached, what is
 * served stays (logged once, `storeConnected` false) and the next pass
 * catches up by itself.
 */
export class FollowerService implements ServedData {
  #current: SnapshotView;
  #delta: DeltaData;
  #view: ServingView;
  #publication: Publication;
  /** The log position the view covers: the snapshot's, or the delta's newest item. */
  #position: number;
  /** Chunk numbers given to the delta's batches (log-records.ts). */
  #chunks = 0;
  /** The clearances in force at `#position` (the log's corrections, correction-log.ts). */
  #clearances: ReadonlyMap<string, ActiveClearance>;
  readonly #options: FollowerOptions;
  readonly #logger: Logger;
  readonly #pool: pg.Pool;
  readonly #merger: SnapshotBuilder;
  readonly #listeners: ((event: SwapEvent) => void)[] = [];
  readonly #deltaListeners: ((delta: DeltaData) => void)[] = [];
  readonly #preparations: Preparation[] = [];
  readonly #positionWaiters = new Set<{ readonly position: number; readonly resolve: () => void }>();
  /** Publications refused (a bad checksum, a snapshot that does not load), by seq: not tried again. */
  readonly #refused = new Set<number>();
  /** A publication downloaded and loaded whose swap has not happened yet (its replay failed): taken again, not downloaded again. */
  #loaded: { readonly seq: number; readonly view: SnapshotView } | null = null;
  #notifications: StoreNotifications | null = null;
  #changes: Promise<void> = Promise.resolve();
  #catchUpQueued = false;
  #adopting: Promise<void> | null = null;
  #adoptAgain = false;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #connected = true;
  /** When the store last came back after an outage (Date.now()), 0 before any. */
  #backAt = 0;
  #caughtUpAt = Date.now();

  private constructor(options: FollowerOptions, pool: pg.Pool, merger: SnapshotBuilder, publication: Publication, first: Replayed) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#pool = pool;
    this.#merger = merger;
    this.#publication = publication;
    this.#current = first.view;
    this.#delta = first.delta;
    this.#position = first.position;
    this.#chunks = first.chunks;
    this.#clearances = first.clearances;
    this.#view = new ServingView(first.view, first.delta);
  }

  /**
   * Connect, wait for the first publication, load it and replay the log
   * after it up to the head: resolves once the follower serves the newest
   * snapshot and every item logged after it, which is when it is ready.
   */
  static async start(options: FollowerOptions): Promise<FollowerService> {
    const logger = options.logger ?? silentLogger;
    const pool = storePool(options.location, 3);
    const merger = new SnapshotBuilder({ threads: 1, incremental: false });
    try {
      await checkSchema(pool, options.location);
      let publication = await newestPublication(pool, options.location);
      if (publication === null) logger.info({ store: redactStoreUrl(options.location.url) }, 'no snapshot published yet; waiting for a builder');
      while (publication === null) {
        await sleep(options.pollMs ?? DEFAULT_POLL_MS);
        publication = await newestPublication(pool, options.location);
      }
      const timings: LoadTimings = { downloadMs: 0, loadMs: 0 };
      const view = await loadPublication(pool, options, publication, timings);
      const replayed = await replay(pool, merger, options, view, publication.position, null, 0, null);
      await recordServed(options, replayed, 'snapshot', 0);
      const service = new FollowerService(options, pool, merger, publication, replayed);
      await removeOtherSnapshots(options.dataDir, publication.id);
      logger.info(
        {
          ...publicationFields(publication),
          position: replayed.position,
          deltaVpas: replayed.delta.meta.vpaCount,
          downloadMs: Math.round(timings.downloadMs),
          loadMs: Math.round(timings.loadMs),
          replayMs: Math.round(performance.now() - replayed.startedAt),
        },
        'following the store',
      );
      service.#notifications = new StoreNotifications(
        options.location,
        [evidenceChannel(options.location), snapshotsChannel(options.location)],
        (channel) => (channel === snapshotsChannel(options.location) ? service.#adoptNewest() : service.#catchUp()),
        logger,
      );
      service.#schedule();
      return service;
    } catch (error) {
      await merger.close();
      await pool.end().catch(() => {});
      throw error;
    }
  }

  get current(): SnapshotView {
    return this.#current;
  }

  get delta(): DeltaData {
    return this.#delta;
  }

  get view(): ServingView {
    return this.#view;
  }

  /** The publication served. */
  get publication(): Publication {
    return this.#publication;
  }

  /** The log position served: every item up to it is answered from. */
  get position(): number {
    return this.#position;
  }

  /** Whether the last look at the store succeeded. */
  get storeConnected(): boolean {
    return this.#connected;
  }

  /** When the follower last saw the log's end and had served all of it (Date.now()). */
  get caughtUpAt(): number {
    return this.#caughtUpAt;
  }

  onSwap(listener: (event: SwapEvent) => void): () => void {
    return subscribe(this.#listeners, listener);
  }

  onDelta(listener: (delta: DeltaData) => void): () => void {
    return subscribe(this.#deltaListeners, listener);
  }

  beforeServing(prepare: Preparation): () => void {
    return subscribe(this.#preparations, prepare);
  }

  /** A follower builds nothing: a replaced snapshot's memory is let go. */
  reuseMemoryOf(): boolean {
    return false;
  }

  /**
   * Resolves once the log up to `position` is served, or after `timeoutMs`
   * (then false): an HTTP ingest answers once what it committed is served.
   */
  served(position: number, timeoutMs: number): Promise<boolean> {
    if (this.#position >= position) return Promise.resolve(true);
    this.#catchUp();
    return new Promise((resolve) => {
      const waiter = { position, resolve: () => resolve(true) };
      this.#positionWaiters.add(waiter);
      setTimeout(() => {
        if (this.#positionWaiters.delete(waiter)) resolve(false);
      }, timeoutMs).unref();
    });
  }

  /** Record the state served now, in the queue of changes, unless one was since the take-over: a follower taking the history lease over records it. */
  recordTakenOver(): Promise<void> {
    return this.#queueChange(async () => {
      if (this.#closed) return;
      await this.#options.history?.recordFirst(this.#current, this.#delta, { kind: 'snapshot', corrected: new Set(), clearances: this.#clearances });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    await this.#notifications?.close();
    await this.#adopting?.catch(() => {});
    this.#loaded = null;
    await this.#changes;
    for (const waiter of this.#positionWaiters) waiter.resolve();
    await this.#merger.close();
    await this.#pool.end().catch(() => {});
  }

  /** Merge what was logged since the position served into the delta (one queued at a time). */
  #catchUp(): void {
    if (this.#catchUpQueued || this.#closed) return;
    this.#catchUpQueued = true;
    void this.#queueChange(async () => {
      this.#catchUpQueued = false;
      if (this.#closed) return;
      await this.#stored(async () => {
        const replayed = await replay(this.#pool, this.#merger, this.#options, this.#current, this.#position, this.#delta, this.#chunks, this.#clearances);
        this.#caughtUpAt = Date.now();
        if (replayed.position === this.#position) return;
        await recordServed(this.#options, replayed, 'merge', this.#position);
        this.#serve(replayed);
        const started = replayed.startedAt;
        this.#logger.info({ position: replayed.position, deltaVpas: replayed.delta.meta.vpaCount, ms: Math.round(performance.now() - started) }, 'evidence merged into the delta');
        for (const listener of this.#deltaListeners) listener(replayed.delta);
      });
    });
  }

  /** Look for a newer publication and swap it in (one at a time; a call meanwhile looks again after). */
  #adoptNewest(): void {
    if (this.#closed) return;
    if (this.#adopting !== null) {
      this.#adoptAgain = true;
      return;
    }
    this.#adopting = this.#stored(async () => {
      const newest = await newestPublication(this.#pool, this.#options.location);
      if (newest === null || newest.seq <= this.#publication.seq || this.#refused.has(newest.seq)) return;
      if (newest.position < this.#publication.position) {
        // A snapshot of less of the log than the one served would take evidence away.
        this.#refused.add(newest.seq);
        this.#logger.error({ ...publicationFields(newest), served: this.#publication.id }, 'published snapshot covers less of the log than the one served; keeping what is served');
        return;
      }
      // Loaded once: a replay after it that fails (the store, a row it refuses) is tried again, not the download.
      let view = this.#loaded?.seq === newest.seq ? this.#loaded.view : null;
      if (view === null) {
        this.#loaded = null;
        try {
          view = await loadPublication(this.#pool, this.#options, newest);
        } catch (error) {
          if (!(error instanceof SnapshotError)) throw error;
          this.#refused.add(newest.seq);
          this.#logger.error({ ...publicationFields(newest), code: error.code, err: error.message }, 'published snapshot refused; keeping the one served');
          return;
        }
        this.#loaded = { seq: newest.seq, view };
      }
      const loaded = view;
      // Most of the log after it is merged here, while merges over the served snapshot go on; the rest in the swap.
      let replayed = await replay(this.#pool, this.#merger, this.#options, loaded, newest.position, null, 0, null);
      await prepareToServe(this.#preparations, loaded.data, this.#logger);
      // Compared with the history ahead of the swap, so that the swap records in moments what it changes.
      const ahead = (await this.#options.history?.compareAhead(loaded)) ?? null;
      await this.#queueChange(async () => {
        if (this.#closed) return;
        const first = replayed;
        replayed = await replay(this.#pool, this.#merger, this.#options, loaded, replayed.position, replayed.delta, replayed.chunks, replayed.clearances);
        const previous = this.#current;
        this.#publication = newest;
        this.#loaded = null;
        await recordServed(this.#options, { ...replayed, corrections: [...first.corrections, ...replayed.corrections] }, 'snapshot', this.#position, ahead);
        this.#serve(replayed);
        this.#caughtUpAt = Date.now();
        this.#logger.info({ ...publicationFields(newest), previous: previous.meta.id, position: replayed.position, deltaVpas: replayed.delta.meta.vpaCount }, 'snapshot swapped');
        for (const listener of this.#listeners) listener({ previous, next: loaded, delta: replayed.delta, reason: 'new-snapshot' });
      });
      await removeOtherSnapshots(this.#options.dataDir, newest.id);
    }).finally(() => {
      this.#adopting = null;
      if (this.#adoptAgain && !this.#closed) {
        this.#adoptAgain = false;
        this.#adoptNewest();
      }
    });
  }

  /** Serve what a replay made: its snapshot and delta, up to its position. */
  #serve(replayed: Replayed): void {
    this.#current = replayed.view;
    this.#delta = replayed.delta;
    this.#position = replayed.position;
    this.#chunks = replayed.chunks;
    this.#clearances = replayed.clearances;
    this.#view = new ServingView(replayed.view, replayed.delta);
    for (const waiter of this.#positionWaiters) {
      if (waiter.position > this.#position) continue;
      this.#positionWaiters.delete(waiter);
      waiter.resolve();
    }
  }

  /** Run `work` against the store: a failure to reach it is logged once per outage, and what is served stays. */
  async #stored(work: () => Promise<void>): Promise<void> {
    try {
      await work();
      if (!this.#connected) {
        this.#logger.info({ store: redactStoreUrl(this.#options.location.url), position: this.#position }, 'store reachable again; caught up');
        this.#backAt = Date.now();
      }
      this.#connected = true;
    } catch (error) {
      const code = error instanceof UpiRiskError ? error.code : undefined;
      if (code === ErrorCode.STORE) {
        if (this.#connected && Date.now() - this.#backAt < FLAPPING_MS) {
          // A server starting up answers one query and refuses the next: the same outage, not a new one.
          this.#logger.warn({ err: (error as Error).message }, 'store lost again just after it came back; still serving what is held');
        } else if (this.#connected) {
          this.#logger.error({ err: (error as Error).message, snapshot: this.#current.meta.id, position: this.#position }, 'store unreachable; serving the snapshot and delta held until it is back');
        }
        this.#connected = false;
        return;
      }
      this.#logger.error({ code, err: (error as Error).message, position: this.#position }, 'following the store failed; serving what was served before');
    }
  }

  /**
   * Run `change` after the changes queued before it. The queue goes on
   * whatever becomes of it; the caller hears of its failure (#stored logs
   * it), so a swap that failed is not taken for one that happened.
   */
  #queueChange(change: () => Promise<void>): Promise<void> {
    const run = this.#changes.then(change);
    this.#changes = run.catch(() => {});
    return run;
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#catchUp();
      this.#adoptNewest();
      if (!this.#closed) this.#schedule();
    }, this.#options.pollMs ?? DEFAULT_POLL_MS);
    this.#timer.unref();
  }
}

const DEFAULT_POLL_MS = 1000;
/** A store lost again within this long of coming back is reported as part of the same outage, ms. */
const FLAPPING_MS = 30_000;
const DEFAULT_BATCH_ITEMS = 20_000;

interface Replayed {
  readonly view: SnapshotView;
  readonly delta: DeltaData;
  readonly position: number;
  readonly chunks: number;
  readonly startedAt: number;
  /** The clearances in force at `position`, by VPA. */
  readonly clearances: ReadonlyMap<string, ActiveClearance>;
  /** The corrections applied, in order. */
  readonly corrections: readonly LoggedCorrection[];
}

/**
 * The log after `after`, up to its head, merged over `view` onto
 * `previous` (or a new delta): evidence and corrections in position order.
 * A correction answers its VPAs afresh from their items logged up to it
 * and not retracted by then (DeltaMergeTask.reset), so every follower
 * serves the same answers at the same position. `clearances` are those in
 * force at `after` (read from the store when null).
 */
async function replay(
  pool: pg.Pool,
  merger: SnapshotBuilder,
  options: FollowerOptions,
  view: SnapshotView,
  after: number,
  previous: DeltaData | null,
  chunks: number,
  clearances: ReadonlyMap<string, ActiveClearance> | null,
): Promise<Replayed> {
  const startedAt = performance.now();
  const location = options.location;
  const batch = options.batchItems ?? DEFAULT_BATCH_ITEMS;
  let inForce = clearances ?? (await clearancesAsOf(pool, location, after));
  // Everything up to the head has committed: evidence and corrections are read up to it, not past.
  const head = await logHead(pool, location);
  let delta = previous ?? emptyDelta(view.data, Date.now());
  let position = after;
  const corrections: LoggedCorrection[] = [];
  const merge = async (rows: readonly LoggedEvidence[]) => {
    if (rows.length === 0) return;
    const { records, file } = logRecords(rows, chunks++);
    const last = rows[rows.length - 1]!.position;
    ({ delta } = await merger.mergeDelta({ base: view.data, previous: delta, inputs: [records], files: [file], now: Date.now(), position: last, clearances: clearanceEntries(inForce) }));
    position = last;
  };
  for (;;) {
    const read = await readLog(pool, location, position, batch);
    const rows = read.filter((row) => row.position <= head);
    const full = read.length === batch && rows.length === batch;
    const fixes = await readCorrections(pool, location, position, full ? rows[rows.length - 1]!.position : head);
    if (rows.length === 0 && fixes.length === 0) break;
    let next = 0;
    for (const fix of fixes) {
      const before = rows.findIndex((row, i) => i >= next && row.position > fix.position);
      const upTo = before < 0 ? rows.length : before;
      await merge(rows.slice(next, upTo));
      next = upTo;
      inForce = afterCorrection(inForce, fix);
      corrections.push(fix);
      const items = await evidenceOfVpas(pool, location, fix.upis, fix.position);
      const records = items.length === 0 ? new ArrayBuffer(0) : logRecords(items, chunks++).records;
      ({ delta } = await merger.mergeDelta({
        base: view.data,
        previous: delta,
        inputs: [],
        files: [],
        now: Date.now(),
        position: fix.position,
        clearances: clearanceEntries(inForce),
        reset: { upis: fix.upis, records },
      }));
      position = fix.position;
    }
    await merge(rows.slice(next));
    if (!full) break;
  }
  return { view, delta, position, chunks, startedAt, clearances: inForce, corrections };
}

/**
 * Record that what a replay made is served from now, made by `kind` after
 * the state served at `after` (a log position): called before it is.
 */
async function recordServed(options: FollowerOptions, replayed: Replayed, kind: 'merge' | 'snapshot', after: number, ahead: ComparedAhead | null = null): Promise<void> {
  const { view, delta } = replayed;
  // The corrections logged since the state served before name the VPAs whose change they caused.
  const corrected = new Set(replayed.corrections.filter((fix) => fix.position > after).flatMap((fix) => fix.upis));
  await options.history?.record(view, delta, { kind, corrected, clearances: replayed.clearances }, ahead);
  await options.versions?.record({ snapshot: view.meta.id, position: delta.meta.position }, Date.now());
}

/** The clearances in force once `fix` is applied. */
function afterCorrection(clearances: ReadonlyMap<string, ActiveClearance>, fix: LoggedCorrection): ReadonlyMap<string, ActiveClearance> {
  if (fix.clearance === null) return clearances;
  const next = new Map(clearances);
  if (fix.kind === 'clearance') next.set(fix.clearance.upi, fix.clearance);
  else next.delete(fix.clearance.upi);
  return next;
}

function clearanceEntries(clearances: ReadonlyMap<string, ActiveClearance>): ClearanceEntry[] {
  return [...clearances].map(([upi, c]) => ({ upi, createdAt: c.createdAt, urls: [...c.urls] }));
}

/** How long a publication's download (with its checksum) and its load took, ms. */
interface LoadTimings {
  downloadMs: number;
  loadMs: number;
}

/** Download a publication (checked against its SHA-256) and load it off-thread. */
async function loadPublication(pool: pg.Pool, options: FollowerOptions, publication: Publication, timings?: LoadTimings): Promise<SnapshotView> {
  const started = performance.now();
  const path = await downloadSnapshot(pool, options.location, publication, options.dataDir);
  const downloaded = performance.now();
  try {
    const view = new SnapshotView(await loadSnapshotOffThread(path, { niceIncrement: BACKGROUND_NICE }));
    if (timings !== undefined) {
      timings.downloadMs = downloaded - started;
      timings.loadMs = performance.now() - downloaded;
    }
    if (view.meta.id !== publication.id) {
      throw new SnapshotError(ErrorCode.SNAPSHOT_FORMAT, `published snapshot ${publication.id} holds snapshot ${view.meta.id}`);
    }
    return view;
  } catch (error) {
    await rm(path, { force: true });
    throw error;
  }
}

/** Remove downloaded snapshots other than the one served. */
async function removeOtherSnapshots(dir: DataDir, keep: string): Promise<void> {
  const kept = snapshotPath(dir, keep);
  await Promise.all((await listSnapshots(dir)).filter((path) => path !== kept).map((path) => rm(path, { force: true })));
}

function publicationFields(publication: Publication): Record<string, unknown> {
  return { snapshot: publication.id, seq: publication.seq, snapshotPosition: publication.position, vpas: publication.vpas };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
