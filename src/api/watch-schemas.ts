import { Type, type TSchema } from '@sinclair/typebox';
import { BatchItemSchema, Count, Nullable, RiskCategorySchema, Timestamp, strict } from './schemas.js';

/**
 * JSON Schemas of the watchlist routes and of the webhook events
 * (docs/watchlists.md), for the OpenAPI document and the contract tests.
 */
const Status = Type.Union([Type.Literal('FLAGGED'), Type.Literal('CLEARED')]);

export const WatchFiltersSchema = Type.Object(
  { statuses: Type.Optional(Type.Array(Status, { minItems: 1 })), risk_categories: Type.Optional(Type.Array(RiskCategorySchema, { minItems: 1 })) },
  { additionalProperties: false, description: 'Which changes make events, judged by the verdict after the change' },
);

export const WatchlistCreateRequestSchema = strict(
  { name: Type.String({ minLength: 1, maxLength: 200 }), webhook_url: Type.String({ description: 'https; see Safe targets' }), filters: Type.Optional(WatchFiltersSchema) },
  'WatchlistCreateRequest',
);

const watchlistFields = {
  id: Type.String({ pattern: '^wl_[0-9a-f]{16}$' }),
  name: Type.String(),
  webhook_url: Type.String(),
  filters: WatchFiltersSchema,
  created_at: Timestamp,
  vpa_count: Count,
};
export const WatchlistSchema = strict(watchlistFields, 'Watchlist');
export const NewWatchlistSchema = strict({ ...watchlistFields, secret: Type.String({ description: 'signs every delivery; shown only here and on rotation' }) }, 'NewWatchlist');
export const WatchlistListSchema = strict({ watchlists: Type.Array(WatchlistSchema) }, 'WatchlistList');
export const AdminWatchlistSchema = strict(
  { ...watchlistFields, owner: Type.String({ description: 'the id of the key the watchlist belongs to' }) },
  'AdminWatchlist',
  'A watchlist as the admin view shows it, naming its key',
);
export const AdminWatchlistListSchema = strict(
  { watchlists: Type.Array(AdminWatchlistSchema), next_cursor: Nullable(Type.String()) },
  'AdminWatchlistList',
  "Every key's watchlists in id order, a page at a time (GET /v1/admin/watchlists); pass next_cursor as cursor for the next page",
);
/** How long a rotation may keep a watchlist's previous secret signing: a day, as long as a delivery is retried. */
export const MAX_KEEP_PREVIOUS_SECONDS = 24 * 60 * 60;

export const WatchlistSecretSchema = strict(
  {
    secret: Type.String({ description: 'signs every delivery from now on; shown only here' }),
    previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], { description: 'until when the previous secret also signs each delivery (a second v1), or null when it signs nothing from now on' }),
  },
  'WatchlistSecret',
);
export const WatchlistSecretRequestSchema = strict(
  {
    keep_previous_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_KEEP_PREVIOUS_SECONDS, description: 'how long the previous secret goes on signing beside the new one, while receivers change over; 0 (the default): not at all' }),
    ),
  },
  'WatchlistSecretRequest',
);
export const WatchlistDeletedSchema = strict({ deleted: Type.Literal(true) }, 'WatchlistDeleted');
export const WatchVpasRequestSchema = strict({ upis: Type.Array(Type.String(), { minItems: 1, maxItems: 1000 }) }, 'WatchVpasRequest');
export const WatchVpasAddedSchema = strict({ added: Count, total: Count }, 'WatchVpasAdded');
export const WatchVpasRemovedSchema = strict({ removed: Count, total: Count }, 'WatchVpasRemoved');
export const WatchedVpasPageSchema = strict(
  { vpas: Type.Array(BatchItemSchema), next_cursor: Nullable(Type.String()), data_version: Type.String() },
  'WatchedVpasPage',
  "Watched VPAs in VPA order, each with its verdict now; pass next_cursor as cursor for the next page",
);

const eventFields = {
  id: Type.String({ pattern: '^evt_[0-9a-f]{28}$', description: 'stable: a redelivery carries the same id' }),
  type: Type.Literal('vpa.changed'),
  watchlist_id: Type.String(),
  upi: Type.String(),
  before: BatchItemSchema,
  after: BatchItemSchema,
  data_version: Type.String({ description: 'the intelligence that made the change (X-Data-Version)' }),
  occurred_at: Timestamp,
};
export const WatchEventSchema = strict(eventFields, 'WatchEvent', 'The body of a webhook delivery');
export const WatchEventWithDeliverySchema = strict(
  {
    ...eventFields,
    delivery: Type.Object(
      {
        state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
        attempts: Type.Array(
          Type.Object({ at: Timestamp, status: Nullable(Type.Integer()), error: Nullable(Type.String()), duration_ms: Count }, { additionalProperties: false }),
          { maxItems: 20 },
        ),
        next_attempt_at: Nullable(Timestamp),
      },
      { additionalProperties: false },
    ),
  },
  'WatchEventWithDelivery',
);
export const WatchEventPageSchema = strict({ events: Type.Array(WatchEventWithDeliverySchema), next_cursor: Nullable(Type.String()) }, 'WatchEventPage');
export const RedeliveredSchema = strict({ event: WatchEventWithDeliverySchema }, 'Redelivered');

export const WATCH_SCHEMAS: Readonly<Record<string, TSchema>> = Object.fromEntries(
  [
    WatchlistCreateRequestSchema,
    WatchlistSchema,
    NewWatchlistSchema,
    WatchlistListSchema,
    AdminWatchlistSchema,
    AdminWatchlistListSchema,
    WatchlistSecretSchema,
    WatchlistSecretRequestSchema,
    WatchlistDeletedSchema,
    WatchVpasRequestSchema,
    WatchVpasAddedSchema,
    WatchVpasRemovedSchema,
    WatchedVpasPageSchema,
    WatchEventSchema,
    WatchEventWithDeliverySchema,
    WatchEventPageSchema,
    RedeliveredSchema,
  ].map((s) => [s.$id!, s]),
);
