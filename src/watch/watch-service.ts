import { MAX_WATCHED_PER_KEY, MAX_WATCHLISTS_PER_KEY, answerAlways, type AdminAnswer, type WatchRequest } from '../api/admin-requests.js';
import { badRequest, conflict, notFound, validationError } from '../api/http-error.js';
import { MAX_KEEP_PREVIOUS_SECONDS } from '../api/watch-schemas.js';
import type { Logger } from '../common/logger.js';
import type { ServedData } from '../service/served-data.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import { isValidVpa, normalizeVpa } from '../vpa/vpa.js';
import type { WatchStore } from './watch-store.js';
import {
  MAX_VPAS_PER_CALL,
  MAX_WATCHLIST_NAME,
  newSecret,
  newWatchlistId,
  publicEvent,
  publicWatchlist,
  stateOf,
  type WatchFilters,
  type Watchlist,
} from './watchlist.js';
import { UnsafeTargetError, checkWebhookUrl, resolveTarget } from './webhook-target.js';

const CREATE_FIELDS = new Set(['name', 'webhook_url', 'filters']);

/** The body of a rotation: how long the previous secret goes on signing beside the new one (0, the default: not at all). */
function keepPreviousSeconds(body: unknown): number {
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => k !== 'keep_previous_seconds');
  if (unknown !== undefined) throw validationError(`unknown field ${JSON.stringify(unknown)}; the one field is keep_previous_seconds`);
  const keep = Object.hasOwn(b, 'keep_previous_seconds') ? b.keep_previous_seconds : 0;
  if (!Number.isSafeInteger(keep) || (keep as number) < 0 || (keep as number) > MAX_KEEP_PREVIOUS_SECONDS) {
    throw validationError(`"keep_previous_seconds" must be a whole number of seconds from 0 to ${MAX_KEEP_PREVIOUS_SECONDS}`);
  }
  return keep as number;
}

/**
 * The main thread's side of the watchlist routes (docs/watchlists.md): a
 * watchlist is its creator key's, and every other key is told it does not
 * exist. An answer is always given.
 */
export class WatchService {
  readonly #store: WatchStore;
  readonly #served: ServedData;
  readonly #wake: () => void;
  readonly #allowed: ReadonlySet<string>;
  readonly #logger: Logger;

  /** `wake`: tell the deliverer (where it runs) an event is due. */
  constructor(options: { store: WatchStore; served: ServedData; wake: () => void; allowed: ReadonlySet<string>; logger: Logger }) {
    this.#store = options.store;
    this.#served = options.served;
    this.#wake = options.wake;
    this.#allowed = options.allowed;
    this.#logger = options.logger;
  }

  handle(request: WatchRequest): Promise<AdminAnswer> {
    return answerAlways(
      () => this.#answer(request),
      (error) => this.#logger.error({ op: request.op, err: error.message }, 'watchlist request failed'),
    );
  }

  async #answer(request: WatchRequest): Promise<AdminAnswer> {
    const owner = request.key.id;
    // What another replica acknowledged before this request came is seen by it.
    await this.#store.sync();
    switch (request.op) {
      case 'watch.create': {
        if (this.#store.list(owner).length >= MAX_WATCHLISTS_PER_KEY) {
          throw validationError(`a key holds at most ${MAX_WATCHLISTS_PER_KEY} watchlists; delete one to make another`);
        }
        const watchlist = await this.#creation(request.body, owner);
        await this.#store.create(watchlist);
        return { status: 201, body: JSON.stringify({ ...publicWatchlist(watchlist, 0), secret: watchlist.secret }) };
      }
      case 'watch.list':
        return ok({ watchlists: this.#store.list(owner).map((w) => publicWatchlist(w, this.#store.vpaCount(w.id))) });
      case 'watch.list.all': {
        // Every key's, in id order after the cursor; the admin view names each watchlist's key.
        const after = this.#store
          .list(null)
          .filter((w) => request.cursor === null || w.id > request.cursor)
          .sort((a, b) => (a.id < b.id ? -1 : 1));
        const lists = after.slice(0, request.limit);
        return ok({ watchlists: lists.map((w) => this.#ownedWatchlist(w)), next_cursor: after.length > request.limit ? lists.at(-1)!.id : null });
      }
      case 'watch.get': {
        const w = await this.#own(owner, request.id, request.anyOwner);
        return ok(request.anyOwner === true ? this.#ownedWatchlist(w) : publicWatchlist(w, this.#store.vpaCount(w.id)));
      }
      case 'watch.delete':
        await this.#store.remove((await this.#own(owner, request.id)).id);
        return ok({ deleted: true });
      case 'watch.secret': {
        const keep = keepPreviousSeconds(request.body);
        // The secret in force now, another replica's rotations included.
        await this.#store.sync();
        const w = await this.#own(owner, request.id);
        const secret = newSecret();
        const previous = keep === 0 ? undefined : { secret: w.secret, until: Date.now() + keep * 1000 };
        await this.#store.setSecret(w.id, secret, w.secret, previous);
        // Another replica's rotation of the same watchlist was written first: this one changed nothing.
        if (this.#store.get(w.id)?.secret !== secret) throw conflict('the watchlist was rotated again at the same time, by another request; rotate again');
        return ok({ secret, previous_secret_expires_at: previous === undefined ? null : new Date(previous.until).toISOString() });
      }
      case 'watch.add': {
        const w = await this.#own(owner, request.id);
        const view = this.#served.view;
        // Watched from the verdict served now: events are for what changes after.
        const entries = vpasOf(request.body).map((upi) => [upi, stateOf(view.batchItem(upi))] as const);
        const elsewhere = this.#store.list(owner).reduce((sum, other) => sum + (other.id === w.id ? 0 : this.#store.vpaCount(other.id)), 0);
        const added = await this.#store.addVpas(w.id, entries, MAX_WATCHED_PER_KEY - elsewhere);
        if (added === null) throw validationError(`a key watches at most ${MAX_WATCHED_PER_KEY.toLocaleString('en')} VPAs over all its watchlists; none of these were added`);
        return ok(added);
      }
      case 'watch.remove':
        return ok(await this.#store.removeVpas((await this.#own(owner, request.id)).id, vpasOf(request.body)));
      case 'watch.vpas': {
        const w = await this.#own(owner, request.id, request.anyOwner);
        const page = this.#store.pageVpas(w.id, request.cursor, request.limit);
        const view = this.#served.view;
        return ok({ vpas: page.upis.map((upi) => view.batchItem(upi)), next_cursor: page.next, data_version: view.version });
      }
      case 'watch.events': {
        const w = await this.#own(owner, request.id, request.anyOwner);
        const page = this.#store.events(w.id, request.cursor, request.limit);
        return ok({ events: page.events.map(publicEvent), next_cursor: page.next });
      }
      case 'watch.redeliver': {
        const w = await this.#own(owner, request.id);
        const stored = this.#store.findEvent(w.id, request.eventId);
        if (stored === null) throw notFound(`no event ${JSON.stringify(request.eventId)} in watchlist ${w.id}`);
        const now = Date.now();
        // A run of its own: as many attempts, over as long, as a new event gets.
        await this.#store.attempted(stored.event.id, { state: 'pending', attempts: stored.delivery.attempts, nextAttemptAt: now, since: now });
        this.#wake();
        return { status: 202, body: JSON.stringify({ event: publicEvent(this.#store.findEvent(w.id, request.eventId)!) }) };
      }
    }
  }

  /** A watchlist as the admin view shows it: with `owner`, the id of its key. */
  #ownedWatchlist(w: Watchlist): ReturnType<typeof publicWatchlist> & { owner: string } {
    return { ...publicWatchlist(w, this.#store.vpaCount(w.id)), owner: w.owner };
  }

  async #own(owner: string, id: string, anyOwner = false): Promise<Watchlist> {
    const w = anyOwner ? this.#store.get(id) : this.#store.find(owner, id);
    // Another key's watchlist is answered as one that does not exist: its existence is not told.
    if (w === null) throw notFound(`no watchlist ${JSON.stringify(id)}`);
    return w;
  }

  async #creation(body: unknown, owner: string): Promise<Watchlist> {
    const b = body as Record<string, unknown>;
    const unknown = Object.keys(b).find((k) => !CREATE_FIELDS.has(k));
    if (unknown !== undefined) throw validationError(`unknown field ${JSON.stringify(unknown)}; the fields are name, webhook_url, filters`);
    if (typeof b.name !== 'string' || b.name.trim() === '' || b.name.length > MAX_WATCHLIST_NAME) throw validationError(`"name" must be a string of 1 to ${MAX_WATCHLIST_NAME} characters`);
    if (typeof b.webhook_url !== 'string') throw validationError('"webhook_url" must be a string');
    try {
      await resolveTarget(checkWebhookUrl(b.webhook_url, this.#allowed), this.#allowed);
    } catch (error) {
      if (error instanceof UnsafeTargetError) throw badRequest(error.message);
      throw error;
    }
    return {
      id: newWatchlistId(),
      owner,
      name: b.name.trim(),
      webhook_url: b.webhook_url,
      filters: filtersOf(b.filters),
      secret: newSecret(),
      created_at: new Date().toISOString(),
    };
  }
}

function ok(value: unknown): AdminAnswer {
  return { status: 200, body: JSON.stringify(value) };
}

function filtersOf(value: unknown): WatchFilters {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw validationError('"filters" must be an object');
  const f = value as Record<string, unknown>;
  const unknown = Object.keys(f).find((k) => k !== 'statuses' && k !== 'risk_categories');
  if (unknown !== undefined) throw validationError(`unknown filter ${JSON.stringify(unknown)}; the filters are statuses, risk_categories`);
  const filters: { statuses?: ('FLAGGED' | 'CLEARED')[]; risk_categories?: (typeof RISK_CATEGORIES)[number][] } = {};
  if (f.statuses !== undefined) {
    if (!Array.isArray(f.statuses) || f.statuses.length === 0 || f.statuses.some((s) => s !== 'FLAGGED' && s !== 'CLEARED')) throw validationError('"filters.statuses" must be a list of FLAGGED and CLEARED');
    filters.statuses = [...new Set(f.statuses as ('FLAGGED' | 'CLEARED')[])];
  }
  if (f.risk_categories !== undefined) {
    const c = f.risk_categories;
    if (!Array.isArray(c) || c.length === 0 || c.some((x) => !(RISK_CATEGORIES as readonly unknown[]).includes(x))) {
      throw validationError(`"filters.risk_categories" must be a list from ${RISK_CATEGORIES.join(', ')}`);
    }
    filters.risk_categories = [...new Set(c as (typeof RISK_CATEGORIES)[number][])];
  }
  return filters;
}

/** The `upis` of a body: 1 to MAX_VPAS_PER_CALL valid VPAs, lower-cased (lookups ignore case, so watching does). */
function vpasOf(body: unknown): string[] {
  const upis = (body as Record<string, unknown>).upis;
  const unknown = Object.keys(body as object).find((k) => k !== 'upis');
  if (unknown !== undefined) throw validationError(`unknown field ${JSON.stringify(unknown)}; the body is {"upis": [...]}`);
  if (!Array.isArray(upis) || upis.length === 0 || upis.length > MAX_VPAS_PER_CALL) throw badRequest(`"upis" must be a list of 1 to ${MAX_VPAS_PER_CALL} VPAs`);
  const bad = upis.findIndex((u) => typeof u !== 'string' || !isValidVpa(u));
  if (bad >= 0) throw badRequest(`"upis[${bad}]" is not a valid VPA (handle@provider)`);
  return [...new Set((upis as string[]).map(normalizeVpa))];
}
