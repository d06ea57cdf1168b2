import type { AdminAnswer, HistoryRequest } from '../api/admin-requests.js';
import { answerAlways } from '../api/admin-requests.js';
import { badRequest, notFound, serviceUnavailable } from '../api/http-error.js';
import { HistoryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { normalizeVpa } from '../vpa/vpa.js';
import type { AnswerHistory } from './answer-changes.js';
import { parseDataVersion, type ServedVersions } from './served-versions.js';

/**
 * The main thread's side of GET /v1/data-versions/{version} (docs/api.md,
 * Data versions), looked up in the record of versions served, and of GET
 * /v1/verify/upi/history (Answer history), read from the history of
 * answers.
 */
export class HistoryRequests {
  readonly #versions: ServedVersions;
  readonly #answers: AnswerHistory;
  readonly #logger: Logger;

  constructor(versions: ServedVersions, answers: AnswerHistory, logger: Logger) {
    this.#versions = versions;
    this.#answers = answers;
    this.#logger = logger;
  }

  handle(request: HistoryRequest): Promise<AdminAnswer> {
    return answerAlways(
      () => (request.op === 'data-version.get' ? this.#dataVersion(request.version) : this.#answerHistory(request.upi)),
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
