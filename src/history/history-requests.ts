import type { AdminAnswer, HistoryRequest } from '../api/admin-requests.js';
import { answerAlways } from '../api/admin-requests.js';
import { HttpError, badRequest, notFound, serviceUnavailable, validationError } from '../api/http-error.js';
import { verdictJson } from '../api/answer-json.js';
import { parseRfc3339 } from '../api/schemas.js';
import { dataVersion } from '../engine/delta-data.js';
import { formatIso } from '../common/time.js';
import { pastBatchJson, pastVerdict } from './past-verdicts.js';
import { HistoryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { normalizeVpa } from '../vpa/vpa.js';
import type { AnswerReader } from './answer-changes.js';
import { HISTORY_OFF, parseDataVersion, type ServedVersions } from './served-versions.js';

/**
 * The main thread's side of GET /v1/data-versions/{version} (docs/api.md,
 * Data versions), looked up in the record of versions served; of GET
 * /v1/verify/upi/history (Answer history), read from the history of
 * answers; and of lookups with `as_of` (Answers as of a past instant),
 * from both.
 */
export class HistoryRequests {
  readonly #versions: ServedVersions;
  readonly #answers: AnswerReader;
  readonly #logger: Logger;

  constructor(versions: ServedVersions, answers: AnswerReader, logger: Logger) {
    this.#versions = versions;
    this.#answers = answers;
    this.#logger = logger;
  }

  handle(request: HistoryRequest): Promise<AdminAnswer> {
    return answerAlways(
      () =>
        request.op === 'data-version.get'
          ? this.#dataVersion(request.version)
          : request.op === 'answer-history.get'
            ? this.#answerHistory(request.upi)
            : this.#asOf(request.upis, request.asOf, request.batch),
      (error) => this.#logger.error({ op: request.op, err: error.message }, 'history request failed'),
    );
  }

  async #dataVersion(version: string): Promise<AdminAnswer> {
    const state = parseDataVersion(version);
    if (state === null) throw badRequest('a data version is a snapshot id (1 to 64 visible ASCII characters), then "+" and a position when it has one, as X-Data-Version carries it');
    const why = this.#versions.unavailable;
    if (why !== null) throw serviceUnavailable(why);
    const found = await this.#read('a data version could not be looked up', 'the record of served data versions', () => this.#versions.find(state));
    if (found === null) throw notFound(`data version ${JSON.stringify(version)} was not served here since the record of versions began`);
    return { status: 200, body: JSON.stringify(found) };
  }

  /** `upi` is checked to be a VPA; echoed as given, as a verdict echoes it. */
  async #answerHistory(upi: string): Promise<AdminAnswer> {
    const why = this.#answers.unavailable;
    if (why !== null) throw serviceUnavailable(why);
    const changes = await this.#read("a VPA's history could not be read", 'the history of answers', () => this.#answers.changesOf(normalizeVpa(upi)));
    return { status: 200, body: JSON.stringify({ upi, changes }) };
  }

  /**
   * The answers to `upis` (each checked to be a VPA, echoed as given) as
   * the service gave them at `asOfText`, from the one state then served:
   * a single verdict, or a batch. 400 for an instant that is not RFC 3339,
   * 422 for one to come, or before the history kept (`earliest_as_of`).
   */
  async #asOf(upis: readonly string[], asOfText: string, batch: boolean): Promise<AdminAnswer> {
    const at = parseRfc3339(asOfText);
    if (Number.isNaN(at)) throw badRequest('"as_of" is not an RFC 3339 instant (such as 2026-03-03T10:02:00Z or 2026-03-03T15:32:00+05:30)');
    const now = Date.now();
    if (at > now) throw validationError(`"as_of" ${asOfText} is still to come; the service answers as of an instant past`);
    const answers = this.#answers;
    if (answers.unavailable !== null && answers.unavailable !== HISTORY_OFF) throw serviceUnavailable(answers.unavailable);
    const earliest = answers.unavailable === null ? await this.#earliest(now) : null;
    if (earliest === null || at < earliest) throw beforeHistory(asOfText, earliest);
    const served = await this.#read('a past state could not be looked up', 'the record of served data versions', () => this.#versions.stateAt(at));
    if (served === null || served.dataAsOf === 0) throw beforeHistory(asOfText, earliest);
    if (!served.answersRecorded) throw serviceUnavailable('the answers served at that instant are not in the history of answers: it could not be written then (ERR_HISTORY in the log), or no fleet follower was recording it (or has said so yet: a fleet tells an instant a second after it)');
    // As of the state's first instant, which it answered alike until the next: the records of a state not yet in the record of versions (being served now) are not read.
    const past = await this.#read('a past answer could not be read', 'the history of answers', () => answers.answersAt(upis.map(normalizeVpa), served.from));
    const body = batch ? pastBatchJson(upis, past) : verdictJson(pastVerdict(upis[0]!, past[0]!));
    return { status: 200, body, servedAs: { version: dataVersion(served.state.snapshot, served.state.position), asOf: formatIso(served.dataAsOf), requested: asOfText } };
  }

  /** The earliest instant an answer is told as of: the history begun, the first state recorded, the retention. Null with none recorded. */
  async #earliest(now: number): Promise<number | null> {
    const first = await this.#read('a past state could not be looked up', 'the record of served data versions', () => this.#versions.firstAt());
    const kept = this.#answers.earliestAt(now);
    return first === null || kept === null ? null : Math.max(first, kept);
  }

  /** `read()`, a HistoryError logged as `failed` and answered 503 naming `what`. */
  async #read<T>(failed: string, what: string, read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      if (!(error instanceof HistoryError)) throw error;
      this.#logger.error({ code: error.code, err: error.message }, failed);
      throw serviceUnavailable(`${what} cannot be read: ${error.message}`);
    }
  }
}

/** The 422 of an instant before the history kept, naming the earliest one kept (null: none). */
function beforeHistory(asOfText: string, earliest: number | null): HttpError {
  const kept = earliest === null ? 'no history of answers is kept here yet' : `the earliest instant kept is ${formatIso(earliest)}`;
  return new HttpError(422, 'validation_error', `"as_of" ${asOfText} is before the history kept (serve --history-days); ${kept}`, { fields: { earliest_as_of: earliest === null ? null : formatIso(earliest) } });
}
