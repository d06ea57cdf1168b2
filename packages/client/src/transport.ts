/**
 * One API request with the spec's retries: each attempt under its own
 * timeout, every attempt and wait under the call's deadline and the caller's
 * AbortSignal. Answers come back as parsed JSON (or, for the mirror's
 * files, as bytes) with the headers the spec asks callers to log.
 */
import { childController, raceAbort, throwIfAborted, type Sleep } from './abort.js';
import { NetworkError, ResponseFormatError, TimeoutError, UpiRiskError, errorForAnswer } from './errors.js';
import { RetrySchedule, retryAfterSeconds, type AttemptFailure } from './retry-schedule.js';

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
  /** The body as a stream (the platform's fetch has it): an answer with `maxBytes` is read from it, and cut off past them. */
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
  /** What a 2xx answer's body is: JSON (the default), or bytes, given as a Uint8Array. */
  readonly answer?: 'json' | 'bytes';
  /**
   * The most bytes a 2xx answer's body may have once decompressed: past
   * them, reading stops and the call fails with a ResponseFormatError (not
   * retried). A compressed answer is small on the wire whatever it unpacks to.
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
  /** The body as text, or '' when it was read as bytes. */
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
      const retryAfter = raw.status === 429 ? retryAfterSeconds(raw.retryAfterHeader, body, config.now()) : null;
      error = errorForAnswer(raw.status, body, raw.meta.requestId, retryAfter);
      failure = { kind: 'answer', status: raw.status, retryAfterSeconds: retryAfter };
    } catch (thrown) {
      const noAnswer = thrown instanceof NetworkError || (thrown instanceof TimeoutError && !thrown.deadline);
      if (!noAnswer) throw thrown;
      error = thrown;
      failure = { kind: 'no-answer' };
    }
    const delay = schedule.next(failure);
    // A wait that would end past the deadline is not started: the error that asked for it is the answer.
    if (delay === null || config.now() + delay >= scope.deadline) throw error;
    try {
      await raceAbort(config.sleep(delay, scope.signal), scope.signal);
    } catch (thrown) {
      // An injected sleep may reject on abort with an error of its own: the call's is AbortError.
      throwIfAborted(scope.signal);
      throw thrown;
    }
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
  try {
    const exchange = (async () => {
      const response = await config.fetch(`${config.baseUrl}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: controller.signal,
      });
      // Error answers are JSON whatever was asked for.
      const capped = request.maxBytes !== undefined && isSuccess(response.status) ? await boundedBytesOf(response, request.maxBytes, request.path) : null;
      const bytes = binary && isSuccess(response.status) ? (capped ?? (await bytesOf(response))) : null;
      const text = bytes !== null ? '' : capped !== null ? new TextDecoder().decode(capped) : await response.text();
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
    throw new NetworkError(`${request.method} ${request.path.split('?')[0]} failed: ${describe(cause)}`, { cause });
  } finally {
    clearTimeout(timer);
    release();
  }
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

function tooLarge(path: string, maxBytes: number): ResponseFormatError {
  return new ResponseFormatError(`the answer to GET ${path.split('?')[0]} is larger than the ${maxBytes} bytes it may be`);
}

/** An answer's body, read from its stream up to `maxBytes` (decompressed); ResponseFormatError past them. */
async function boundedBytesOf(response: FetchResponse, maxBytes: number, path: string): Promise<Uint8Array> {
  const stream = response.body;
  if (stream === undefined || stream === null) {
    const bytes = await bytesOf(response);
    if (bytes.length > maxBytes) throw tooLarge(path, maxBytes);
    return bytes;
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
      throw tooLarge(path, maxBytes);
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
