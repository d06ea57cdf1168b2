/**
 * UpiRiskClient: the v1 API's calls, typed from the OpenAPI document, with
 * the spec's retry advice applied and what a screening record should log
 * returned beside every verdict. UpiRiskMirror (mirror.ts) builds on its
 * options and transport.
 */
import { timerSleep, type Sleep } from './abort.js';
import { chunksOf, mapConcurrently } from './chunked.js';
import { ResponseFormatError } from './errors.js';
import { PageQuery } from './page-query.js';
import { sendWithRetries, type ApiRequest, type CallScope, type FetchLike, type ResponseMeta, type TransportConfig } from './transport.js';
import { batchItemsOf, checkAnsweredFor, objectOf, privateVerdictOf, toVpaVerdict, type PrivateVerdict } from './verdicts.js';
import { checkedVpa } from './vpa-check.js';
import { vpaHashHex } from './vpa-hash.js';
import type {
  AnswerChange,
  AnswerHistory,
  BatchItem,
  Cluster,
  DataVersion,
  Dispute,
  DisputeCreateRequest,
  DisputeList,
  NewWatchlist,
  Redelivered,
  ReportCreateRequest,
  ReportReceipt,
  VpaVerdict,
  WatchEventPage,
  WatchVpasAdded,
  WatchVpasRemoved,
  WatchedVpasPage,
  Watchlist,
  WatchlistCreateRequest,
  WatchlistDeleted,
  WatchlistList,
  WatchlistSecret,
} from './wire.js';

/** VPAs per batch request: the spec's limit. */
export const BATCH_REQUEST_SIZE = 100;
/** VPAs per watchlist add or remove request (docs/watchlists.md). */
export const WATCHLIST_REQUEST_SIZE = 1000;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_DEADLINE_MS = 60_000;
export const DEFAULT_BATCH_CONCURRENCY = 4;
/** Hex digits of h(upi) a private lookup sends: 20 bits, a range of about a millionth of all VPAs, its flagged ones listed among padding. */
export const RANGE_PREFIX_DIGITS = 5;
/**
 * The most bytes of an answer that grows with the data, a page of up to
 * 1,000 items (an event carries up to 20 delivery attempts) or a cluster
 * with its members; other answers are held to DEFAULT_MAX_ANSWER_BYTES.
 */
export const MAX_LISTING_ANSWER_BYTES = 16 * 1024 * 1024;
/** What an API key may be: printable ASCII, no spaces. A key read from a file with its line break is refused before it is sent. */
const API_KEY_FORM = /^[\x21-\x7e]+$/;

export interface UpiRiskClientOptions {
  /** Where the service is, e.g. `https://risk.example.com` (the `/v1/` paths are added). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** The platform's `fetch` by default. */
  readonly fetch?: FetchLike;
  /** Clock for deadlines and `Retry-After` dates, ms since the epoch (Date.now). */
  readonly now?: () => number;
  /** Waits between retries; must settle when the signal fires (setTimeout). */
  readonly sleep?: Sleep;
  /** Jitter source, [0, 1) (Math.random). */
  readonly random?: () => number;
  /** One attempt's limit, ms (10,000); an attempt past it is retried like a lost answer. */
  readonly timeoutMs?: number;
  /** A call's limit, every attempt and wait included, ms (60,000); per call with `deadlineMs`. */
  readonly deadlineMs?: number;
  /** Batch requests in flight at once for one verifyBatch (4). */
  readonly batchConcurrency?: number;
}

export interface CallOptions {
  /** Aborts the call: an attempt in flight or a wait between attempts ends at once with AbortError. */
  readonly signal?: AbortSignal;
  /** This call's limit, ms from its start, retries included (the client's `deadlineMs` by default). */
  readonly deadlineMs?: number;
}

export interface VerifyOptions extends CallOptions {
  /**
   * Answer exactly as the service answered at this instant (RFC 3339 text,
   * or a Date), for a dispute or an audit: the verdict, `dataVersion` and
   * `dataAsOf` of the state then served. ValidationError for an instant to
   * come or before the history the service keeps.
   */
  readonly asOf?: string | Date;
}

export interface ReportOptions extends CallOptions {
  /** The report's Idempotency-Key, 1 to 255 visible ASCII characters: a new UUID by default. */
  readonly idempotencyKey?: string;
}

export interface PageOptions extends CallOptions {
  /** Items per page, 1 to 1,000 (the service's default is 100). */
  readonly limit?: number;
  /** Where to start: a `next_cursor` of an earlier page. */
  readonly cursor?: string;
}

/** A verdict with what the spec says to log beside it: `requestId`, `dataVersion` (and the verdict's `cluster_id`, `confidence`). */
export interface Screening<V> extends ResponseMeta {
  readonly verdict: V;
}

export type VerifyResult = Screening<VpaVerdict>;

export interface BatchResult {
  /** One per VPA given, in order; each with the request that answered it. */
  readonly results: readonly Screening<BatchItem>[];
  readonly total: number;
  readonly flaggedCount: number;
  readonly clearedCount: number;
  /** Every batch request made, in input order: 100 VPAs each. */
  readonly requests: readonly ResponseMeta[];
}

/** A private lookup's verdict with the answer's headers; `data_version` is the body's, `dataVersion` the header's. */
export type PrivateVerifyResult = PrivateVerdict & ResponseMeta;

export interface ClusterResult extends ResponseMeta {
  readonly cluster: Cluster;
}

export class UpiRiskClient {
  readonly #transport: TransportConfig;
  readonly #deadlineMs: number;
  readonly #batchConcurrency: number;

  constructor(options: UpiRiskClientOptions) {
    this.#transport = transportConfig(options);
    this.#deadlineMs = positive('deadlineMs', options.deadlineMs, DEFAULT_DEADLINE_MS);
    this.#batchConcurrency = positive('batchConcurrency', options.batchConcurrency, DEFAULT_BATCH_CONCURRENCY);
    if (!Number.isInteger(this.#batchConcurrency)) throw new RangeError(`batchConcurrency must be a whole number, got ${this.#batchConcurrency}`);
  }

  /** Single lookup: `GET /v1/verify/upi`. A verdict for another VPA than `upi` (a cache that ignored the query) is a ResponseFormatError. */
  async verify(upi: string, options: VerifyOptions = {}): Promise<VerifyResult> {
    const asOf = asOfText(options.asOf);
    const query = `upi=${encodeURIComponent(text('upi', upi))}${asOf === undefined ? '' : `&as_of=${encodeURIComponent(asOf)}`}`;
    const answer = await this.#send({ method: 'GET', path: `/v1/verify/upi?${query}`, idempotent: true }, this.#scope(options));
    const verdict = toVpaVerdict(answer.body, answer.meta);
    checkAnsweredFor(verdict.upi, upi, 'the verdict', answer.meta);
    return { verdict, ...answer.meta };
  }

  /**
   * Private lookup (k-anonymity): `GET /v1/verify/upi/range/{prefix}` with
   * the first RANGE_PREFIX_DIGITS hex digits of h(upi), SHA-256 of the
   * lower-cased VPA; the VPA and the rest of its hash never leave the
   * caller. The answer lists the flagged VPAs of that range (and padding)
   * by the rest of their hashes: FLAGGED when one is this VPA's, else
   * CLEARED. A VPA outside the grammar is refused here (BadRequestError),
   * since the service never sees it to refuse it.
   */
  async verifyPrivately(upi: string, options: CallOptions = {}): Promise<PrivateVerifyResult> {
    const vpa = checkedVpa(upi);
    const hash = vpaHashHex(vpa);
    const prefix = hash.slice(0, RANGE_PREFIX_DIGITS);
    const answer = await this.#send({ method: 'GET', path: `/v1/verify/upi/range/${prefix}`, idempotent: true }, this.#scope(options));
    return { ...privateVerdictOf(answer.body, vpa, hash, prefix, answer.meta), ...answer.meta };
  }

  /**
   * Batch lookup of any number of VPAs: requests of 100
   * (`POST /v1/verify/upi/batch`), a few at a time, merged in input order,
   * duplicates included. No VPA, no request.
   */
  async verifyBatch(upis: readonly string[], options: VerifyOptions = {}): Promise<BatchResult> {
    if (!Array.isArray(upis)) throw new TypeError('upis must be an array of VPAs');
    upis.forEach((upi, index) => text(`upis[${index}]`, upi));
    const asOf = asOfText(options.asOf);
    const scope = this.#scope(options);
    const chunks = chunksOf(upis, BATCH_REQUEST_SIZE);
    const answers = await mapConcurrently(chunks, this.#batchConcurrency, scope.signal, async (chunk, _, signal) => {
      const answer = await this.#send({ method: 'POST', path: '/v1/verify/upi/batch', body: asOf === undefined ? { upis: chunk } : { upis: chunk, as_of: asOf }, idempotent: true }, { ...scope, signal });
      return { items: batchItemsOf(answer.body, chunk, answer.meta), meta: answer.meta };
    });
    const results = answers.flatMap(({ items, meta }) => items.map((verdict) => ({ verdict, ...meta })));
    const flaggedCount = results.filter((r) => r.verdict.status === 'FLAGGED').length;
    return {
      results,
      total: results.length,
      flaggedCount,
      clearedCount: results.length - flaggedCount,
      requests: answers.map((a) => a.meta),
    };
  }

  /** Cluster lookup: `GET /v1/verify/upi/cluster/{cluster_id}`. */
  async cluster(clusterId: string, options: CallOptions = {}): Promise<ClusterResult> {
    const path = `/v1/verify/upi/cluster/${encodeURIComponent(text('clusterId', clusterId))}`;
    const answer = await this.#send({ method: 'GET', path, idempotent: true, maxBytes: MAX_LISTING_ANSWER_BYTES }, this.#scope(options));
    return { cluster: objectOf(answer.body, 'the cluster', answer.meta) as unknown as Cluster, ...answer.meta };
  }

  /**
   * `GET /v1/data-versions/{version}`: when a data version (the
   * `dataVersion` of an answer, kept with a screening record) was served,
   * and the snapshot and delta position it held. NotFoundError for a
   * version the service never served.
   */
  async dataVersion(version: string, options: CallOptions = {}): Promise<DataVersion> {
    const path = `/v1/data-versions/${encodeURIComponent(text('version', version))}`;
    const body = await this.#json<Partial<DataVersion>>({ method: 'GET', path, idempotent: true }, options);
    if (typeof body.version !== 'string' || typeof body.from !== 'string' || !(typeof body.until === 'string' || body.until === null) || typeof body.snapshot !== 'string' || typeof body.position !== 'number') {
      throw new ResponseFormatError('the data version answer lacks version, from, until, snapshot or position');
    }
    return { version: body.version, from: body.from, until: body.until, snapshot: body.snapshot, position: body.position };
  }

  /**
   * `GET /v1/verify/upi/history`: every change of a VPA's status, risk
   * category, confidence band or cluster, oldest first, with the data
   * version that first served it and why; none for a VPA never seen.
   */
  async history(upi: string, options: CallOptions = {}): Promise<AnswerHistory> {
    const answer = await this.#send({ method: 'GET', path: `/v1/verify/upi/history?upi=${encodeURIComponent(text('upi', upi))}`, idempotent: true, maxBytes: MAX_LISTING_ANSWER_BYTES }, this.#scope(options));
    const body = objectOf(answer.body, 'the history', answer.meta);
    checkAnsweredFor(body.upi, upi, 'the history', answer.meta);
    if (!Array.isArray(body.changes) || !body.changes.every(isAnswerChange)) {
      throw new ResponseFormatError('the history answer lacks its changes, or has one without at, data_version, status, risk_category, confidence, cluster_id or cause', { requestId: answer.meta.requestId });
    }
    return { upi: body.upi as string, changes: body.changes };
  }

  /**
   * `GET /v1/mirror/public-key`: the key that signs the mirror's manifests,
   * base64 of its 32 raw bytes. For reading it once to pin it in
   * configuration: a mirror handed the key from the same connection it
   * syncs over would trust whoever answers that connection.
   */
  async mirrorPublicKey(options: CallOptions = {}): Promise<string> {
    const body = await this.#json<{ public_key?: unknown }>({ method: 'GET', path: '/v1/mirror/public-key', idempotent: true }, options);
    if (typeof body.public_key !== 'string') throw new ResponseFormatError('the public key answer has no public_key string');
    return body.public_key;
  }

  /** `POST /v1/watchlists`. The answer is the only one that shows the webhook secret: keep it. */
  async createWatchlist(request: WatchlistCreateRequest, options: CallOptions = {}): Promise<NewWatchlist> {
    return this.#json({ method: 'POST', path: '/v1/watchlists', body: request, idempotent: false }, options);
  }

  async listWatchlists(options: CallOptions = {}): Promise<Watchlist[]> {
    const { watchlists } = await this.#json<Partial<WatchlistList>>({ method: 'GET', path: '/v1/watchlists', idempotent: true, maxBytes: MAX_LISTING_ANSWER_BYTES }, options);
    if (!Array.isArray(watchlists)) throw new ResponseFormatError('the watchlist listing has no watchlists array');
    return watchlists;
  }

  async getWatchlist(id: string, options: CallOptions = {}): Promise<Watchlist> {
    return this.#json({ method: 'GET', path: watchlistPath(id), idempotent: true }, options);
  }

  /** Events not yet delivered are dropped with it. */
  async deleteWatchlist(id: string, options: CallOptions = {}): Promise<WatchlistDeleted> {
    return this.#json({ method: 'DELETE', path: watchlistPath(id), idempotent: true }, options);
  }

  /**
   * A new webhook secret. The old one signs nothing from now on, or, with
   * `keepPreviousSeconds` (up to a day), signs each delivery beside the new
   * one until `previous_secret_expires_at`, while receivers change over.
   */
  async rotateWatchlistSecret(id: string, options: CallOptions & { readonly keepPreviousSeconds?: number } = {}): Promise<WatchlistSecret> {
    const { keepPreviousSeconds, ...call } = options;
    const path = `${watchlistPath(id)}/secret`;
    // No body at all without it, as the API takes a rotation that keeps nothing.
    if (keepPreviousSeconds === undefined) return this.#json({ method: 'POST', path, idempotent: false }, call);
    return this.#json({ method: 'POST', path, body: { keep_previous_seconds: keepPreviousSeconds }, idempotent: false }, call);
  }

  /** Watch more VPAs, any number: requests of 1,000, one after another. `total` is the watchlist's size after the last. */
  async addToWatchlist(id: string, upis: readonly string[], options: CallOptions = {}): Promise<WatchVpasAdded> {
    const answers = await this.#vpaChanges('PUT', 'added', id, upis, options);
    return { added: sum(answers.map((a) => a.count)), total: answers.at(-1)!.total };
  }

  /** Stop watching VPAs, any number: requests of 1,000, one after another. */
  async removeFromWatchlist(id: string, upis: readonly string[], options: CallOptions = {}): Promise<WatchVpasRemoved> {
    const answers = await this.#vpaChanges('DELETE', 'removed', id, upis, options);
    return { removed: sum(answers.map((a) => a.count)), total: answers.at(-1)!.total };
  }

  /**
   * The watched VPAs with their current verdicts, in VPA order. Awaited: one
   * page. Iterated (`for await`): every page from `cursor` on, each call
   * bounded by `deadlineMs` on its own.
   */
  listWatchlistVpas(id: string, options: PageOptions = {}): PageQuery<WatchedVpasPage> {
    return this.#pages<WatchedVpasPage>(() => `${watchlistPath(id)}/vpas`, options);
  }

  /** The watchlist's events with their delivery state, newest first; paged as listWatchlistVpas. */
  listWatchlistEvents(id: string, options: PageOptions = {}): PageQuery<WatchEventPage> {
    return this.#pages<WatchEventPage>(() => `${watchlistPath(id)}/events`, options);
  }

  /** Deliver an event again from now, whatever its state (202). */
  async redeliverEvent(watchlistId: string, eventId: string, options: CallOptions = {}): Promise<Redelivered> {
    const path = `${watchlistPath(watchlistId)}/events/${encodeURIComponent(text('eventId', eventId))}/redeliver`;
    return this.#json({ method: 'POST', path, idempotent: true }, options);
  }

  /**
   * Dispute a FLAGGED verdict: `POST /v1/disputes` (201). A second open
   * dispute of the VPA by this key rejects with ConflictError, whose
   * `disputeId` is the first; a CLEARED VPA with ValidationError. A dispute
   * answered for another VPA is a ResponseFormatError.
   */
  async dispute(request: DisputeCreateRequest, options: CallOptions = {}): Promise<Dispute> {
    const upi = text('upi', (objectArgument('request', request) as Partial<DisputeCreateRequest>).upi);
    const answer = await this.#send({ method: 'POST', path: '/v1/disputes', body: request, idempotent: false }, this.#scope(options));
    const dispute = objectOf(answer.body, 'the dispute', answer.meta);
    checkAnsweredFor(dispute.upi, upi, 'the dispute', answer.meta);
    return dispute as unknown as Dispute;
  }

  /** A dispute of this key, with its resolution once resolved; another key's rejects with NotFoundError. */
  async getDispute(id: string, options: CallOptions = {}): Promise<Dispute> {
    return this.#json({ method: 'GET', path: `/v1/disputes/${encodeURIComponent(text('dispute id', id))}`, idempotent: true }, options);
  }

  /** This key's disputes, newest first; paged as listWatchlistVpas. */
  listDisputes(options: PageOptions = {}): PageQuery<DisputeList> {
    return this.#pages<DisputeList>(() => '/v1/disputes', options);
  }

  /**
   * Report what happened after a payment: `POST /v1/reports` (202). It
   * changes no verdict by itself: a `false_positive` report of a FLAGGED
   * VPA opens a dispute (see listDisputes), a `confirmed_fraud` one goes to
   * the analysts. Every attempt carries one Idempotency-Key (`idempotencyKey`,
   * a new UUID by default), so a retry after a lost answer is the same
   * report, stored once; pass the key of your own payment record to make a
   * report sent again later the same one too.
   */
  async report(request: ReportCreateRequest, options: ReportOptions = {}): Promise<ReportReceipt> {
    text('upi', (objectArgument('request', request) as Partial<ReportCreateRequest>).upi);
    const idempotencyKey = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    if (typeof idempotencyKey !== 'string' || !/^[!-~]{1,255}$/.test(idempotencyKey)) throw new TypeError('idempotencyKey must be 1 to 255 visible ASCII characters');
    return this.#json({ method: 'POST', path: '/v1/reports', body: request, idempotent: true, idempotencyKey }, options);
  }

  #scope(options: CallOptions): CallScope {
    const deadlineMs = positive('deadlineMs', options.deadlineMs, this.#deadlineMs);
    return { deadline: this.#transport.now() + deadlineMs, signal: options.signal };
  }

  #send(request: ApiRequest, scope: CallScope) {
    return sendWithRetries(this.#transport, request, scope);
  }

  /** A call whose answer is a JSON object, returned as it came. */
  async #json<T>(request: ApiRequest, options: CallOptions): Promise<T> {
    const answer = await this.#send(request, this.#scope(options));
    return objectOf(answer.body, `the answer to ${request.method} ${request.path}`, answer.meta) as T;
  }

  /** The requests of an add (`added`) or remove (`removed`): each answer's count of VPAs changed and the watchlist's size after it. */
  async #vpaChanges(method: 'PUT' | 'DELETE', counted: 'added' | 'removed', id: string, upis: readonly string[], options: CallOptions): Promise<{ count: number; total: number }[]> {
    if (!Array.isArray(upis) || upis.length === 0) throw new RangeError('upis must hold at least one VPA');
    upis.forEach((upi, index) => text(`upis[${index}]`, upi));
    const scope = this.#scope(options);
    const request = (chunk: string[]): ApiRequest => ({ method, path: `${watchlistPath(id)}/vpas`, body: { upis: chunk }, idempotent: true });
    // Array.isArray() above widens upis to any[]: the chunk's type is restated.
    return mapConcurrently(chunksOf(upis, WATCHLIST_REQUEST_SIZE), 1, scope.signal, async (chunk: string[], _, signal) => {
      const answer = await this.#send(request(chunk), { ...scope, signal });
      const fields = objectOf(answer.body, `the answer to ${method} vpas`, answer.meta);
      const count = fields[counted];
      if (!isCount(count) || !isCount(fields.total)) {
        throw new ResponseFormatError(`the answer to ${method} vpas lacks a whole ${counted} or total`, { requestId: answer.meta.requestId });
      }
      return { count, total: fields.total };
    });
  }

  /** Bad arguments reject the page's promise (or the iteration), as every other call's do. */
  #pages<P extends { next_cursor: string | null }>(path: () => string, options: PageOptions): PageQuery<P> {
    return new PageQuery<P>(async (cursor) => {
      if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit >= 1)) {
        throw new RangeError(`limit must be a whole number >= 1, got ${options.limit}`);
      }
      const query = new URLSearchParams();
      if (options.limit !== undefined) query.set('limit', String(options.limit));
      if (cursor !== undefined) query.set('cursor', cursor);
      const search = query.toString();
      return this.#json<P>({ method: 'GET', path: search === '' ? path() : `${path()}?${search}`, idempotent: true, maxBytes: MAX_LISTING_ANSWER_BYTES }, options);
    }, options.cursor);
  }
}

/** The transport of a client (or mirror) with these options; a bad option is a TypeError or RangeError naming it. */
export function transportConfig(options: UpiRiskClientOptions): TransportConfig {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object with baseUrl and apiKey');
  if (typeof options.baseUrl !== 'string' || !URL.canParse(options.baseUrl)) {
    throw new TypeError(`baseUrl must be an absolute URL, got ${String(options.baseUrl)}`);
  }
  // The message never quotes the key.
  if (typeof options.apiKey !== 'string' || !API_KEY_FORM.test(options.apiKey)) {
    throw new TypeError('apiKey must be a non-empty string of printable ASCII, with no spaces, line breaks or other control characters');
  }
  const fetch = options.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof fetch !== 'function') throw new TypeError('fetch: this platform has none; pass one');
  return {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    apiKey: options.apiKey,
    // Called unbound: the platform's fetch throws when called as a method of another object.
    fetch: (url, init) => fetch(url, init),
    now: options.now ?? Date.now,
    sleep: options.sleep ?? timerSleep,
    random: options.random ?? Math.random,
    timeoutMs: positive('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS),
  };
}

function watchlistPath(id: string): string {
  return `/v1/watchlists/${encodeURIComponent(text('watchlist id', id))}`;
}

function text(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  return value;
}

function objectArgument(name: string, value: unknown): object {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${name} must be an object, got ${JSON.stringify(value)}`);
  return value;
}

export function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && value > 0 && Number.isFinite(value))) throw new RangeError(`${name} must be a positive number of ms, got ${String(value)}`);
  return value;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** A change of a history answer, field by field (the cause is kept as sent: a newer server may add causes). */
function isAnswerChange(value: unknown): value is AnswerChange {
  if (value === null || typeof value !== 'object') return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.at === 'string' &&
    typeof c.data_version === 'string' &&
    (c.status === 'FLAGGED' || c.status === 'CLEARED') &&
    (c.risk_category === null || typeof c.risk_category === 'string') &&
    (c.confidence === null || typeof c.confidence === 'number') &&
    (c.cluster_id === null || typeof c.cluster_id === 'string') &&
    typeof c.cause === 'string'
  );
}

/** `asOf` as the request carries it: a Date as RFC 3339 in UTC, text as given (the service checks it). */
function asOfText(asOf: string | Date | undefined): string | undefined {
  if (asOf === undefined) return undefined;
  if (asOf instanceof Date) {
    if (Number.isNaN(asOf.getTime())) throw new RangeError('asOf is an invalid Date');
    return asOf.toISOString();
  }
  return text('asOf', asOf);
}
