import type { AdminAnswer, HistoryRequest } from '../api/admin-requests.js';
import { answerAlways } from '../api/admin-requests.js';
import { badRequest, notFound, serviceUnavailable } from '../api/http-error.js';
import { HistoryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { parseDataVersion, type ServedVersions } from './served-versions.js';

/**
 * The main thread's side of GET /v1/data-versions/{version} (docs/api.md,
 * Data versions): the version checked, then looked up in the record of
 * versions served.
 */
export class HistoryRequests {
  readonly #versions: ServedVersions;
  readonly #logger: Logger;

  constructor(versions: ServedVersions, logger: Logger) {
    this.#versions = versions;
    this.#logger = logger;
  }

  handle(request: HistoryRequest): Promise<AdminAnswer> {
    return answerAlways(
      async () => {
        const state = parseDataVersion(request.version);
        if (state === null) throw badRequest('a data version is a snapshot id (1 to 64 visible ASCII characters), then "+" and a position when it has one, as X-Data-Version carries it');
        const why = this.#versions.unavailable;
        if (why !== null) throw serviceUnavailable(why);
        let found;
        try {
          found = await this.#versions.find(state);
        } catch (error) {
          if (!(error instanceof HistoryError)) throw error;
          this.#logger.error({ code: error.code, err: error.message }, 'a data version could not be looked up');
          throw serviceUnavailable(`the record of served data versions cannot be read: ${error.message}`);
        }
        if (found === null) throw notFound(`data version ${JSON.stringify(request.version)} was not served here since the record of versions began`);
        return { status: 200, body: JSON.stringify(found) };
      },
      (error) => this.#logger.error({ op: request.op, err: error.message }, 'data version request failed'),
    );
  }
}
