/**
 * One API request with the spec's retries: each attempt under its own
 * timeout, every attempt and wait under the call's deadline and the caller's
 * AbortSignal. Answers come back as parsed JSON (or, for the mirror's
 * files, as bytes) with the headers the spec asks callers to log. Every
 * body is read up to a bound, so no answer can take memory without limit.
 */
import { childController, raceAbort, throwIfAborted, type Sleep } from './abort.js';
import { NetworkError, ResponseFormatError, TimeoutError, UpiRiskError, errorForAnswer } from './errors.js';
import { MIN_ATTEMPT_MS, RetrySchedule, retryAfterSeconds, type AttemptFailure } from './retry-schedule.js';

/** The most bytes of a 2xx answer, decompressed, unless the request sets its own `maxBytes`: the service's JSON answers are far smaller. */
export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;
/** The most bytes of an error answer read: the service's are a line of JSON; a longer body (a proxy's page) is not read, and the error is typed by its status. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** The part of `fetch` the client uses; the platform's `fetch` is one. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
  /** The body as bytes: needed by UpiRiskMirror, whose files are binary (the platform's fetch has it). */
  arrayBuffer?(): Promise<ArrayBuffer>;
  /** The body as a stream (the platform's fetch has it): every answer is read from it, and cut off past its bound. */
  readonly body?: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(reason?: unknown): Promise<void> } } | null;
}

/** What a screening record should keep of an answer (the spec's advice on logging). */
export interface ResponseMeta {
  /** `X-Request-Id`: identifies the request to support. */
  readonly requestId: string | null;
  /** `X-Data-Version`: the intelligence that answered. */
  readonly dataVersion: string | null;
  /** `X-Data-As-Of`: when the newest evidence in that intelligence was ingested. */
  readonly dataAsOf: string | null;
}

export interface TransportConfig {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: FetchLike;
  readonly now: () => number;
  readonly sleep: Sleep;
  readonly random: () => number;
  readonly timeoutMs: number;
}

export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** From `/v1/`, query string included, already encoded. */
  readonly path: string;
  readonly body?: unknown;
  /** Whether sending it twice does no harm; see retry-schedule.ts. */
  readonly idempotent: boolean;
  /** Sent as the Idempotency-Key header: the same on every attempt, so the service stores a retried change once. */
  readonly idempotencyKey?: string;
  /** What a 2xx answer's body is: JSON (the default), or bytes, given as a Uint8Array. */
  readonly answer?: 'json' | 'bytes';
  /**
   * The most bytes a 2xx answer's body may have once decompressed
   * (DEFAULT_MAX_ANSWER_BYTES when not set): past them, reading stops and
   * the call fails with a ResponseFormatError (not retried). A compressed
   * answer is small on the wire whatever it unpacks to.
   */
  readonly maxBytes?: number;
}

/** What bounds one call of the client: every request, attempt and wait it makes. */
export interface CallScope {
  /** When the call must be over, on the `now` clock (ms). */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
}

export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly meta: ResponseMeta;
}

interface RawAnswer {
  readonly status: number;
  /** The body as text, or '' when it was read as bytes or was past MAX_ERROR_BODY_BYTES. */
  readonly text: string;
  /** The body of a 2xx answer to a request for bytes, else null. */
  readonly bytes: Uint8Array | null;
  readonly meta: ResponseMeta;
  readonly retryAfterHeader: string | null;
}

/** Send `request`, retrying as the spec advises; a 2xx answer's JSON, or the error that ended it. */
export async function sendWithRetries(config: TransportConfig, request: ApiRequest, scope: CallScope): Promise<ApiAnswer> {
  const schedule = new RetrySchedule(config.random, request.idempotent);
  for (;;) {
    throwIfAborted(scope.signal);
    let failure: AttemptFailure;
    let error: UpiRiskError;
    try {
      const raw = await attempt(config, request, scope);
      if (isSuccess(raw.status)) return { status: raw.status, body: raw.bytes ?? parseAnswer(raw), meta: raw.meta };
      const body = parseOrNull(raw.text);
      const retryAfter = raw.status === 429 || raw.status === 503 ? retryAfterSeconds(raw.retryAfterHeader, body, config.now()) : null;
      error = errorForAnswer(raw.status, body, raw.meta.requestId, retryAfter);
      failure = { kind: 'answer', status: raw.status, retryAfterSeconds: retryAfter, errorCode: errorCodeOf(body) };
    } catch (thrown) {
      const noAnswer = thrown instanceof NetworkError || (thrown instanceof TimeoutError && !thrown.deadline);
      if (!noAnswer) throw thrown;
      error = thrown;
      failure = { kind: 'no-answer' };
    }
    const delay = schedule.next(failure);
    // A wait after which too little of the deadline would be left for an attempt is not started: the error that asked for it is the answer.
    if (delay === null || config.now() + delay + MIN_ATTEMPT_MS > scope.deadline) throw error;
    try {
      await raceAbort(config.sleep(delay, scope.signal), scope.signal);
    } catch (thrown) {
      // An injected sleep may reject on abort with an error of its own: the call's is AbortError.
      throwIfAborted(scope.signal);
      throw thrown;
    }
    // A wait that overran (a suspended process) leaves the same error, rather than a TimeoutError of an attempt with no time.
    if (scope.deadline - config.now() < MIN_ATTEMPT_MS) throw error;
  }
}

/** One HTTP exchange, cut at `timeoutMs` or at the deadline, whichever is sooner. */
async function attempt(config: TransportConfig, request: ApiRequest, scope: CallScope): Promise<RawAnswer> {
  const remaining = scope.deadline - config.now();
  if (remaining <= 0) throw new TimeoutError('the call passed its deadline', true);
  const atDeadline = remaining <= config.timeoutMs;
  const { controller, release } = childController(scope.signal);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, Math.min(remaining, config.timeoutMs));
  const binary = request.answer === 'bytes';
  const headers: Record<string, string> = { authorization: `Bearer ${config.apiKey}`, accept: binary ? 'application/octet-stream' : 'application/json' };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
  const url = `${config.baseUrl}${request.path}`;
  const init: FetchInit = { method: request.method, headers, ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }), signal: controller.signal };
  try {
    const exchange = (async () => {
      const response = await config.fetch(url, init);
      const success = isSuccess(response.status);
      const body = await boundedBytesOf(response, success ? (request.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES) : MAX_ERROR_BODY_BYTES, binary && success);
      if (body === null && success) throw tooLarge(request, request.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES);
      // Error answers are JSON whatever was asked for.
      const bytes = binary && success ? body : null;
      const text = bytes !== null || body === null ? '' : new TextDecoder().decode(body);
      return { status: response.status, text, bytes, meta: metaOf(response.headers), retryAfterHeader: response.headers.get('retry-after') };
    })();
    return await raceAbort(exchange, controller.signal);
  } catch (cause) {
    throwIfAborted(scope.signal);
    if (cause instanceof ResponseFormatError) throw cause;
    if (timedOut) {
      const message = atDeadline ? 'no answer before the call deadline' : `no answer within ${config.timeoutMs} ms`;
      throw new TimeoutError(message, atDeadline, { cause });
    }
    const what = `${request.method} ${request.path.split('?')[0]}`;
    const reason = withoutKey(describe(cause), config.apiKey);
    // fetch refuses a request it cannot make (its URL, method or headers) with the TypeError it gives a network failure: told apart by
    // building the request without sending it. Not retried, and without the cause, whose message may quote the key.
    if (cause instanceof TypeError && !canBuildRequest(url, init)) throw new TypeError(`${what} could not be made: ${reason}`);
    throw new NetworkError(`${what} failed: ${reason}`, { cause });
  } finally {
    clearTimeout(timer);
    release();
  }
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

function tooLarge(request: ApiRequest, maxBytes: number): ResponseFormatError {
  return new ResponseFormatError(`the answer to ${request.method} ${request.path.split('?')[0]} is larger than the ${maxBytes} bytes it may be`);
}

/**
 * An answer's body, read from its stream up to `maxBytes` (decompressed);
 * null past them, the rest left unread. A fetch whose answers have no
 * stream is read whole (arrayBuffer, or text but for `binary` answers) and
 * then measured.
 */
async function boundedBytesOf(response: FetchResponse, maxBytes: number, binary: boolean): Promise<Uint8Array | null> {
  const stream = response.body;
  if (stream === undefined || stream === null) {
    const bytes = binary || typeof response.arrayBuffer === 'function' ? await bytesOf(response) : new TextEncoder().encode(await response.text());
    return bytes.length > maxBytes ? null : bytes;
  }
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value === undefined) continue;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

async function bytesOf(response: FetchResponse): Promise<Uint8Array> {
  if (typeof response.arrayBuffer !== 'function') {
    throw new ResponseFormatError('the fetch given answers without arrayBuffer(), which binary answers need');
  }
  return new Uint8Array(await response.arrayBuffer());
}

function metaOf(headers: FetchResponse['headers']): ResponseMeta {
  return { requestId: headers.get('x-request-id'), dataVersion: headers.get('x-data-version'), dataAsOf: headers.get('x-data-as-of') };
}

function parseAnswer(raw: RawAnswer): unknown {
  try {
    return JSON.parse(raw.text) as unknown;
  } catch (cause) {
    throw new ResponseFormatError(`a ${raw.status} answer that is not JSON`, { status: raw.status, requestId: raw.meta.requestId, cause });
  }
}

/** The `error` code of a body that is the service's JSON error; null for anything else (a proxy's page). */
function errorCodeOf(body: unknown): string | null {
  const code = body !== null && typeof body === 'object' ? (body as { error?: unknown }).error : undefined;
  return typeof code === 'string' ? code : null;
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** The innermost cause's message: fetch's own ("fetch failed") says little. */
function describe(cause: unknown): string {
  let current = cause;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  if (current instanceof Error) {
    const code = (current as { code?: unknown }).code;
    return typeof code === 'string' && !current.message.includes(code) ? `${current.message} (${code})` : current.message;
  }
  return String(current);
}

/** `text` with every occurrence of the API key replaced: no error message carries it. */
function withoutKey(text: string, apiKey: string): string {
  return text.split(apiKey).join('<apiKey>');
}

/** Whether the platform builds a request of `url` and `init` (no platform Request class: taken as yes). */
function canBuildRequest(url: string, init: FetchInit): boolean {
  if (typeof Request !== 'function') return true;
  try {
    new Request(url, { method: init.method, headers: init.headers, ...(init.body === undefined ? {} : { body: init.body }) });
    return true;
  } catch {
    return false;
  }
}
