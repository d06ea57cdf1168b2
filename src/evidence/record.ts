import { isValidVpa, normalizeVpa, describeInvalidVpa } from '../vpa/vpa.js';
import { riskCategoryCode, sourceCategoryCode, DEFAULT_RISK_BY_SOURCE, RISK_CATEGORIES, SOURCE_CATEGORIES } from '../vpa/categories.js';
import { formatIso, parseIsoWithZone } from '../common/time.js';
import { hasControlCharacter, hasLoneSurrogate } from '../common/control-characters.js';

/** One validated evidence item, in the form the build works with. */
export interface EvidenceRecord {
  readonly evidenceId: string;
  /** Lower-cased VPA. */
  readonly upi: string;
  readonly url: string;
  /** Code in SOURCE_CATEGORIES. */
  readonly sourceCategory: number;
  /** Code in RISK_CATEGORIES (defaulted from the source category when absent). */
  readonly riskCategory: number;
  /** Epoch milliseconds, UTC. */
  readonly capturedAt: number;
  readonly screenshot: boolean;
}

export const MAX_EVIDENCE_ID_LENGTH = 256;
export const MAX_URL_LENGTH = 2048;
/** Longest NDJSON line accepted; anything longer is refused before parsing. */
export const MAX_LINE_LENGTH = 16 * 1024;

export type ParseResult = { ok: true; record: EvidenceRecord } | { ok: false; reason: string };


/** Validate one NDJSON line against the ingestion contract. Never throws. */
export function parseEvidenceLine(line: string, stored = false): ParseResult {
  if (line.length > MAX_LINE_LENGTH) return fail(`line longer than ${MAX_LINE_LENGTH} characters`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return fail('not valid JSON');
  }
  return validateEvidence(value, stored);
}

/**
 * Validate a decoded JSON value against the ingestion contract. Never
 * throws. `stored`: a line stored before (read again by a build), held to
 * the rules it was taken under: what the contract refuses since (a lone
 * surrogate) is not dropped from the evidence by an upgrade.
 */
export function validateEvidence(value: unknown, stored = false): ParseResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('not a JSON object');
  const item = value as Record<string, unknown>;

  const evidenceId = item.evidence_id;
  if (typeof evidenceId !== 'string') return fail('evidence_id must be a string');
  const idProblem = evidenceIdProblem(evidenceId, stored);
  if (idProblem !== null) return fail(idProblem);

  const upi = item.upi;
  if (typeof upi !== 'string') return fail('upi must be a string');
  if (!isValidVpa(upi)) return fail(`upi ${JSON.stringify(truncate(upi))} is not a valid VPA: ${describeInvalidVpa(upi)}`);

  const url = item.url;
  if (typeof url !== 'string') return fail('url must be a string');
  const urlProblem = urlProblemOf(url, stored);
  if (urlProblem !== null) return fail(urlProblem);

  const sourceName = item.source_category;
  const sourceCategory = typeof sourceName === 'string' ? sourceCategoryCode(sourceName) : -1;
  if (sourceCategory < 0) return fail(`source_category must be one of ${SOURCE_CATEGORIES.join(', ')}`);

  let riskCategory = DEFAULT_RISK_BY_SOURCE[sourceCategory]!;
  const riskName = item.risk_category;
  if (riskName !== undefined && riskName !== null) {
    riskCategory = typeof riskName === 'string' ? riskCategoryCode(riskName) : -1;
    if (riskCategory < 0) return fail(`risk_category must be one of ${RISK_CATEGORIES.join(', ')}`);
  }

  const captured = item.captured_at;
  if (typeof captured !== 'string') return fail('captured_at must be an ISO 8601 string');
  const capturedAt = parseIsoWithZone(captured);
  if (Number.isNaN(capturedAt)) {
    return fail(`captured_at ${JSON.stringify(truncate(captured))} is not an ISO 8601 timestamp with a zone`);
  }

  const screenshotValue = item.screenshot_available;
  if (screenshotValue !== undefined && screenshotValue !== null && typeof screenshotValue !== 'boolean') {
    return fail('screenshot_available must be a boolean');
  }

  return {
    ok: true,
    record: {
      evidenceId,
      upi: normalizeVpa(upi),
      url,
      sourceCategory,
      riskCategory,
      capturedAt,
      screenshot: screenshotValue === true,
    },
  };
}

function evidenceIdProblem(evidenceId: string, stored: boolean): string | null {
  if (evidenceId.length === 0 || evidenceId.length > MAX_EVIDENCE_ID_LENGTH) return `evidence_id must be 1 to ${MAX_EVIDENCE_ID_LENGTH} characters`;
  if (hasControlCharacter(evidenceId)) return 'evidence_id must not contain control characters';
  if (!stored && hasLoneSurrogate(evidenceId)) return 'evidence_id must be well-formed Unicode: half of a surrogate pair alone cannot be stored';
  return null;
}

function urlProblemOf(url: string, stored: boolean): string | null {
  if (url.trim().length === 0 || url.length > MAX_URL_LENGTH) return `url must be 1 to ${MAX_URL_LENGTH} characters`;
  if (hasControlCharacter(url)) return 'url must not contain control characters';
  if (!stored && hasLoneSurrogate(url)) return 'url must be well-formed Unicode: half of a surrogate pair alone cannot be stored';
  return null;
}

/** The first and last instants a capture time of the contract can name: `captured_at` has a four-digit year. */
const FIRST_CAPTURE_MS = Date.parse('0000-01-01T00:00:00Z');
const LAST_CAPTURE_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Why a record read back from storage (the store's evidence log) is not
 * one validateEvidence could have made, or null when it is: the item it
 * stands for (evidenceItem) passes validateEvidence and gives the same
 * record back. Checked on the record itself, without writing and parsing
 * its timestamp as text, since a log mirror checks millions of rows (a
 * property test holds the two ways together).
 */
export function storedRecordProblem(record: EvidenceRecord): string | null {
  const idProblem = evidenceIdProblem(record.evidenceId, true);
  if (idProblem !== null) return idProblem;
  if (!isValidVpa(record.upi)) return `upi ${JSON.stringify(truncate(record.upi))} is not a valid VPA: ${describeInvalidVpa(record.upi)}`;
  if (normalizeVpa(record.upi) !== record.upi) return 'upi is not in the form ingest stores (lower-cased)';
  const urlProblem = urlProblemOf(record.url, true);
  if (urlProblem !== null) return urlProblem;
  if (!Number.isInteger(record.sourceCategory) || record.sourceCategory < 0 || record.sourceCategory >= SOURCE_CATEGORIES.length) return 'source_category is not a known category';
  if (!Number.isInteger(record.riskCategory) || record.riskCategory < 0 || record.riskCategory >= RISK_CATEGORIES.length) return 'risk_category is not a known category';
  if (!Number.isInteger(record.capturedAt) || record.capturedAt < FIRST_CAPTURE_MS || record.capturedAt > LAST_CAPTURE_MS) return 'captured_at is not a time with a four-digit year';
  return null;
}

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}

function truncate(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * A record as an item of the ingestion contract, the inverse of
 * validateEvidence: what the store's rows become when they are checked
 * again, or written out as NDJSON.
 */
export function evidenceItem(record: EvidenceRecord): Record<string, unknown> {
  return {
    evidence_id: record.evidenceId,
    upi: record.upi,
    url: record.url,
    source_category: SOURCE_CATEGORIES[record.sourceCategory],
    risk_category: RISK_CATEGORIES[record.riskCategory],
    captured_at: formatIso(record.capturedAt),
    screenshot_available: record.screenshot,
  };
}

/**
 * A record as one NDJSON line (no newline): `JSON.stringify(evidenceItem(record))`,
 * written out field by field, which takes about two thirds of the time at
 * the millions of lines a log mirror writes (bench/MEASUREMENTS.md, "Fleet
 * start: the download and the mirror"); a test holds the two equal.
 */
export function evidenceLine(record: EvidenceRecord): string {
  return (
    `{"evidence_id":${JSON.stringify(record.evidenceId)},"upi":${JSON.stringify(record.upi)},"url":${JSON.stringify(record.url)},` +
    `"source_category":${QUOTED_SOURCES[record.sourceCategory]},"risk_category":${QUOTED_RISKS[record.riskCategory]},` +
    `"captured_at":"${formatIso(record.capturedAt)}","screenshot_available":${record.screenshot}}`
  );
}

const QUOTED_SOURCES = SOURCE_CATEGORIES.map((name) => JSON.stringify(name));
const QUOTED_RISKS = RISK_CATEGORIES.map((name) => JSON.stringify(name));
