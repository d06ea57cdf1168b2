/**
 * @upi-risk/client: the TypeScript client of the upi-risk v1 API. No
 * runtime dependencies: the platform's fetch, AbortSignal and Web Crypto
 * (and node:fs, loaded only for a mirror's directory). docs/client.md
 * describes it.
 */
export {
  UpiRiskClient,
  BATCH_REQUEST_SIZE,
  WATCHLIST_REQUEST_SIZE,
  DEFAULT_BATCH_CONCURRENCY,
  DEFAULT_DEADLINE_MS,
  DEFAULT_TIMEOUT_MS,
  MAX_LISTING_ANSWER_BYTES,
  RANGE_PREFIX_DIGITS,
  type BatchResult,
  type CallOptions,
  type VerifyOptions,
  type ClusterResult,
  type PageOptions,
  type PrivateVerifyResult,
  type ReportOptions,
  type Screening,
  type UpiRiskClientOptions,
  type VerifyResult,
} from './client.js';
export type { PrivateVerdict } from './verdicts.js';
export {
  UpiRiskMirror,
  DEFAULT_DOWNLOAD_TIMEOUT_MS,
  DEFAULT_SYNC_DEADLINE_MS,
  type MirrorBand,
  type MirrorCheck,
  type MirrorRiskCategory,
  type MirrorSyncResult,
  type MirrorVerifyResult,
  type UpiRiskMirrorOptions,
} from './mirror.js';
export { MIRROR_BANDS, MIRROR_RISK_CATEGORIES, type MirrorManifest } from './mirror-format.js';
export { DEFAULT_MAX_ANSWER_BYTES, MAX_ERROR_BODY_BYTES, type FetchInit, type FetchLike, type FetchResponse, type ResponseMeta } from './transport.js';
export type { Sleep } from './abort.js';
export { PageQuery, type Page } from './page-query.js';
export {
  FAILURE_DELAYS_MS,
  MIN_ATTEMPT_MS,
  RATE_LIMIT_FIRST_DELAY_MS,
  RATE_LIMIT_JITTER_MS,
  RATE_LIMIT_MAX_DELAY_MS,
} from './retry-schedule.js';
export {
  BAND_LABELS,
  CONFIDENCE_BANDS,
  HIGH_BAND_FLOOR,
  MEDIUM_BAND_FLOOR,
  adviceText,
  confidenceBand,
  recommendedAction,
  type AdviceFlow,
  type AdvisedVerdict,
  type ConfidenceBand,
  type OnboardingAction,
  type PaymentAction,
} from './advice.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  signWebhook,
  verifyWebhook,
  type RawBody,
  type VerifyWebhookOptions,
} from './webhook.js';
export {
  AbortError,
  ApiError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InternalError,
  MirrorChecksumError,
  MirrorError,
  MirrorFileError,
  MirrorNotReadyError,
  MirrorReplayError,
  MirrorSignatureError,
  MirrorStorageError,
  NetworkError,
  NotFoundError,
  RateLimitError,
  ResponseFormatError,
  ServiceUnavailableError,
  TimeoutError,
  UnauthorizedError,
  UpiRiskError,
  ValidationError,
  WebhookSignatureError,
  type ErrorDetails,
  type MirrorFileProblem,
  type WebhookRefusal,
} from './errors.js';
export type * from './wire.js';
