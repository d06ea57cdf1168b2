import { randomBytes } from 'node:crypto';
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { AdminDisputeSchema, ReportSchema } from '../api/dispute-schemas.js';

/**
 * Disputes and reports as they are stored (a journal line's record, a
 * table row's `record`): exactly the analysts' view of each
 * (AdminDispute, Report), checked against that schema whenever read back.
 */
export type Dispute = Static<typeof AdminDisputeSchema>;
export type Report = Static<typeof ReportSchema>;

/** What the store holds of either: owned by the key that made it, paged by id. */
export interface OwnedRecord {
  readonly id: string;
  readonly owner: string;
  readonly status: string;
}

/** `dsp_` and 28 hex digits: the time in ms (12), so ids sort by time, and 64 random bits. */
export function newDisputeId(now: number): string {
  return `dsp_${timePrefixedHex(now)}`;
}

export function newReportId(now: number): string {
  return `rep_${timePrefixedHex(now)}`;
}

function timePrefixedHex(now: number): string {
  return `${Math.max(0, Math.floor(now)).toString(16).padStart(12, '0').slice(-12)}${randomBytes(8).toString('hex')}`;
}

export const isDisputeId = (id: string): boolean => /^dsp_[0-9a-f]{28}$/.test(id);
export const isReportId = (id: string): boolean => /^rep_[0-9a-f]{28}$/.test(id);

/** The most characters of an Idempotency-Key (docs/api.md, Reports). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** An Idempotency-Key: 1 to 255 visible ASCII characters (a UUID is one). */
const IDEMPOTENCY_KEY = new RegExp(`^[!-~]{1,${MAX_IDEMPOTENCY_KEY_LENGTH}}$`);
export const isIdempotencyKey = (key: string): boolean => IDEMPOTENCY_KEY.test(key);

/** The dispute as the key that opened it sees it (GET /v1/disputes/{id}). */
export function publicDispute(d: Dispute): Record<string, unknown> {
  return {
    id: d.id,
    upi: d.upi,
    status: d.status,
    reason: d.reason,
    details: d.details,
    reference: d.reference,
    created_at: d.created_at,
    resolved_at: d.resolved_at,
    resolution_note: d.resolution_note,
  };
}

/** A stored record checked against its schema; throws what `fail` makes, naming the first mismatch. */
function reader<S extends TSchema>(schema: S): (value: unknown, fail: (why: string) => Error) => Static<S> {
  const checker = TypeCompiler.Compile(schema);
  return (value, fail) => {
    if (checker.Check(value)) return value;
    const first = checker.Errors(value).First();
    throw fail(first === undefined ? `not a ${String(schema.$id)}` : `not a ${String(schema.$id)}: ${first.path || '/'} ${first.message}`);
  };
}

export const readDispute: (value: unknown, fail: (why: string) => Error) => Dispute = reader(AdminDisputeSchema);
export const readReport: (value: unknown, fail: (why: string) => Error) => Report = reader(ReportSchema);
