import type { ErrorCode } from './schemas.js';

/**
 * An error that maps to one of the spec's error responses. Handlers throw
 * these; the edge turns them into `{error, message}` JSON in one place.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly retryAfter: number | undefined;
  /** Close the connection after answering (the client may still be sending a body we will not read). */
  readonly closeConnection: boolean;
  /** Fields the error body carries beside `error` and `message` (a 409's `clearance_id`). */
  readonly fields: Readonly<Record<string, unknown>> | undefined;

  constructor(status: number, code: ErrorCode, message: string, options: { retryAfter?: number; closeConnection?: boolean; fields?: Readonly<Record<string, unknown>> } = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.retryAfter = options.retryAfter;
    this.closeConnection = options.closeConnection ?? false;
    this.fields = options.fields;
  }
}

export const badRequest = (message: string, closeConnection = false) => new HttpError(400, 'bad_request', message, { closeConnection });
export const validationError = (message: string) => new HttpError(422, 'validation_error', message);
export const unauthorized = (message: string) => new HttpError(401, 'unauthorized', message);
export const forbidden = (message: string) => new HttpError(403, 'forbidden', message);
export const notFound = (message: string) => new HttpError(404, 'not_found', message);
/** 409: the change collides with the state it would change (a second clearance of a VPA, a second open dispute, a decision made already); `fields` name what it collides with. */
export const conflict = (message: string, fields?: Readonly<Record<string, unknown>>) => new HttpError(409, 'conflict', message, fields === undefined ? {} : { fields });
export const tooManyRequests = (retryAfter: number) =>
  new HttpError(429, 'rate_limit_exceeded', `request limit exceeded; retry after ${retryAfter} s`, { retryAfter });
export const serviceUnavailable = (message: string) => new HttpError(503, 'service_unavailable', message);

/**
 * The 503 a caller gets for a failure inside the service (a store that
 * cannot be reached or refused the change): what could not be done, and the
 * failure's stable code when it has one, never its text, which may name
 * the store's host, database and schema or quote the database; the
 * server's log has that.
 */
export function unavailableAfter(what: string, error: unknown): HttpError {
  const code = stableCodeOf(error);
  return serviceUnavailable(`${what}${code === null ? '' : ` (${code})`}; the server's log says why, and the request can be sent again`);
}

/** The stable code (`ERR_...`, common/errors.ts) a failure carries, or null: what of it a caller may be told. */
export function stableCodeOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^ERR_[A-Z_]+$/.test(code) ? code : null;
}
export const internalError = () => new HttpError(500, 'internal_error', 'unexpected server error; the request can be retried');

/** HTTP status lines, built once. */
export const STATUS_LINES: Readonly<Record<number, string>> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  409: '409 Conflict',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

/** The spec's error body: `{error, message}`, `retry_after` with a 429, and the error's own fields. */
export function errorJson(e: HttpError): string {
  const body: Record<string, unknown> = { ...e.fields, error: e.code, message: e.message };
  if (e.retryAfter !== undefined) body.retry_after = e.retryAfter;
  return JSON.stringify(body);
}
