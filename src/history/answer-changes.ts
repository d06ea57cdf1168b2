import { setImmediate as nextTurn } from 'node:timers/promises';
import { HistoryError } from '../common/errors.js';
import { startOfUtcDay } from '../common/time.js';
import type { Logger } from '../common/logger.js';
import type { DeltaData } from '../engine/delta-data.js';
import { NO_CLUSTER } from '../engine/snapshot-data.js';
import { SnapshotView } from '../engine/snapshot-view.js';
import { VpaIndex } from '../engine/vpa-index.js';
import type { ChangeCause, ChangeEntry } from '../api/history-paths.js';
import { CLEARED_FACTS, ChangeLog, toldFlagged, type AnswerFacts, type CommittedState, type PastAnswer } from './change-log.js';
import { filesSummary } from './facts-index-file.js';
import { detailOf, detailPrint } from './answer-detail.js';
import { NO_SCORE } from './score-columns.js';

/**
 * What changed in the answers a new state serves (docs/api.md, "Answer
 * history" and "Answers as of a past instant"), found against each VPA's
 * answer last recorded (change-log.ts) and recorded before the state is
 * served. The confidences of a snapshot of a new scoring day go to its
 * column (score-columns.ts) rather than to a record each; any other change
 * of an answer is a record.
 *
 * A merge into the live delta changes only the delta's VPAs, so only they
 * are compared; a new snapshot (a compaction, or the first state a server
 * serves) may change any VPA, so every VPA it holds is compared, and every
 * VPA recorded FLAGGED that it no longer holds becomes CLEARED. The first
 * state after a restart on the snapshot whose every VPA was compared last
 * (ChangeLog.mark, kept by a clean close) is the exception: only its
 * delta's VPAs, and those whose changes were recorded since, can differ.
 *
 * A snapshot swapped in while merges go on is compared ahead (`compareAhead`,
 * outside the queue of changes, in turns): the pass over every VPA keeps
 * only the few whose answer differs from the one recorded, and the record
 * at the swap compares those, the VPAs merges changed meanwhile and the
 * new delta's, so evidence and corrections queued behind the swap wait
 * milliseconds for it, not a pass over every VPA.
 *
 * Why a VPA changed (`cause`): a correction recorded since the state before
 * names it (a clearance made or ended, else a retraction); else new
 * evidence, when a merge changed it or a snapshot first flagged it;
 * expiry, when a snapshot no longer flags it; and otherwise the compaction
 * itself (clusters formed, urls' categories and peers counted again, every
 * VPA scored at the new snapshot's time).
 */

/** How the state to be served came about. */
export interface ServedChange {
  /** A merge of evidence or corrections into the delta; or a new snapshot, with its delta. */
  readonly kind: 'merge' | 'snapshot';
  /** VPAs (lower case) named by corrections recorded since the state recorded before. */
  readonly corrected: ReadonlySet<string>;
  /** The clearances in force, by VPA (lower case). */
  readonly clearances: ReadonlyMap<string, { readonly createdAt: number }>;
}

/** VPAs of a snapshot compared in one turn of the event loop: about 10 ms, so that merges going on beside a pass wait little for it. */
const VPAS_PER_TURN = 16_384;

/**
 * The most VPAs a comparison ahead keeps to be recorded at the swap; past
 * it (a snapshot that changes most VPAs, such as one built from new
 * evidence while the server was down) the swap compares every VPA itself.
 */
const MAX_AHEAD_CHANGES = 262_144;

/** A snapshot compared ahead of its swap: what to record there (AnswerHistory.record). */
export interface ComparedAhead {
  readonly base: SnapshotView;
  /** Whether `base` is of a new scoring day: its confidences go to a column (`scores`), not to records. */
  readonly scored: boolean;
  /** The confidence `base` serves each VPA numbered then with, by number (NO_SCORE: none); empty unless `scored`. */
  readonly scores: Uint16Array;
  /** The VPAs whose answer in `base` differs from the one recorded, with that answer. */
  readonly differing: ReadonlyMap<string, AnswerFacts>;
  /** The pass that marked `base`'s VPAs seen: another pass since, and this one is of no use. */
  readonly pass: number;
}

/**
 * The history of answers as the main thread reads it (history-requests.ts):
 * the embedded server's own (AnswerHistory), or the fleet's, from the store
 * (store/answer-history-store.ts).
 */
export interface AnswerReader {
  /** Why the history cannot be read now, or null. */
  readonly unavailable: string | null;
  /** Bytes the history takes in this server's data directory. */
  readonly bytes: number;
  /** Bytes of memory the history holds in this process: the index of each VPA's newest change, where it records. */
  readonly indexBytes: number;
  /** Every change of `key` (lower case) recorded within the history kept, oldest first. */
  changesOf(key: string, now?: number): Promise<ChangeEntry[]>;
  /** The answers to `keys` (lower case) served at `at` (epoch ms, within the history kept: earliestAt), in order. */
  answersAt(keys: readonly string[], at: number): Promise<PastAnswer[]>;
  /** The earliest instant answers are told as of at `now`, as far as the history tells; null when it tells none. */
  earliestAt(now?: number): number | null;
}

/**
 * Where the states a history records are copied as they are (the fleet's
 * store, fleet/history-recorder.ts): `committed` runs once the state's
 * changes are durable in the file and before it is served; a failure stops
 * the history as a failed write does.
 */
export interface HistoryCopy {
  committed(state: CommittedState, log: ChangeLog): Promise<void>;
}

/** How far past the retention the oldest change may be before the file is pruned, ms. */
const PRUNE_SLACK_MS = 30 * 24 * 3600 * 1000;

export class AnswerHistory implements AnswerReader {
  readonly #log: ChangeLog | null;
  readonly #logger: Logger;
  /** The clearances in force at the state recorded last; unknown (none) after a start. */
  #clearances: ReadonlyMap<string, { readonly createdAt: number }> = new Map();
  #unavailable: string | null = null;
  /** Whether a state was recorded since the log was opened: the first is compared whole, whatever made it. */
  #compared = false;
  /** Passes over every VPA begun (ComparedAhead.pass). */
  #passes = 0;
  /** Whether a state compared whole (every VPA) is being recorded: a comparison ahead would clear its marks. */
  #wholePass = false;
  /** While a comparison ahead waits for its swap: the VPAs whose change was recorded since it began. */
  #changedSince: Set<string> | null = null;

  /** How far back changes are told, ms (serve --history-days). */
  readonly #keepMs: number;
  readonly #copy: HistoryCopy | null;

  private constructor(log: ChangeLog | null, logger: Logger, unavailable: string | null, keepMs: number, copy: HistoryCopy | null = null) {
    this.#log = log;
    this.#logger = logger;
    this.#unavailable = unavailable;
    this.#keepMs = keepMs;
    this.#copy = copy;
  }

  /**
   * The history in the file at `path`, of which the records after
   * `servedUntil` (the last instant the record of versions served holds)
   * were never served; changes are told `keepMs` back. A file refused is
   * logged, and the history is not served (503) nor written until it is
   * restored or moved aside; screening goes on. Each state recorded is
   * handed to `copy` too, when given.
   */
  static async open(path: string, servedUntil: number, keepMs: number, logger: Logger, copy: HistoryCopy | null = null): Promise<AnswerHistory> {
    try {
      const started = performance.now();
      const log = await ChangeLog.open(path, servedUntil);
      const { keptIndex, indexRefused, bytesRead, movedAside } = log.opened;
      if (movedAside !== null) logger.warn({ movedAside }, 'the history of answers was of a format that cannot tell answers again; it is moved aside and begins again');
      // Reading every record takes tens of seconds at 10M VPAs; the index a clean close keeps spares that (docs/operations.md).
      if (indexRefused !== null) logger.warn({ why: indexRefused }, 'the index kept beside the history of answers is not used; every record is read');
      logger.info({ vpas: log.vpaCount, keptIndex, bytesRead, ms: Math.round(performance.now() - started) }, 'history of answers opened');
      return new AnswerHistory(log, logger, null, keepMs, copy);
    } catch (error) {
      if (!(error instanceof HistoryError)) throw error;
      logger.error({ code: error.code, err: error.message }, 'the history of answers is refused; serving without it');
      return AnswerHistory.unavailable(`the history of answers cannot be used: ${error.message}`, logger);
    }
  }

  /** A history that records nothing and answers 503 for `why`. */
  static unavailable(why: string, logger: Logger): AnswerHistory {
    return new AnswerHistory(null, logger, why, 0);
  }

  /** Why the history cannot be read now, or null. */
  get unavailable(): string | null {
    return this.#unavailable;
  }

  /** VPAs with a recorded change. */
  get vpaCount(): number {
    return this.#log?.vpaCount ?? 0;
  }

  /** When the last state recorded began to be served, epoch ms (0: none). */
  get lastAt(): number {
    return this.#log?.lastAt ?? 0;
  }

  /** Bytes of the file. */
  get bytes(): number {
    return this.#log?.bytes ?? 0;
  }

  /** Bytes of the log's index in memory (0: no log). */
  get indexBytes(): number {
    return this.#log?.indexBytes ?? 0;
  }

  /**
   * Record what serving `base` with `delta` as `version` from `at` changes,
   * durably. Never rejects: a history that cannot be written is logged and
   * stops (a state is served all the same; screening comes first), and
   * answers 503 until the server is restarted with the file whole.
   */
  async record(base: SnapshotView, delta: DeltaData | null, change: ServedChange, at: number, version: string, ahead: ComparedAhead | null = null): Promise<void> {
    const log = this.#log;
    if (log === null || this.#unavailable !== null) return;
    try {
      const started = performance.now();
      // The first state a server serves may hold any change since the last one recorded (a snapshot built meanwhile).
      const whole: ServedChange = this.#compared ? change : { ...change, kind: 'snapshot' };
      const usable = whole.kind === 'snapshot' && ahead !== null && ahead.base === base && ahead.pass === this.#passes && this.#compared ? ahead : null;
      // The first state after a start, of the snapshot compared last: only the VPAs its delta holds, and those changed since, may differ from what is recorded.
      const sinceMark = this.#compared ? null : await this.#changedSinceMark(log, base, delta);
      // A merge compares its delta's VPAs, a few rows of the index; a snapshot compared whole, every VPA: the index held in memory.
      const held = whole.kind === 'snapshot' && sinceMark === null;
      const release = held ? await log.holdIndex() : null;
      this.#wholePass = held;
      try {
        log.begin(at, version);
        let changes: number;
        if (whole.kind === 'merge') changes = this.#deltaChanges(log, base, delta, whole);
        else if (usable !== null) changes = await this.#aheadChanges(log, usable, delta, whole);
        // Only the VPAs of the delta, and those changed since the mark, may have changed, confidence included (no column: the mark's snapshot is of the newest column's day).
        else if (sinceMark !== null) changes = this.#baseChanges(log, base, delta, sinceMark, whole, true) + this.#deltaChanges(log, base, delta, whole);
        else changes = await this.#snapshotChanges(log, base, delta, whole, newScores(log, base));
        // A snapshot compared whole of a new scoring day scored every VPA again: its column keeps their confidences.
        const committed = await log.commit(held && (usable?.scored ?? newScores(log, base)) ? startOfUtcDay(base.meta.scoredAt) : null);
        await this.#copy?.committed(committed, log);
        if (held) log.markCompared(base.meta.id, delta?.meta.files ?? []);
        // A whole comparison costs a pass over every VPA (docs/operations.md, "The history of answers"); a merge's, its delta's.
        const how = whole.kind === 'merge' ? 'delta' : usable !== null ? 'ahead' : sinceMark !== null ? 'since the last comparison' : 'every VPA';
        const fields = { version, changes, compared: how, ms: Math.round(performance.now() - started) };
        if (whole.kind === 'merge') this.#logger.debug(fields, 'answer changes recorded');
        else this.#logger.info(fields, 'answer changes recorded');
      } finally {
        this.#wholePass = false;
        release?.();
      }
      this.#clearances = change.clearances;
      this.#compared = true;
    } catch (error) {
      this.#stop('written', error);
      return;
    }
    // Records replaced before the retention are dropped once the first is a month past it: the file is copied about once a month.
    if (this.#keepMs > 0 && log.replacedAt < at - this.#keepMs - PRUNE_SLACK_MS) await this.#prune(log, at - this.#keepMs);
  }

  /**
   * Compare every VPA of `base`, a snapshot about to be swapped in, with
   * its answer recorded, ahead of the swap and while merges go on: the
   * swap's record (record with the result) then compares only what
   * differed and what changed since. Null when there is nothing to gain
   * (no history, or no state recorded yet: the first is compared whole),
   * when another pass over every VPA began meanwhile, or when too many
   * VPAs differ to keep; the swap then compares every VPA. A comparison
   * ahead still waiting for its swap is of no use once this one begins.
   * Never rejects: an index that cannot be read back stops the history,
   * as a failed write does, and the swap goes on.
   */
  async compareAhead(base: SnapshotView): Promise<ComparedAhead | null> {
    const log = this.#log;
    if (log === null || this.#unavailable !== null || !this.#compared || this.#wholePass) return null;
    const passes = this.#passes;
    let release: (() => void) | null = null;
    try {
      release = await log.holdIndex();
      // A pass over every VPA, or a prune, begun while the index came back: this one would compare against marks it
      // does not own.
      if (passes !== this.#passes || this.#wholePass || this.#unavailable !== null) return null;
      return await this.#compareAhead(log, base);
    } catch (error) {
      this.#stop('read', error);
      return null;
    } finally {
      release?.();
    }
  }

  /** Stop the history: it could not be `written` or `read`; logged, and told to every reader until a restart. */
  #stop(could: 'written' | 'read', error: unknown): void {
    const message = (error as Error).message;
    this.#unavailable = `the history of answers could not be ${could} (${message}); it is not served until the server is restarted with the file whole`;
    this.#logger.error({ err: message }, `the history of answers could not be ${could}; no more changes are recorded`);
  }

  /** compareAhead, the log's index held in memory. */
  async #compareAhead(log: ChangeLog, base: SnapshotView): Promise<ComparedAhead | null> {
    const started = performance.now();
    const differing = new Map<string, AnswerFacts>();
    const pass = this.#startPass(log);
    const changedSince = new Set<string>();
    this.#changedSince = changedSince;
    const scored = newScores(log, base);
    const scores = new Uint16Array(scored ? log.numbered : 0).fill(NO_SCORE);
    const index = new VpaIndex(base.data, base.maxKeyLength);
    const key = new Uint8Array(index.maxKeyLength);
    // In id order: a VPA's answer is read off the snapshot's columns side by side, its key at random.
    for (let id = 0; id < index.size; id++) {
      if (id % VPAS_PER_TURN === VPAS_PER_TURN - 1) {
        await nextTurn();
        // Recorded meanwhile: another pass, or a history stopped.
        if (pass !== this.#passes || this.#unavailable !== null) return this.#abandonAhead(changedSince);
      }
      const length = index.keyBytesAtSlot(index.slotOfId(id), key);
      const facts = factsOf(base, id);
      const found = log.seen(key, 0, length);
      if (found >= 0 && found < scores.length) scores[found] = facts.flagged ? facts.confidence : NO_SCORE;
      if (!log.differs(found, facts, !scored)) continue;
      if (differing.size === MAX_AHEAD_CHANGES) return this.#abandonAhead(changedSince);
      differing.set(keyText(key, 0, length), facts);
    }
    this.#logger.info({ snapshot: base.meta.id, differing: differing.size, ms: Math.round(performance.now() - started) }, 'answers compared ahead of a swap');
    return { base, scored, scores, differing, pass };
  }

  /** A comparison ahead given up: stop noting the VPAs changed for it (in `changedSince`) unless another began since. */
  #abandonAhead(changedSince: Set<string>): null {
    if (this.#changedSince === changedSince) this.#changedSince = null;
    return null;
  }

  /** A pass over every VPA: every comparison ahead made before it is of no use. */
  #startPass(log: ChangeLog): number {
    this.#changedSince = null;
    log.startPass();
    return ++this.#passes;
  }

  /** Make the comparison ahead waiting for its swap of no use (ComparedAhead.pass no longer matches). */
  #dropAhead(): void {
    this.#changedSince = null;
    this.#passes++;
  }

  /** A prune that fails leaves the file as it was, and is tried again at the next state; one that left the log unusable stops the history. */
  async #prune(log: ChangeLog, cutoff: number): Promise<void> {
    // The copy's index holds no pass's marks: a comparison ahead waiting for its swap would find no VPA unseen.
    this.#dropAhead();
    const started = performance.now();
    try {
      const dropped = await log.prune(cutoff);
      // A comparison ahead begun during the copy marked the index the copy replaced.
      this.#dropAhead();
      this.#logger.info({ dropped, bytes: log.bytes, ms: Math.round(performance.now() - started) }, 'changes past the history kept dropped');
    } catch (error) {
      this.#logger.error({ err: (error as Error).message }, 'the changes past the history kept could not be dropped');
      if (log.broken !== null) this.#unavailable = log.broken;
    }
  }

  /** Every change of `key` (lower case) recorded within the history kept, oldest first. */
  changesOf(key: string, now = Date.now()): Promise<ChangeEntry[]> {
    if (this.#log === null || this.#unavailable !== null) return Promise.reject(new HistoryError(this.#unavailable ?? 'no history of answers'));
    return this.#log.changesOf(key, now - this.#keepMs);
  }

  /** The answer to `key` (lower case) served at `at` (epoch ms, within the history kept: earliestAt). */
  answerAt(key: string, at: number): Promise<PastAnswer> {
    if (this.#log === null || this.#unavailable !== null) return Promise.reject(new HistoryError(this.#unavailable ?? 'no history of answers'));
    return this.#log.answerAt(key, at);
  }

  answersAt(keys: readonly string[], at: number): Promise<PastAnswer[]> {
    return Promise.all(keys.map((key) => this.answerAt(key, at)));
  }

  /** The earliest instant answers are told as of at `now`: when the first state recorded began, and the retention; null before any state. */
  earliestAt(now = Date.now()): number | null {
    const started = this.#log?.startedAt ?? 0;
    return started === 0 ? null : Math.max(started, this.#keepMs > 0 ? now - this.#keepMs : 0);
  }

  async close(): Promise<void> {
    const unkept = (await this.#log?.close()) ?? null;
    if (unkept !== null) this.#logger.warn({ why: unkept }, 'the index of the history of answers was not kept: the next start reads every record');
  }

  /** Add the changes of the delta's VPAs, confidence included; returns how many. */
  #deltaChanges(log: ChangeLog, base: SnapshotView, delta: DeltaData | null, change: ServedChange): number {
    const held = heldDelta(delta);
    if (held === null) return 0;
    const view = new SnapshotView(held.overlay, base);
    const { keyBytes, keyOffsets } = held;
    let changes = 0;
    for (let id = 0; id < held.overlay.meta.vpaCount; id++) {
      const [start, end] = [keyOffsets[id]!, keyOffsets[id + 1]!];
      changes += this.#compare(log, keyBytes, start, end, log.numberOf(keyBytes, start, end), factsOf(view, id), change, true);
    }
    return changes;
  }

  /**
   * #snapshotChanges from a comparison ahead: the VPAs that differed then
   * and those changed since (compared again with what is recorded now),
   * the delta's, and those recorded FLAGGED that no pass saw; of a new
   * scoring day, every VPA takes the confidence the pass found.
   */
  async #aheadChanges(log: ChangeLog, ahead: ComparedAhead, delta: DeltaData | null, change: ServedChange): Promise<number> {
    const changedSince = this.#changedSince ?? new Set<string>();
    this.#changedSince = null;
    log.takeServedConfidences(ahead.scores);
    const held = heldDelta(delta);
    let changes = this.#baseChanges(log, ahead.base, held, new Set([...ahead.differing.keys(), ...changedSince]), change, !ahead.scored, ahead.differing);
    if (held !== null) changes += this.#heldChanges(log, ahead.base, held, change);
    for (const cleared of await log.unseenFlagged()) changes += this.#compareText(log, cleared, log.numberOf(cleared), CLEARED_FACTS, change, true);
    return changes;
  }

  /**
   * The VPAs that may differ from what is recorded in a state of `base`
   * with `delta`, besides the delta's own, when the last state whose every
   * VPA was compared (ChangeLog.mark) was of `base` too: those whose
   * changes were recorded since. Null when that cannot be told (another
   * snapshot, no mark, or a file its delta held is no longer in this one),
   * and every VPA is compared.
   */
  async #changedSinceMark(log: ChangeLog, base: SnapshotView, delta: DeltaData | null): Promise<Set<string> | null> {
    const mark = log.mark;
    // A column since the mark (a snapshot of another scoring day served, then lost) holds confidences this snapshot does not serve.
    if (mark === null || mark.snapshot !== base.meta.id || newScores(log, base)) return null;
    // The files that delta held sort first (files are named in the order they are stored); a file gone would take answers back unseen.
    const held = filesSummary((delta?.meta.files ?? []).filter((name) => name <= mark.files.last));
    if (held.count !== mark.files.count || held.crc !== mark.files.crc) return null;
    // A mark the file no longer bears out (records a crash cut off under it) is no mark: every VPA is compared.
    return log.keysSince(mark.offset).catch((error: unknown) => {
      this.#logger.warn({ err: (error as Error).message }, 'the mark of the last comparison of every VPA is not used');
      return null;
    });
  }

  /**
   * Add the changes of `keys` to their answers in `base` (`known` holds
   * some of them already; CLEARED where `base` holds none), but of those
   * `delta` holds, which it answers and are compared with it apart; returns
   * how many. `withConfidence`: a confidence changed is a change; else it
   * is the column's, and only taken as the one served.
   */
  #baseChanges(log: ChangeLog, base: SnapshotView, delta: DeltaData | null, keys: Iterable<string>, change: ServedChange, withConfidence: boolean, known: ReadonlyMap<string, AnswerFacts> = new Map()): number {
    const held = heldDelta(delta);
    const deltaIndex = held === null ? null : new VpaIndex(held.overlay, held.overlay.maxKeyLength);
    const baseIndex = new VpaIndex(base.data, base.maxKeyLength);
    let changes = 0;
    for (const key of keys) {
      if (deltaIndex !== null && deltaIndex.lookup(key) >= 0) continue;
      let facts = known.get(key);
      if (facts === undefined) {
        const id = baseIndex.lookup(key);
        facts = id < 0 ? CLEARED_FACTS : factsOf(base, id);
      }
      changes += this.#compareText(log, key, log.numberOf(key), facts, change, withConfidence);
    }
    return changes;
  }

  /** Add the changes of every VPA of `held`, confidence included, marked seen; returns how many. */
  #heldChanges(log: ChangeLog, base: SnapshotView, held: DeltaData, change: ServedChange): number {
    const view = new SnapshotView(held.overlay, base);
    const { keyBytes, keyOffsets } = held;
    let changes = 0;
    for (let id = 0; id < held.overlay.meta.vpaCount; id++) {
      const [start, end] = [keyOffsets[id]!, keyOffsets[id + 1]!];
      changes += this.#compare(log, keyBytes, start, end, log.seen(keyBytes, start, end), factsOf(view, id), change, true);
    }
    return changes;
  }

  /**
   * Add the changes of every VPA `base` and `delta` hold, and of those
   * recorded FLAGGED they do not; returns how many. With `scored` (a new
   * scoring day), a confidence changed is not a change of a VPA of `base`
   * (its column keeps it).
   */
  async #snapshotChanges(log: ChangeLog, base: SnapshotView, delta: DeltaData | null, change: ServedChange, scored: boolean): Promise<number> {
    let changes = 0;
    this.#startPass(log);
    const index = new VpaIndex(base.data, base.maxKeyLength);
    // The snapshot's VPAs are flagged but for the cleared, so the log holds nearly all of them once this pass is done:
    // the first pass (a first start) sizes the index once, rather than growing it by sixteenths through 10M VPAs.
    log.expectVpas(index.size);
    const held = heldDelta(delta);
    const deltaIndex = held === null ? null : new VpaIndex(held.overlay, held.overlay.maxKeyLength);
    // Keys are read as bytes, and made text only for a change: most VPAs have none.
    const key = new Uint8Array(index.maxKeyLength);
    for (let id = 0; id < index.size; id++) {
      // Other work of the main thread goes on between runs of VPAs (a pass over 10M VPAs takes seconds), and the file takes the records added.
      if (id % VPAS_PER_TURN === VPAS_PER_TURN - 1) {
        await log.drained();
        await nextTurn();
      }
      const length = index.keyBytesAtSlot(index.slotOfId(id), key);
      // A VPA the delta holds is answered from the delta: compared below.
      if (deltaIndex !== null && deltaIndex.lookupBytes(key, 0, length) >= 0) continue;
      changes += this.#compare(log, key, 0, length, log.seen(key, 0, length), factsOf(base, id), change, !scored);
    }
    if (held !== null) changes += this.#heldChanges(log, base, held, change);
    for (const cleared of await log.unseenFlagged()) changes += this.#compareText(log, cleared, log.numberOf(cleared), CLEARED_FACTS, change, true);
    return changes;
  }

  /** #compareText of the key in `bytes` from `start` to `end`, made text only when it changed. */
  #compare(log: ChangeLog, bytes: Uint8Array, start: number, end: number, number: number, after: AnswerFacts, change: ServedChange, withConfidence: boolean): number {
    if (log.differs(number, after, withConfidence)) return this.#compareText(log, keyText(bytes, start, end), number, after, change, withConfidence);
    if (number >= 0 && after.flagged) log.setServedConfidence(number, after.confidence);
    return 0;
  }

  /**
   * Add the change of `key` (VPA `number`, -1: none) to `after` if it is
   * one; returns 1 if it was, else 0. Its confidence alone is a change with
   * `withConfidence`; else it is only taken as the one served (the column's).
   */
  #compareText(log: ChangeLog, key: string, number: number, after: AnswerFacts, change: ServedChange, withConfidence: boolean): number {
    if (!log.differs(number, after, withConfidence)) {
      if (number >= 0 && after.flagged) log.setServedConfidence(number, after.confidence);
      return 0;
    }
    log.add(key, after, this.#causeOf(key, log.toldAt(number), after, change));
    const changedSince = this.#changedSince;
    if (changedSince !== null) {
      changedSince.add(key);
      // A swap that never came (or many merges before it): the comparison ahead is dropped, and the swap compares every VPA.
      if (changedSince.size > MAX_AHEAD_CHANGES) this.#dropAhead();
    }
    return 1;
  }

  #causeOf(key: string, before: number | null, after: AnswerFacts, change: ServedChange): ChangeCause {
    if (change.corrected.has(key)) {
      const now = change.clearances.get(key)?.createdAt;
      const was = this.#clearances.get(key)?.createdAt;
      if (now === was) return 'retraction';
      return now === undefined ? 'clearance_ended' : 'clearance';
    }
    if (change.kind === 'merge') return 'evidence';
    if (after.flagged && !toldFlagged(before)) return 'evidence';
    return after.flagged ? 'compaction' : 'expiry';
  }
}

/** `delta` when it holds a VPA, else null. */
function heldDelta(delta: DeltaData | null): DeltaData | null {
  return delta !== null && delta.overlay.meta.vpaCount > 0 ? delta : null;
}

/** The VPA in `bytes` from `start` to `end` (ASCII) as text. */
function keyText(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');
}

/**
 * Whether `base` scores recency from another day than the confidences
 * `log` keeps apart (builder/scoring.ts, scoringDay): a state first serving
 * it writes a column.
 */
function newScores(log: ChangeLog, base: SnapshotView): boolean {
  return log.scoredAt !== startOfUtcDay(base.meta.scoredAt);
}

const PRINT = new Uint32Array(2);

/** A VPA's answer as `view` (a snapshot, or a delta's overlay) serves it (one with no evidence counting is CLEARED, as ServingView answers it). */
function factsOf(view: SnapshotView, id: number): AnswerFacts {
  const data = view.data;
  if (data.evidenceCount[id] === 0) return CLEARED_FACTS;
  const cluster = data.vpaCluster[id]!;
  detailPrint(view, data, id, PRINT);
  return {
    flagged: true,
    risk: data.riskCategory[id]!,
    confidence: data.confidence[id]!,
    cluster: cluster === NO_CLUSTER ? 0 : data.clusterNumber[cluster]!,
    printA: PRINT[0]!,
    printB: PRINT[1]!,
    detail: () => detailOf(view, id),
  };
}
