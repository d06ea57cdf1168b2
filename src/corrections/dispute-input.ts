import {
  DISPUTE_REASONS,
  DISPUTE_STATUSES,
  MAX_DETAILS_LENGTH,
  MAX_REFERENCE_LENGTH,
  MAX_RETRACT_IDS,
  REPORT_OUTCOMES,
  REPORT_STATUSES,
  type DisputeReason,
  type ReportOutcome,
} from '../api/dispute-schemas.js';
import { badRequest, validationError } from '../api/http-error.js';
import { parseIsoWithZone } from '../common/time.js';
import { RISK_CATEGORIES, type RiskCategory } from '../vpa/categories.js';
import { describeInvalidVpa, isValidVpa, normalizeVpa } from '../vpa/vpa.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH, isDisputeId, isIdempotencyKey, isReportId } from './dispute-records.js';
import { hasControlCharacter, hasLoneSurrogate, isStorableText } from '../common/control-characters.js';

/**
 * What the dispute and report routes read from a request, checked: the
 * rule of docs/api.md is 422 validation_error for a body of the wrong
 * shape (an unknown field, a field missing or of the wrong type or value)
 * and 400 bad_request for a VPA that is not one and for a malformed id,
 * cursor or status in the path or query.
 */

/** How far in the future a report's `occurred_at` may be (clocks differ). */
const OCCURRED_AT_SKEW_MS = 5 * 60_000;

export interface DisputeInput {
  readonly upi: string;
  readonly reason: DisputeReason;
  readonly details: string;
  readonly reference: string | null;
}

export interface ResolutionInput {
  readonly outcome: 'upheld' | 'rejected';
  readonly note: string;
  /** Evidence ids to retract instead of clearing the VPA; null: clear it. */
  readonly retract: readonly string[] | null;
}

export interface ReportInput {
  readonly upi: string;
  readonly outcome: ReportOutcome;
  readonly risk_category: RiskCategory | null;
  /** RFC 3339, UTC. */
  readonly occurred_at: string | null;
  readonly reference: string | null;
}

export function disputeInput(body: unknown): DisputeInput {
  const b = fieldsOf(body, ['upi', 'reason', 'details', 'reference']);
  const upi = vpaOf(b.upi);
  const reason = oneOf(b.reason, 'reason', DISPUTE_REASONS);
  if (typeof b.details !== 'string' || b.details.length > MAX_DETAILS_LENGTH || !isStorableText(b.details)) {
    throw validationError(`"details" must be a string of at most ${MAX_DETAILS_LENGTH.toLocaleString('en')} characters, without control characters but tabs and line breaks`);
  }
  return { upi, reason, details: b.details, reference: referenceOf(b.reference) };
}

export function resolutionInput(body: unknown): ResolutionInput {
  const b = fieldsOf(body, ['outcome', 'note', 'retract']);
  const outcome = oneOf(b.outcome, 'outcome', ['upheld', 'rejected'] as const);
  const note = noteOf(b.note);
  if (note === null) throw validationError('"note" is required: say why');
  if (b.retract === undefined || b.retract === null) return { outcome, note, retract: null };
  if (outcome !== 'upheld') throw validationError('"retract" goes with "outcome": "upheld" only');
  const ids = b.retract;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_RETRACT_IDS || ids.some((id) => typeof id !== 'string' || id === '')) {
    throw validationError(`"retract" must be a list of 1 to ${MAX_RETRACT_IDS} evidence ids`);
  }
  return { outcome, note, retract: [...new Set(ids as string[])] };
}

export function reportInput(body: unknown, now: number): ReportInput {
  const b = fieldsOf(body, ['upi', 'outcome', 'risk_category', 'occurred_at', 'reference']);
  const upi = vpaOf(b.upi);
  const outcome = oneOf(b.outcome, 'outcome', REPORT_OUTCOMES);
  const risk = b.risk_category === undefined || b.risk_category === null ? null : oneOf(b.risk_category, 'risk_category', RISK_CATEGORIES);
  let occurredAt: string | null = null;
  if (b.occurred_at !== undefined && b.occurred_at !== null) {
    const at = typeof b.occurred_at === 'string' ? parseIsoWithZone(b.occurred_at) : NaN;
    if (Number.isNaN(at)) throw validationError('"occurred_at" must be an ISO 8601 timestamp with a zone');
    if (at > now + OCCURRED_AT_SKEW_MS) throw validationError('"occurred_at" is in the future');
    occurredAt = new Date(at).toISOString();
  }
  return { upi, outcome, risk_category: risk, occurred_at: occurredAt, reference: referenceOf(b.reference) };
}

/** The body of an accept or a dismissal: an optional `note`. */
export function decisionNote(body: unknown): string | null {
  return noteOf(fieldsOf(body, ['note']).note);
}

export function disputeIdOf(id: string): string {
  if (!isDisputeId(id)) throw badRequest(`${JSON.stringify(id.slice(0, 80))} is not a dispute id (dsp_ and 28 hex digits)`);
  return id;
}

export function reportIdOf(id: string): string {
  if (!isReportId(id)) throw badRequest(`${JSON.stringify(id.slice(0, 80))} is not a report id (rep_ and 28 hex digits)`);
  return id;
}

/** A request's Idempotency-Key header ('' when it sent none: null). */
export function idempotencyKeyOf(header: string): string | null {
  if (header === '') return null;
  if (!isIdempotencyKey(header)) throw badRequest(`the Idempotency-Key header must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (a UUID, for instance)`);
  return header;
}

/** A listing's cursor: an id of the listing's kind, from the page before. */
export function cursorOf(cursor: string | null, kind: 'dispute' | 'report'): string | null {
  if (cursor === null) return null;
  if (!(kind === 'dispute' ? isDisputeId(cursor) : isReportId(cursor))) throw badRequest(`"cursor" is not a next_cursor of this listing`);
  return cursor;
}

/** A listing's `status` query: one of `statuses`, or null for any. */
export function statusOf(status: string | null, kind: 'dispute' | 'report'): string | null {
  const statuses: readonly string[] = kind === 'dispute' ? DISPUTE_STATUSES : REPORT_STATUSES;
  if (status === null || status === '') return null;
  if (!statuses.includes(status)) throw badRequest(`"status" must be one of ${statuses.join(', ')}`);
  return status;
}

/** A body's fields, refusing any but `allowed` (a misspelt field would otherwise be ignored in silence). */
function fieldsOf(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !allowed.includes(k));
  if (unknown !== undefined) throw validationError(`unknown field ${JSON.stringify(unknown)}; the fields are ${allowed.join(', ')}`);
  return b;
}

function vpaOf(value: unknown): string {
  if (typeof value !== 'string') throw validationError('"upi" must be a string, handle@provider');
  if (!isValidVpa(value)) throw badRequest(`"upi" is not a valid VPA: ${describeInvalidVpa(value) ?? 'must have the form handle@provider'}`);
  return normalizeVpa(value);
}

function oneOf<T extends string>(value: unknown, name: string, values: readonly T[]): T {
  if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) throw validationError(`"${name}" must be one of ${values.join(', ')}`);
  return value as T;
}

function referenceOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value === '' || value.length > MAX_REFERENCE_LENGTH || hasControlCharacter(value) || hasLoneSurrogate(value)) {
    throw validationError(`"reference" must be a string of 1 to ${MAX_REFERENCE_LENGTH} characters without control characters`);
  }
  return value;
}

function noteOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_DETAILS_LENGTH || !isStorableText(value)) {
    throw validationError(`"note" must be a string of 1 to ${MAX_DETAILS_LENGTH.toLocaleString('en')} characters, without control characters but tabs and line breaks`);
  }
  return value;
}
