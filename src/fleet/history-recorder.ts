import type pg from 'pg';
import type { Logger } from '../common/logger.js';
import { dataVersion, type DeltaData } from '../engine/delta-data.js';
import { servedAsOf } from '../engine/serving-view.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import { AnswerHistory, type ComparedAhead, type ServedChange } from '../history/answer-changes.js';
import { ChangeLog, type CommittedState } from '../history/change-log.js';
import {
  RECORDER_ALIVE_EVERY_MS,
  beginRecording,
  lastRecordedState,
  newestColumn,
  newestRecords,
  pruneRecordedHistory,
  recordingAlive,
  writeRecordedState,
  type LastRecordedState,
} from '../store/answer-history-store.js';
import type { StoreLocation } from '../store/postgres.js';
import { StoreLease } from '../store/store-lease.js';

export interface HistoryRecorderOptions {
  readonly location: StoreLocation;
  readonly pool: pg.Pool;
  /** Where the recorder keeps its change log (DataDir.answerChanges), its columns beside it. */
  readonly path: string;
  /** How long the history is kept, ms (serve --history-days). */
  readonly keepMs: number;
  readonly logger: Logger;
  /** How often a follower not recording tries for the lease, ms. */
  readonly leasePollMs?: number;
}

/** How often the recorder drops what the retention no longer needs from the store. */
const PRUNE_EVERY_MS = 24 * 60 * 60 * 1000;

const HISTORY_DUTY = { lock: 'answer history', name: 'answer history', duty: 'records the history of answers of the states it serves' } as const;

/**
 * The fleet's history of answers (docs/design.md, "The fleet's history of
 * answers"): one follower at a time, holding the history lease, records
 * what each state it serves changes, as the embedded server does (a change
 * log and columns in its data directory, answer-changes.ts), and copies
 * each state's records into the store before serving it; every follower
 * reads them there (store/answer-history-store.ts). The states it recorded
 * are the fleet's states of record: an as-of lookup answers what the
 * recorder served at that instant.
 *
 * A follower taking the lease continues the history: its own change log
 * when that ends where the store's does (it held the lease last), else a
 * log made from each VPA's newest record in the store and the newest
 * column. Its first state is compared whole with it. While no follower
 * holds the lease (the holder gone, before another takes it) nothing is
 * recorded, and instants then are not told (503).
 */
export class HistoryRecorder {
  readonly #options: HistoryRecorderOptions;
  readonly #lease: StoreLease;
  /** Recording: the history, the term and the lease's backend. */
  #recording: { readonly answers: AnswerHistory; readonly term: number; readonly pid: number; readonly alive: NodeJS.Timeout } | null = null;
  /** When the last state recorded began (the store's, at a take-over): the next begins after it. */
  #lastAt = 0;
  /** The state being recorded: its names in the store. */
  #next: { readonly at: number; readonly snapshot: string; readonly position: number; readonly dataAsOf: number } | null = null;
  /** Recording, taking over and stopping, one at a time. */
  #queue: Promise<void> = Promise.resolve();
  #prunedAt = 0;
  /** Which history each comparison ahead was made for. */
  readonly #aheadOf = new WeakMap<ComparedAhead, AnswerHistory>();
  /** Records the state served now again (FollowerService.recordAgain): a follower taking the lease records it at once. */
  #recordCurrent: (() => Promise<void>) | null = null;

  constructor(options: HistoryRecorderOptions) {
    this.#options = options;
    this.#lease = new StoreLease(options.location, HISTORY_DUTY, options.logger, (pid) => this.#serially(() => this.#takeOver(pid)), options.leasePollMs);
  }

  /** Try for the lease now, and keep trying while another holds it; `recordCurrent` records the state served now (through record). */
  start(recordCurrent: () => Promise<void>): void {
    this.#recordCurrent = recordCurrent;
    this.#lease.start();
  }

  /** Whether this follower records the history now. */
  get recording(): boolean {
    return this.#recording !== null;
  }

  /**
   * Record that `view` with `delta` is served from now, how it came about
   * (`change`), before it is served. Never rejects: a state that cannot be
   * copied into the store ends this follower's recording (logged), and it
   * is served all the same.
   */
  record(view: SnapshotView, delta: DeltaData, change: ServedChange, ahead: ComparedAhead | null = null): Promise<void> {
    return this.#serially(async () => {
      const recording = this.#recording;
      if (recording === null) return;
      const at = Math.max(Date.now(), this.#lastAt + 1);
      this.#next = { at, snapshot: view.meta.id, position: delta.meta.position, dataAsOf: servedAsOf(view, delta) };
      // A comparison made for the history of an earlier take-over compares nothing of this one.
      const usable = ahead !== null && this.#aheadOf.get(ahead) === recording.answers ? ahead : null;
      await recording.answers.record(view, delta, change, at, dataVersion(view.meta.id, delta.meta.position), usable);
      this.#next = null;
      const why = recording.answers.unavailable;
      if (why !== null) {
        this.#options.logger.error({ err: why }, 'the history of answers could not be recorded in the store; this follower stops recording it, and the lease goes to the next');
        await this.#stop(at - 1);
        void this.#lease.giveUp();
        return;
      }
      this.#lastAt = at;
      if (this.#options.keepMs > 0 && at - this.#prunedAt > PRUNE_EVERY_MS) await this.#prune(at);
    });
  }

  /** AnswerHistory.compareAhead, while recording: a snapshot about to be swapped in, compared ahead of the swap. */
  async compareAhead(view: SnapshotView): Promise<ComparedAhead | null> {
    const answers = this.#recording?.answers;
    const ahead = (await answers?.compareAhead(view)) ?? null;
    if (ahead !== null && answers !== undefined) this.#aheadOf.set(ahead, answers);
    return ahead;
  }

  async close(): Promise<void> {
    await this.#lease.close();
    await this.#queue;
  }

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** Take the history over with the lease held on backend `pid`; resolves to what stops it. */
  async #takeOver(pid: number): Promise<() => Promise<void>> {
    const { location, pool, logger } = this.#options;
    const stop = () => this.#serially(() => this.#stop(Date.now()));
    try {
      const last = await lastRecordedState(pool, location);
      const answers = await this.#openContinuing(pid, last);
      const term = await beginRecording(pool, location, Date.now());
      const alive = setInterval(() => {
        // Never past a state being recorded: should its copy fail, it is served all the same, and unrecorded.
        const next = this.#next;
        void recordingAlive(pool, location, term, next === null ? Date.now() : Math.min(Date.now(), next.at - 1)).catch((error: Error) => logger.warn({ err: error.message }, 'could not tell the store the history is still being recorded'));
      }, RECORDER_ALIVE_EVERY_MS);
      alive.unref();
      this.#recording = { answers, term, pid, alive };
      this.#lastAt = Math.max(this.#lastAt, last?.at ?? 0);
      logger.info({ term, vpas: answers.vpaCount, continuedAt: last?.at ?? null }, 'recording the history of answers');
      // The state served now, which another recorded or none did: the term's first, recorded after this take-over.
      void this.#recordCurrent?.().catch((error: Error) => logger.error({ err: error.message }, 'the state served could not be recorded at the take-over'));
    } catch (error) {
      logger.error({ err: (error as Error).message }, 'could not take the history of answers over; the lease goes to the next');
      void this.#lease.giveUp();
    }
    return stop;
  }

  /**
   * The history to continue from `last` (the store's last state): the
   * change log in the data directory when it ends there, else one made
   * from the store.
   */
  async #openContinuing(pid: number, last: LastRecordedState | null): Promise<AnswerHistory> {
    const { location, pool, path, keepMs, logger } = this.#options;
    const copy = {
      committed: async (committed: CommittedState, log: ChangeLog) => {
        const recording = this.#recording;
        const next = this.#next;
        if (recording === null || next === null) throw new Error('no state is being recorded');
        await writeRecordedState(pool, location, { lockName: this.#lease.lockName, pid }, { term: recording.term, snapshot: next.snapshot, position: next.position, dataAsOf: next.dataAsOf }, committed, log);
      },
    };
    // States after the store's last were never copied into it: cut off at open.
    const servedUntil = last?.at ?? 0;
    const own = await AnswerHistory.open(path, servedUntil, keepMs, logger, copy);
    if (own.unavailable === null && own.lastAt === servedUntil && (last === null || own.bytes === last.logBytes)) return own;
    await own.close();
    const started = performance.now();
    await ChangeLog.seed(path, last?.firstAt ?? 0, newestRecords(pool, location), await newestColumn(pool, location));
    const made = await AnswerHistory.open(path, servedUntil, keepMs, logger, copy);
    if (made.unavailable !== null) throw new Error(made.unavailable);
    logger.info({ vpas: made.vpaCount, ms: Math.round(performance.now() - started) }, "the history of answers made again from the store's newest records");
    return made;
  }

  /** Stop recording: the term ends at `until` (the last instant whose state was recorded), and the history is closed. */
  async #stop(until: number): Promise<void> {
    const recording = this.#recording;
    if (recording === null) return;
    this.#recording = null;
    clearInterval(recording.alive);
    await recordingAlive(this.#options.pool, this.#options.location, recording.term, until, true).catch((error: Error) =>
      this.#options.logger.warn({ err: error.message }, 'could not tell the store the recording of the history ended; it is taken to have ended at its last word'),
    );
    await recording.answers.close();
  }

  async #prune(at: number): Promise<void> {
    this.#prunedAt = at;
    const started = performance.now();
    try {
      const dropped = await pruneRecordedHistory(this.#options.pool, this.#options.location, at - this.#options.keepMs);
      this.#options.logger.info({ dropped, ms: Math.round(performance.now() - started) }, "changes past the history kept dropped from the store");
    } catch (error) {
      this.#options.logger.error({ err: (error as Error).message }, 'the changes past the history kept could not be dropped from the store; tried again tomorrow');
    }
  }
}
