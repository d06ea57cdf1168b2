import type { KeyRecord } from '../access/key-record.js';
import { HttpError, badRequest, errorJson, unavailableAfter, validationError } from './http-error.js';

/**
 * What a serving thread asks the main thread for on an admin route: the
 * operations that change or read the keys, the audit log, the sessions and
 * the figures, which live with the main thread. `key` is the caller's
 * record (its key or its console session's key), already authenticated,
 * within its quota and holding the route's scope.
 */
export type AdminRequest =
  /** Open a console session for a key presented at sign-in. */
  | { readonly op: 'session.open'; readonly key: KeyRecord }
  /** The session of a cookie's token, if it still stands (answered in `session`). */
  | { readonly op: 'session.find'; readonly tokenHash: string }
  | { readonly op: 'session.close'; readonly key: KeyRecord; readonly tokenHash: string }
  | { readonly op: 'keys.list'; readonly key: KeyRecord }
  | { readonly op: 'keys.create'; readonly key: KeyRecord; readonly body: unknown }
  | { readonly op: 'keys.rotate'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'keys.revoke'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'keys.update'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  | { readonly op: 'audit.list'; readonly key: KeyRecord; readonly limit: number }
  | { readonly op: 'stats'; readonly key: KeyRecord }
  /** Fold the live delta into a new snapshot now (docs/design.md, Compaction). */
  | { readonly op: 'compaction.start'; readonly key: KeyRecord }
  | WatchRequest
  | CorrectionRequest
  | DisputeRequest
  | HistoryRequest;

/**
 * A watchlist request a serving thread hands the main thread; `key` is the
 * caller, whose watchlists these are. The reads the console makes with an
 * admin key (`anyOwner`) see every key's watchlists.
 */
export type WatchRequest =
  | { readonly op: 'watch.create'; readonly key: KeyRecord; readonly body: unknown }
  | { readonly op: 'watch.list'; readonly key: KeyRecord }
  /** Every key's watchlists, a page at a time, in id order (the admin view). */
  | { readonly op: 'watch.list.all'; readonly key: KeyRecord; readonly cursor: string | null; readonly limit: number }
  | { readonly op: 'watch.get'; readonly key: KeyRecord; readonly id: string; readonly anyOwner?: boolean }
  | { readonly op: 'watch.delete'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'watch.secret'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  | { readonly op: 'watch.add'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  | { readonly op: 'watch.remove'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  | { readonly op: 'watch.vpas'; readonly key: KeyRecord; readonly id: string; readonly cursor: string | null; readonly limit: number; readonly anyOwner?: boolean }
  | { readonly op: 'watch.events'; readonly key: KeyRecord; readonly id: string; readonly cursor: string | null; readonly limit: number; readonly anyOwner?: boolean }
  | { readonly op: 'watch.redeliver'; readonly key: KeyRecord; readonly id: string; readonly eventId: string };

/**
 * A correction a serving thread hands the main thread (docs/api.md,
 * Corrections): the body as sent, checked there; a list's `upi` is a
 * canonical VPA or null.
 */
export type CorrectionRequest =
  | { readonly op: 'retractions.create'; readonly key: KeyRecord; readonly body: unknown }
  | { readonly op: 'clearances.create'; readonly key: KeyRecord; readonly body: unknown }
  | { readonly op: 'clearances.list'; readonly key: KeyRecord; readonly upi: string | null; readonly cursor: string | null; readonly limit: number }
  | { readonly op: 'clearances.get'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'clearances.end'; readonly key: KeyRecord; readonly id: string; readonly body: unknown };


/**
 * A dispute or report request (docs/api.md, Disputes and reports): `key` is
 * the caller, whose disputes and reports the `screen` routes read; the
 * `admin` routes (`dispute.review`, `dispute.resolve`, `dispute.list.all`,
 * `report.*` but `report.create`) see every key's. Bodies and ids are
 * checked by the main thread, which answers every refusal.
 */
export type DisputeRequest =
  | { readonly op: 'dispute.open'; readonly key: KeyRecord; readonly body: unknown }
  | { readonly op: 'dispute.get'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'dispute.list'; readonly key: KeyRecord; readonly cursor: string | null; readonly limit: number }
  | { readonly op: 'dispute.list.all'; readonly key: KeyRecord; readonly status: string | null; readonly cursor: string | null; readonly limit: number }
  | { readonly op: 'dispute.review'; readonly key: KeyRecord; readonly id: string }
  | { readonly op: 'dispute.resolve'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  /** `idempotencyKey`: the Idempotency-Key header as sent, '' for none; checked on the main thread. */
  | { readonly op: 'report.create'; readonly key: KeyRecord; readonly body: unknown; readonly idempotencyKey: string }
  | { readonly op: 'report.list'; readonly key: KeyRecord; readonly status: string | null; readonly cursor: string | null; readonly limit: number }
  | { readonly op: 'report.accept'; readonly key: KeyRecord; readonly id: string; readonly body: unknown }
  | { readonly op: 'report.dismiss'; readonly key: KeyRecord; readonly id: string; readonly body: unknown };

/**
 * A read of the record of what was served (docs/api.md, Data versions):
 * `version` as the path carried it, percent-decoded, checked there.
 */
export type HistoryRequest =
  | { readonly op: 'data-version.get'; readonly key: KeyRecord; readonly version: string }
  /** `upi` as the caller sent it, checked to be a VPA. */
  | { readonly op: 'answer-history.get'; readonly key: KeyRecord; readonly upi: string }
  /** A single lookup (`batch` false, one VPA) or a batch as of `asOf`, the text the caller sent; `upis` checked to be VPAs. */
  | { readonly op: 'verify.as-of'; readonly key: KeyRecord; readonly upis: readonly string[]; readonly asOf: string; readonly batch: boolean };

/** The admin requests of keys, sessions, the audit log and the figures. */
export type KeyAdminRequest = Exclude<AdminRequest, WatchRequest | CorrectionRequest | DisputeRequest | HistoryRequest>;

export function isWatchRequest(request: AdminRequest): request is WatchRequest {
  return request.op.startsWith('watch.');
}

export function isCorrectionRequest(request: AdminRequest): request is CorrectionRequest {
  return request.op.startsWith('retractions.') || request.op.startsWith('clearances.');
}

/** Whether a request is a dispute's or a report's (DisputeRequest). */
export function isDisputeRequest(request: AdminRequest): request is DisputeRequest {
  return request.op.startsWith('dispute.') || request.op.startsWith('report.');
}

/** Whether a request reads the record of what was served (HistoryRequest). */
export function isHistoryRequest(request: AdminRequest): request is HistoryRequest {
  return request.op === 'data-version.get' || request.op === 'answer-history.get' || request.op === 'verify.as-of';
}

/** A console session that stands, as a serving thread needs it. */
export interface FoundSession {
  readonly key: KeyRecord;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/** The answer to write (status and JSON body), a Set-Cookie value, or the session found. */
export interface AdminAnswer {
  readonly status: number;
  readonly body: string;
  /** An answer from a past state (an as-of lookup): its X-Data-Version and X-Data-As-Of, and the instant asked for (X-As-Of). */
  readonly servedAs?: { readonly version: string; readonly asOf: string; readonly requested: string };
  readonly cookie?: string;
  readonly session?: FoundSession | null;
}

/** Largest JSON body an admin route reads. */
export const MAX_ADMIN_BODY_BYTES = 64 * 1024;
/** Largest body of a watchlist's VPAs (1,000 of the longest legal form). */
export const MAX_WATCH_BODY_BYTES = 512 * 1024;
/** Watchlists a key may hold. */
export const MAX_WATCHLISTS_PER_KEY = 100;
/** VPAs a key may watch, over all its watchlists: every one is screened again at every change of what is served. */
export const MAX_WATCHED_PER_KEY = 1_000_000;

/** The JSON of a console session: who it is and the CSRF token for changes (never the cookie's token). */
export function sessionJson(session: FoundSession): string {
  return JSON.stringify({
    key: { id: session.key.id, name: session.key.name, scopes: session.key.scopes },
    csrf_token: session.csrfToken,
    expires_at: new Date(session.expiresAt).toISOString(),
  });
}

/** An admin body: a JSON object, or an empty body read as `{}`. */
export function jsonObjectBody(body: Uint8Array): Record<string, unknown> {
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch {
    throw badRequest('the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw validationError('the request body must be a JSON object');
  return value as Record<string, unknown>;
}

/**
 * The answer `work` gives, whatever happens: a refusal (HttpError) as the
 * API's error body, any other failure (a store that cannot be read or
 * written) as 503, reported to `failed` first.
 */
export async function answerAlways(work: () => Promise<AdminAnswer>, failed: (error: Error) => void): Promise<AdminAnswer> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, body: errorJson(error) };
    failed(error as Error);
    return { status: 503, body: errorJson(unavailableAfter('the request could not be carried out', error)) };
  }
}
