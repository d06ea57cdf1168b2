/**
 * Every call the console makes: same-origin fetch with the session cookie,
 * the CSRF token (held in memory only) on every request that is not a GET,
 * and the API's error shape turned into ApiError. A 401 from any route but
 * signing in or asking for the session means the session is gone: the
 * listener takes the console back to the sign-in page.
 */
import type { Session } from './types.js';

/** An answer that is not 2xx, with the API's `error` code and `message`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole error body, for fields beyond `message` (a 422's `errors`, a 429's `retry_after`). */
    readonly body: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

export interface Answer<T> {
  readonly status: number;
  readonly body: T;
  /** The spec asks callers to log these with each screening record. */
  readonly requestId: string | null;
  readonly dataVersion: string | null;
}

export interface RequestOptions {
  /** Sent as JSON. */
  readonly json?: unknown;
  /** Sent as it is, with `contentType`. */
  readonly body?: Blob | string;
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

const SESSION_PATH = '/v1/admin/session';

let csrfToken: string | null = null;
let unauthorizedListener: (() => void) | null = null;

/** Called on a 401 from any route but signing in or asking for the session. */
export function onUnauthorized(listener: () => void): void {
  unauthorizedListener = listener;
}

/** One call; resolves with the parsed answer, rejects with ApiError (or a network TypeError). */
export async function call<T>(method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const headers = new Headers({ accept: 'application/json' });
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(options.json);
  } else if (options.body !== undefined) {
    headers.set('content-type', options.contentType ?? 'application/octet-stream');
    body = options.body;
  }
  if (method !== 'GET' && method !== 'HEAD' && csrfToken !== null) headers.set('x-csrf-token', csrfToken);
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    cache: 'no-store',
    body,
    signal: options.signal,
  });
  const parsed = await readJson(response);
  if (!response.ok) {
    const error = errorOf(response.status, parsed);
    // Signing in and asking for the session answer 401 to a visitor without one: that is the sign-in page already.
    if (response.status === 401 && (path !== SESSION_PATH || method === 'DELETE')) {
      csrfToken = null;
      unauthorizedListener?.();
    }
    throw error;
  }
  return {
    status: response.status,
    body: parsed as T,
    requestId: response.headers.get('x-request-id'),
    dataVersion: response.headers.get('x-data-version'),
  };
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function errorOf(status: number, body: unknown): ApiError {
  const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const code = typeof fields.error === 'string' ? fields.error : 'http_error';
  const message = typeof fields.message === 'string' ? fields.message : `The service answered HTTP ${status}.`;
  return new ApiError(status, code, message, fields);
}

/** The text to show for a failed call. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof DOMException && error.name === 'AbortError') return 'Stopped.';
  if (error instanceof TypeError) return 'The service could not be reached. Check the connection and try again.';
  return error instanceof Error ? error.message : String(error);
}

/** The session of the cookie, or null when there is none (401). */
export async function resumeSession(): Promise<Session | null> {
  try {
    const { body } = await call<Session>('GET', SESSION_PATH);
    csrfToken = body.csrf_token;
    return body;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
}

/** Exchange an admin key for a session; the key is sent once, in the body. */
export async function signIn(apiKey: string): Promise<Session> {
  const { body } = await call<Session>('POST', SESSION_PATH, { json: { api_key: apiKey } });
  csrfToken = body.csrf_token;
  return body;
}

export async function signOut(): Promise<void> {
  try {
    await call('DELETE', SESSION_PATH);
  } finally {
    csrfToken = null;
  }
}
