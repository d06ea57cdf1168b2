/**
 * Every error the client throws, in one module. Error answers of the
 * service are keyed on the spec's stable `error` codes (never on the
 * message); transport failures, webhook refusals and the local mirror's
 * refusals have codes of their own.
 * Every class has a `name` equal to its class name (set explicitly, so
 * minified bundles keep it) and a stable `code`.
 */

export interface ErrorDetails {
  /** HTTP status of the answer; null when none came. */
  readonly status?: number | null;
  /** `X-Request-Id` of the answer; quote it to support. */
  readonly requestId?: string | null;
  readonly cause?: unknown;
}

/** Base of every error the client throws. */
export abstract class UpiRiskError extends Error {
  override readonly name: string = 'UpiRiskError';
  abstract readonly code: string;
  readonly status: number | null;
  readonly requestId: string | null;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status ?? null;
    this.requestId = details.requestId ?? null;
  }
}

/**
 * An error answer of the service. Known codes have the subclasses below; a
 * code this client does not know (or an answer without one, from a proxy)
 * is an ApiError with that code, or `http_<status>`.
 */
export class ApiError extends UpiRiskError {
  override readonly name: string = 'ApiError';
  readonly code: string;
  constructor(code: string, message: string, details: ErrorDetails = {}) {
    super(message, details);
    this.code = code;
  }
}

/** 400: a parameter is missing or not acceptable (an invalid VPA, more than 100 in a batch). Not retried. */
export class BadRequestError extends ApiError {
  override readonly name: string = 'BadRequestError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('bad_request', message, details);
  }
}

/** 401: the API key is missing, unknown, rotated or revoked. Not retried. */
export class UnauthorizedError extends ApiError {
  override readonly name: string = 'UnauthorizedError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('unauthorized', message, details);
  }
}

/** 403: the key is valid but lacks the scope the endpoint needs. Not retried. */
export class ForbiddenError extends ApiError {
  override readonly name: string = 'ForbiddenError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('forbidden', message, details);
  }
}

/** 404: no such cluster, watchlist, event or dispute (or another key's watchlist or dispute). Not retried. */
export class NotFoundError extends ApiError {
  override readonly name: string = 'NotFoundError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('not_found', message, details);
  }
}

/**
 * 409: the change collides with what is stored: a second open dispute of a
 * VPA by the same key (`disputeId` names the first), a dispute resolved
 * already. Not retried.
 */
export class ConflictError extends ApiError {
  override readonly name: string = 'ConflictError';
  /** The dispute the answer names (`dispute_id`), or null when it names none. */
  readonly disputeId: string | null;
  constructor(message: string, disputeId: string | null, details: ErrorDetails = {}) {
    super('conflict', message, details);
    this.disputeId = disputeId;
  }
}

/** 422: the body is JSON of the wrong shape. Not retried. */
export class ValidationError extends ApiError {
  override readonly name: string = 'ValidationError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('validation_error', message, details);
  }
}

/** 429 (whatever its body's code): a quota is spent. Retried after `retryAfter`; thrown when the deadline comes first. */
export class RateLimitError extends ApiError {
  override readonly name: string = 'RateLimitError';
  /** Seconds the service asked to wait (`Retry-After`, or the body's `retry_after`); null when it said nothing. */
  readonly retryAfter: number | null;
  constructor(message: string, retryAfter: number | null, details: ErrorDetails = {}) {
    super('rate_limit_exceeded', message, details);
    this.retryAfter = retryAfter;
  }
}

/** 500: an unexpected server error. Retried up to 3 times (1, 2, 4 s). */
export class InternalError extends ApiError {
  override readonly name: string = 'InternalError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('internal_error', message, details);
  }
}

/** 503: temporarily unavailable (or a planned operation). Retried up to 3 times (1, 2, 4 s). */
export class ServiceUnavailableError extends ApiError {
  override readonly name: string = 'ServiceUnavailableError';
  constructor(message: string, details: ErrorDetails = {}) {
    super('service_unavailable', message, details);
  }
}

/** No answer: the connection failed or was reset. Retried like a 503. */
export class NetworkError extends UpiRiskError {
  override readonly name: string = 'NetworkError';
  readonly code = 'network_error';
}

/**
 * No answer in time: one attempt passed `timeoutMs` (retried like a 503),
 * or the call passed its deadline (not retried).
 */
export class TimeoutError extends UpiRiskError {
  override readonly name: string = 'TimeoutError';
  readonly code = 'timeout';
  /** Whether the call's deadline (rather than one attempt's timeout) ran out. */
  readonly deadline: boolean;
  constructor(message: string, deadline: boolean, details: ErrorDetails = {}) {
    super(message, details);
    this.deadline = deadline;
  }
}

/** The caller's AbortSignal fired; `cause` is its reason. */
export class AbortError extends UpiRiskError {
  override readonly name: string = 'AbortError';
  readonly code = 'aborted';
}

/** A 2xx answer that is not JSON or lacks what the API promises. Not retried. */
export class ResponseFormatError extends UpiRiskError {
  override readonly name: string = 'ResponseFormatError';
  readonly code = 'invalid_response';
}

export type WebhookRefusal = 'malformed_header' | 'no_matching_signature' | 'timestamp_out_of_tolerance' | 'malformed_body';

/** verifyWebhook refused a delivery; `reason` says why. */
export class WebhookSignatureError extends UpiRiskError {
  override readonly name: string = 'WebhookSignatureError';
  readonly code = 'webhook_signature_invalid';
  readonly reason: WebhookRefusal;
  constructor(reason: WebhookRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * Base of the local mirror's errors (mirror.ts). A sync or load that
 * throws one has changed nothing: the mirror keeps the state it held and
 * goes on answering from it.
 */
export abstract class MirrorError extends UpiRiskError {
  override readonly name: string = 'MirrorError';
}

/**
 * The manifest's signature does not verify under the mirror's public key:
 * another key signed it, or it was changed on the way.
 */
export class MirrorSignatureError extends MirrorError {
  override readonly name: string = 'MirrorSignatureError';
  readonly code = 'mirror_signature';
}

/**
 * The entry set a file built does not hash to the signed manifest's
 * `sha256`, or its size is not the manifest's `count`: a byte changed on the
 * way, or a diff made for another state.
 */
export class MirrorChecksumError extends MirrorError {
  override readonly name: string = 'MirrorChecksumError';
  readonly code = 'mirror_checksum';
}

/** Why a mirror file or manifest could not be read. */
export type MirrorFileProblem = 'format' | 'truncated' | 'order';

/**
 * A mirror file or manifest that cannot be read: `truncated` (shorter than
 * its header or the manifest's `bytes` say), `order` (entries not strictly
 * ascending), `format` (anything else: magic, kind, lengths, unknown codes,
 * a diff that does not fit the state held, a manifest missing a field).
 */
export class MirrorFileError extends MirrorError {
  override readonly name: string = 'MirrorFileError';
  readonly code = 'mirror_format';
  readonly problem: MirrorFileProblem;
  constructor(problem: MirrorFileProblem, message: string, details: ErrorDetails = {}) {
    super(message, details);
    this.problem = problem;
  }
}

/** A signed manifest older than the version held: an old answer replayed. */
export class MirrorReplayError extends MirrorError {
  override readonly name: string = 'MirrorReplayError';
  readonly code = 'mirror_replay';
  readonly heldVersion: number;
  readonly offeredVersion: number;
  constructor(heldVersion: number, offeredVersion: number) {
    super(`the manifest offers version ${offeredVersion}, older than version ${heldVersion} held`);
    this.heldVersion = heldVersion;
    this.offeredVersion = offeredVersion;
  }
}

/** `check` before the mirror holds any state: nothing synced or loaded yet. */
export class MirrorNotReadyError extends MirrorError {
  override readonly name: string = 'MirrorNotReadyError';
  readonly code = 'mirror_not_ready';
}

/** The mirror's directory could not be written (the synced state is then not taken either) or read. */
export class MirrorStorageError extends MirrorError {
  override readonly name: string = 'MirrorStorageError';
  readonly code = 'mirror_storage';
}

type AnswerErrorClass = new (message: string, details: ErrorDetails) => ApiError;

/** The class of each stable code of the spec, but 429 and 409, whose classes take more. */
const BY_CODE: Readonly<Record<string, AnswerErrorClass>> = {
  bad_request: BadRequestError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  validation_error: ValidationError,
  internal_error: InternalError,
  service_unavailable: ServiceUnavailableError,
};

/** The code the spec gives each status: what an answer without a code (a proxy's page) is taken for. */
const CODE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  422: 'validation_error',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
  503: 'service_unavailable',
};

/**
 * The error of a non-2xx answer: by the body's `error` code when it has
 * one, else by the status. A 429 is a RateLimitError whatever its code:
 * it is retried, and its `retryAfter` read, by its status.
 */
export function errorForAnswer(
  status: number,
  body: unknown,
  requestId: string | null,
  retryAfter: number | null,
): ApiError {
  const fields = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const code = typeof fields.error === 'string' ? fields.error : (CODE_BY_STATUS[status] ?? `http_${status}`);
  const message = typeof fields.message === 'string' ? fields.message : `HTTP ${status}`;
  const details = { status, requestId };
  if (code === 'rate_limit_exceeded' || status === 429) return new RateLimitError(message, retryAfter, details);
  if (code === 'conflict') return new ConflictError(message, typeof fields.dispute_id === 'string' ? fields.dispute_id : null, details);
  const known = BY_CODE[code];
  return known === undefined ? new ApiError(code, message, details) : new known(message, details);
}
