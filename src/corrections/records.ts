import { randomBytes } from 'node:crypto';
import { CLEARANCE_ID_PATTERN, EVIDENCE_ID_MAX_LENGTH, MAX_CLEARANCE_REFERENCE, MAX_CORRECTION_REASON, MAX_RETRACTION_IDS } from '../api/admin-schemas.js';
import { isValidVpa, normalizeVpa } from '../vpa/vpa.js';
import { hasControlCharacter, isStorableText } from '../common/control-characters.js';

/**
 * The lines of the corrections journal (state/corrections.ndjson), one
 * complete record each. Every line is checked when it is read: a journal
 * is the only record of the corrections it holds, so a line this service
 * would not write is refused, never guessed at.
 *
 *   {"type":"retraction","id":"ret_…","evidence":[{"id","upi"}],"reason","by","at"}
 *   {"type":"clearance","id":"clr_…","upi","reason","reference","urls":[…],"by","at"}
 *   {"type":"clearance_end","id":"clr_…","reason","by","at"}
 *
 * `by` is the id of the key that made the change, or `cli`; `at` is when,
 * RFC 3339 with milliseconds.
 */
export type CorrectionRecord = RetractionRecord | ClearanceMade | ClearanceEnded;

/** Evidence retracted: only ids that named stored evidence and were not retracted before. */
export interface RetractionRecord {
  readonly type: 'retraction';
  readonly id: string;
  /** Each id with the (canonical) VPA its evidence names. */
  readonly evidence: readonly RetractedItem[];
  readonly reason: string;
  readonly by: string;
  readonly at: string;
}

export interface RetractedItem {
  readonly id: string;
  readonly upi: string;
}

/** A clearance made, with its VPA's source urls of that moment: what it suppresses must not change when the journal is read again. */
export interface ClearanceMade {
  readonly type: 'clearance';
  readonly id: string;
  readonly upi: string;
  readonly reason: string;
  readonly reference: string | null;
  readonly urls: readonly string[];
  readonly by: string;
  readonly at: string;
}

/** A clearance ended: the evidence it suppressed counts again. */
export interface ClearanceEnded {
  readonly type: 'clearance_end';
  readonly id: string;
  readonly reason: string | null;
  readonly by: string;
  readonly at: string;
}

/** Who made a change: a key id, or `cli`. */
export const CLI_BY = 'cli';

const RETRACTION_ID = /^ret_[0-9a-f]{16}$/;
const CLEARANCE_ID = new RegExp(CLEARANCE_ID_PATTERN);
const KEY_OR_CLI = /^(?:key_[0-9a-f]{12}|cli)$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function newRetractionId(): string {
  return `ret_${randomBytes(8).toString('hex')}`;
}

export function newClearanceId(): string {
  return `clr_${randomBytes(8).toString('hex')}`;
}

/** Whether `id` can be an evidence id (the ingestion contract: 1 to 256 characters, no control characters). */
export function isEvidenceId(id: string): boolean {
  return id.length > 0 && id.length <= EVIDENCE_ID_MAX_LENGTH && !hasControlCharacter(id);
}

/** Whether `reason` is one a correction may carry: 1 to 500 characters, not all spaces, storable text (isStorableText). */
export function isReason(reason: string): boolean {
  return reason.length >= 1 && reason.length <= MAX_CORRECTION_REASON && /\S/.test(reason) && isStorableText(reason);
}

/** Check a decoded journal line; throws what `fail` makes, saying what is wrong. */
export function readCorrectionRecord(value: unknown, fail: (why: string) => Error): CorrectionRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('not a JSON object');
  const r = value as Record<string, unknown>;
  const text = (field: string, check: (v: string) => boolean, rule: string): string => {
    const v = r[field];
    if (typeof v !== 'string' || !check(v)) throw fail(`${field} must be ${rule}`);
    return v;
  };
  const fields = (allowed: readonly string[]) => {
    const extra = Object.keys(r).find((k) => !allowed.includes(k));
    if (extra !== undefined) throw fail(`unknown field ${JSON.stringify(extra)} in a ${String(r.type)} line`);
  };
  const by = () => text('by', (v) => KEY_OR_CLI.test(v), 'a key id or "cli"');
  const at = () => text('at', (v) => TIMESTAMP.test(v) && !Number.isNaN(Date.parse(v)), 'an RFC 3339 UTC timestamp with milliseconds');
  const reason = () => text('reason', isReason, `1 to ${MAX_CORRECTION_REASON} characters`);
  const canonicalVpa = (v: string) => isValidVpa(v) && normalizeVpa(v) === v;
  switch (r.type) {
    case 'retraction': {
      fields(['type', 'id', 'evidence', 'reason', 'by', 'at']);
      const items = r.evidence;
      if (!Array.isArray(items) || items.length === 0 || items.length > MAX_RETRACTION_IDS) throw fail(`evidence must be a list of 1 to ${MAX_RETRACTION_IDS} items`);
      const evidence = items.map((item: unknown): RetractedItem => {
        const e = item as Record<string, unknown> | null;
        if (typeof e !== 'object' || e === null || Object.keys(e).length !== 2 || typeof e.id !== 'string' || typeof e.upi !== 'string') {
          throw fail('each evidence item must be {"id", "upi"}');
        }
        if (!isEvidenceId(e.id)) throw fail(`${JSON.stringify(e.id.slice(0, 80))} is not an evidence id`);
        if (!canonicalVpa(e.upi)) throw fail(`${JSON.stringify(e.upi.slice(0, 80))} is not a lower-cased VPA`);
        return { id: e.id, upi: e.upi };
      });
      return { type: 'retraction', id: text('id', (v) => RETRACTION_ID.test(v), 'a retraction id'), evidence, reason: reason(), by: by(), at: at() };
    }
    case 'clearance': {
      fields(['type', 'id', 'upi', 'reason', 'reference', 'urls', 'by', 'at']);
      const reference = r.reference;
      if (reference !== null && (typeof reference !== 'string' || reference.length === 0 || reference.length > MAX_CLEARANCE_REFERENCE)) {
        throw fail(`reference must be null or 1 to ${MAX_CLEARANCE_REFERENCE} characters`);
      }
      const urls = r.urls;
      if (!Array.isArray(urls) || urls.some((u) => typeof u !== 'string')) throw fail('urls must be a list of strings');
      return {
        type: 'clearance',
        id: text('id', (v) => CLEARANCE_ID.test(v), 'a clearance id'),
        upi: text('upi', canonicalVpa, 'a lower-cased VPA'),
        reason: reason(),
        reference,
        urls: urls as string[],
        by: by(),
        at: at(),
      };
    }
    case 'clearance_end': {
      fields(['type', 'id', 'reason', 'by', 'at']);
      const why = r.reason === null ? null : reason();
      return { type: 'clearance_end', id: text('id', (v) => CLEARANCE_ID.test(v), 'a clearance id'), reason: why, by: by(), at: at() };
    }
    default:
      throw fail(`unknown type ${JSON.stringify(r.type)}`);
  }
}
