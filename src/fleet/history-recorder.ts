import type pg from 'pg';
import { messageOf } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { dataVersion, type DeltaData } from '../engine/delta-data.js';
import { servedAsOf } from '../engine/serving-view.js';
import type { SnapshotView } from '../engine/snapshot-view.js';
import { AnswerHistory, type ComparedAhead, type ServedChange } from '../history/answer-changes.js';
import { ChangeLog, type CommittedState } from '../history/change-log.js';
import {
  RECORDER_ALIVE_EVERY_MS,
  RECORDER_ANSWER_WITHIN_MS,
  beginRecording,
  lastPrunedAt,
  lastRecordedState,
  newestColumn,
  newestRecords,
  pruneRecordedHistory,
  recordingAlive,
  writeRecordedState,
  type HistoryLease,
  type LastRecordedState,
} from '../store/answer-history-store.js';
import { storePool, type StoreLocation } from '../store/postgres.js';
import { StoreLease } from '../store/store-lease.js';

export interface HistoryRecorderOptions {
  readonly location: StoreLocation;
  /** Where the recorder keeps its change log (DataDir.answerChanges), its columns beside it. */
  readonly path: string;
  /** How long the history is kept, ms (serve --history-days). */
  readonly keepMs: number;
  readonly logger: Logger;
  /** How often a follower not recording tries for the lease, ms. */
  readonly leasePollMs?: number;
}

/** How often the history in the store is pruned, whichever follower records it; a take-over prunes no sooner than a while after it. */
const PRUNE_EVERY_MS = 24 * 60 * 60 * 1000;
const PRUNE_AFTER_TAKE_OVER_MS = 60 * 1000;
/** Kept past the retention by the store's prune: a follower whose clock is behind the recorder's by less still finds every record an instant it takes as kept needs. */
const PRUNE_MARGIN_MS = 24 * 60 * 60 * 1000;
/** How long a copy's transaction may wait on the recorder between statements before the store ends it (and its locks). */
const COPY_IDLE_MS = 60_000;

const HISTORY_DUTY = { lock: 'answer history', name: 'answer history', duty: 'records the history of answers of the states it serves' } as const;

interface Recording {
  /** The lease it records under (StoreLease acquisitions, numbered). */
  readonly generation: number;
  readonly answers: AnswerHistory;
  readonly term: number;
  readonly alive: NodeJS.Timeout;
  /** Aborted when it stops: a prune of the store under way ends with it (its pass rolled back). */
  readonly stopped: AbortController;
  /** Whether a state was recorded in it yet. */
  recorded: boolean;
}

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
 * A follower taking the lease begins a term in the store (which fences off
 * any copy still under way from the one before), then continues the
 * history: its own change log when that ends where the store's does, else
 * a log made from each VPA's newest record in the store and the newest
 * column. That runs beside the follower's merges and swaps, which are
 * recorded from the moment it is done, beginning with the state served
 * then (compared whole). While no follower records (the holder gone,
 * before another is done taking over) instants are not told (503).
 *
 * Each acquisition of the lease is a *generation*. Take-overs and stops
 * run one at a time, in order, so the files are never in two hands; a
 * take-over whose lease went meanwhile stops at its next step, and a stop,
 * or giving the lease up after a failure, acts on its own generation only.
 */
export class HistoryRecorder {
  readonly #options: HistoryRecorderOptions;
  readonly #pool: pg.Pool;
  readonly #lease: StoreLease;
  #recording: Recording | null = null;
  /** When the last state recorded began (the store's, at a take-over): the next begins after it. */
  #lastAt = 0;
  /** The state being recorded: its names in the store. */
  #next: { readonly at: number; readonly snapshot: string; readonly position: number; readonly dataAsOf: number } | null = null;
  /** Records, and the install and stop of a recording, one at a time. */
  #queue: Promise<void> = Promise.resolve();
  /** Take-overs and stops, one at a time, in order. */
  #lifecycle: Promise<void> = Promise.resolve();
  /** The generation of the lease held now; 0 or a past one when none is. */
  #generation = 0;
  #acquisitions = 0;
  /** The next prune of the store, while recording. */
  #pruneTimer: NodeJS.Timeout | undefined;
  /** A prune under way, stopped and awaited by close. */
  #pruning: Promise<void> = Promise.resolve();
  readonly #closing = new AbortController();
  /** Which history each comparison ahead was made for. */
  readonly #aheadOf = new WeakMap<ComparedAhead, AnswerHistory>();
  /** Records the state served now (FollowerService.recordTakenOver): a follower taking the lease records it at once, unless a merge or swap was recorded first. */
  #recordCurrent: (() => Promise<void>) | null = null;

  constructor(options: HistoryRecorderOptions) {
    this.#options = options;
    // Its own connections (a copy holds one while the heartbeat and the prune use theirs), and a copy whose client goes quiet ends.
    this.#pool = storePool(options.location, 3, COPY_IDLE_MS, RECORDER_ANSWER_WITHIN_MS);
    this.#lease = new StoreLease(options.location, HISTORY_DUTY, options.logger, (pid) => Promise.resolve(this.#acquired(pid)), options.leasePollMs);
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

  /** Bytes of memory of the index of the history it records (0: not recording). */
  get indexBytes(): number {
    return this.#recording?.answers.indexBytes ?? 0;
  }

  /**
   * Record that `view` with `delta` is served from now, how it came about
   * (`change`), before it is served. Never rejects: a state that cannot be
   * copied into the store ends this follower's recording (logged), and it
   * is served all the same.
   */
  record(view: SnapshotView, delta: DeltaData, change: ServedChange, ahead: ComparedAhead | null = null): Promise<void> {
    return this.#record(view, delta, change, ahead, false);
  }

  /**
   * record the state served at a take-over, unless a state served since
   * was recorded first: the first state of a recording compares every VPA,
   * and a second whole comparison would find nothing.
   */
  recordFirst(view: SnapshotView, delta: DeltaData, change: ServedChange): Promise<void> {
    return this.#record(view, delta, change, null, true);
  }

  #record(view: SnapshotView, delta: DeltaData, change: ServedChange, ahead: ComparedAhead | null, firstOnly: boolean): Promise<void> {
    if (this.#recording === null) return Promise.resolve();
    return this.#serially(async () => {
      const recording = this.#recording;
      if (recording === null || (firstOnly && recording.recorded)) return;
      const at = Math.max(Date.now(), this.#lastAt + 1);
      this.#next = { at, snapshot: view.meta.id, position: delta.meta.position, dataAsOf: servedAsOf(view, delta) };
      // A comparison made for the history of an earlier take-over compares nothing of this one.
      const usable = ahead !== null && this.#aheadOf.get(ahead) === recording.answers ? ahead : null;
      await recording.answers.record(view, delta, change, at, dataVersion(view.meta.id, delta.meta.position), usable);
      this.#next = null;
      const why = recording.answers.unavailable;
      if (why !== null) {
        this.#options.logger.error({ err: why }, 'the history of answers could not be recorded in the store; this follower stops recording it, and the lease goes to the next');
        await this.#stop(recording.generation, at - 1);
        if (this.#generation === recording.generation) void this.#lease.giveUp();
        return;
      }
      this.#lastAt = at;
      recording.recorded = true;
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
    // A take-over under way stops at its next step.
    this.#generation = 0;
    await this.#lease.close();
    await this.#lifecycle;
    await this.#serially(() => this.#stop(this.#recording?.generation ?? 0, Date.now()));
    // A prune's pass can take minutes: stopped (rolled back), not waited for.
    this.#closing.abort();
    await this.#pruning;
    await this.#pool.end().catch(() => {});
  }

  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /** The lease acquired on backend `pid`: its take-over queued; returns what stops it, which waits for the take-over (told to stop at its next step) and the stop. */
  #acquired(pid: number): () => Promise<void> {
    const generation = ++this.#acquisitions;
    this.#generation = generation;
    this.#lifecycle = this.#lifecycle.then(() => this.#takeOver(pid, generation)).catch((error: unknown) => this.#failed('taking the history over', error));
    return () => {
      // A take-over of this generation not done yet stops at its next step.
      if (this.#generation === generation) this.#generation = 0;
      const stopped = this.#lifecycle.then(() => this.#serially(() => this.#stop(generation, Date.now()))).catch((error: unknown) => this.#failed('stopping the recording', error));
      this.#lifecycle = stopped;
      return stopped;
    };
  }

  /** A step of the lifecycle that failed where nothing awaits it: logged, and the next goes on. */
  #failed(what: string, error: unknown): void {
    this.#options.logger.error({ err: messageOf(error) }, `the history of answers failed ${what}`);
  }

  /**
   * Take the history over with the lease held on backend `pid`: a term
   * begun, the history made ready beside the follower's work, then
   * recording from the state served now. Given up, and what it opened
   * closed, when the lease goes meanwhile (`generation` no longer held).
   */
  async #takeOver(pid: number, generation: number): Promise<void> {
    const { location, logger } = this.#options;
    const pool = this.#pool;
    const lease = { lockName: this.#lease.lockName, pid };
    const held = () => this.#generation === generation;
    let answers: AnswerHistory | null = null;
    let term: number | null = null;
    try {
      if (!held()) return;
      // The term first: a copy of the term before still under way is then refused, so the last state read below stays the last.
      term = await beginRecording(pool, location, lease, Date.now());
      const last = await lastRecordedState(pool, location);
      if (!held()) return;
      answers = await this.#openContinuing(lease, term, last, held);
      if (!held()) return;
      const taken = answers;
      const recording = await this.#serially(() => {
        if (!held()) return Promise.resolve(null);
        const started = this.#startRecording(generation, taken, term!);
        this.#lastAt = Math.max(this.#lastAt, last?.at ?? 0);
        return Promise.resolve(started);
      });
      if (recording === null) return;
      answers = null;
      term = null;
      logger.info({ term: recording.term, vpas: taken.vpaCount, continuedAt: last?.at ?? null }, 'recording the history of answers');
      // The state served now, which another recorded or none did: the term's first.
      void this.#recordCurrent?.().catch((error: Error) => logger.error({ err: error.message }, 'the state served could not be recorded at the take-over'));
    } catch (error) {
      logger.error({ err: messageOf(error) }, 'could not take the history of answers over; the lease goes to the next');
      if (held()) void this.#lease.giveUp();
    } finally {
      // Opened or begun, and not recording: closed, and the term ended with nothing recorded.
      await answers?.close().catch(() => {});
      if (term !== null) await recordingAlive(pool, location, term, Date.now(), true).catch(() => {});
    }
  }

  /** Record under `generation` with `answers` in `term`, saying every second that it does, pruning the store a while after and daily. */
  #startRecording(generation: number, answers: AnswerHistory, term: number): Recording {
    const { location, logger } = this.#options;
    let speaking = false;
    const alive = setInterval(() => {
      if (speaking) return;
      speaking = true;
      // Never past a state being recorded: should its copy fail, it is served all the same, and unrecorded.
      const next = this.#next;
      void recordingAlive(this.#pool, location, term, next === null ? Date.now() : Math.min(Date.now(), next.at - 1))
        .catch((error: Error) => logger.warn({ err: error.message }, 'could not tell the store the history is still being recorded'))
        .finally(() => (speaking = false));
    }, RECORDER_ALIVE_EVERY_MS);
    alive.unref();
    const recording: Recording = { generation, answers, term, alive, stopped: new AbortController(), recorded: false };
    this.#recording = recording;
    void this.#pruneWhenDue(recording);
    return recording;
  }

  /**
   * The history to continue from `last` (the store's last state): the
   * change log in the data directory when it ends there, else one made
   * from the store.
   */
  async #openContinuing(lease: HistoryLease, term: number, last: LastRecordedState | null, held: () => boolean): Promise<AnswerHistory> {
    const { location, path, keepMs, logger } = this.#options;
    const pool = this.#pool;
    const copy = {
      committed: async (committed: CommittedState, log: ChangeLog) => {
        const next = this.#next;
        if (next === null) throw new Error('no state is being recorded');
        await writeRecordedState(pool, location, lease, { term, snapshot: next.snapshot, position: next.position, dataAsOf: next.dataAsOf }, committed, log);
      },
    };
    // States after the store's last were never copied into it: cut off at open.
    const servedUntil = last?.at ?? 0;
    const own = await AnswerHistory.open(path, servedUntil, keepMs, logger, copy);
    if (own.unavailable === null && own.lastAt === servedUntil && (last === null || own.bytes === last.logBytes)) return own;
    await own.close();
    const started = performance.now();
    await ChangeLog.seed(path, last?.firstAt ?? 0, servedUntil, newestRecords(pool, location, held), await newestColumn(pool, location));
    const made = await AnswerHistory.open(path, servedUntil, keepMs, logger, copy);
    if (made.unavailable !== null) {
      await made.close();
      throw new Error(made.unavailable);
    }
    logger.info({ vpas: made.vpaCount, ms: Math.round(performance.now() - started) }, "the history of answers made again from the store's newest records");
    return made;
  }

  /** Stop the recording of `generation`, if it is the one: its term ends at `until` (the last instant whose state was recorded), and its history is closed. */
  async #stop(generation: number, until: number): Promise<void> {
    const recording = this.#recording;
    if (recording === null || recording.generation !== generation) return;
    this.#recording = null;
    clearInterval(recording.alive);
    clearTimeout(this.#pruneTimer);
    recording.stopped.abort();
    await recordingAlive(this.#pool, this.#options.location, recording.term, until, true).catch((error: Error) =>
      this.#options.logger.warn({ err: error.message }, 'could not tell the store the recording of the history ended; it is taken to have ended at its last word'),
    );
    await recording.answers.close();
  }

  /** Prune the store when its last prune, by this follower or another, is a day old: a lease that changes hands often neither skips the prune nor runs it at each take-over. */
  async #pruneWhenDue(recording: Recording): Promise<void> {
    let last: number | null = null;
    try {
      last = await lastPrunedAt(this.#pool, this.#options.location);
    } catch (error) {
      this.#options.logger.warn({ err: messageOf(error) }, 'could not read when the store was last pruned; pruned as if never');
    }
    if (this.#recording === recording) this.#pruneLater(nextPruneIn(last, Date.now()));
  }

  /** A prune of the store in `ms`, beside the recording, and the next a day on. */
  #pruneLater(ms: number): void {
    clearTimeout(this.#pruneTimer);
    this.#pruneTimer = setTimeout(() => {
      this.#pruning = this.#prune();
    }, ms);
    this.#pruneTimer.unref();
  }

  /** Drop from the store what the retention no longer needs. */
  async #prune(): Promise<void> {
    const recording = this.#recording;
    if (recording === null || this.#options.keepMs === 0) return;
    const started = performance.now();
    const stop = AbortSignal.any([this.#closing.signal, recording.stopped.signal]);
    try {
      const dropped = await pruneRecordedHistory(this.#pool, this.#options.location, Date.now() - this.#options.keepMs - PRUNE_MARGIN_MS, stop);
      if (dropped === null) this.#options.logger.info({}, 'another prune of the store is under way; tried again tomorrow');
      else this.#options.logger.info({ dropped, ms: Math.round(performance.now() - started) }, 'changes past the history kept dropped from the store');
    } catch (error) {
      if (stop.aborted) this.#options.logger.info({}, 'the prune of the store was stopped with the recording, its pass under way rolled back');
      else this.#options.logger.error({ err: messageOf(error) }, 'the changes past the history kept could not be dropped from the store; tried again tomorrow');
    }
    // Not after a stop, nor for a recording that has since given way to another.
    if (this.#recording === recording) this.#pruneLater(PRUNE_EVERY_MS);
  }
}

/**
 * How long after a take-over at `now` the store is next pruned, its last
 * prune having been at `lastPruned` (epoch ms; null: never). A last prune
 * later than now (by a clock ahead of this one) is not waited on.
 */
export function nextPruneIn(lastPruned: number | null, now: number): number {
  if (lastPruned === null || lastPruned > now) return PRUNE_AFTER_TAKE_OVER_MS;
  return Math.min(PRUNE_EVERY_MS, Math.max(PRUNE_AFTER_TAKE_OVER_MS, lastPruned + PRUNE_EVERY_MS - now));
}
