/**
 * Screening results as CSV (RFC 4180), safe to open in a spreadsheet: a
 * cell that begins with = + - or @ (or a tab or carriage return) would be
 * read as a formula, so it is prefixed with an apostrophe.
 */
import { BAND_LABELS, bandAction, confidenceBand } from '../../../src/api/advice.js';
import type { ScreenedRow } from './batch-run.js';

const HEADER = [
  'upi',
  'status',
  'confidence',
  'band',
  'risk_category',
  'cluster_id',
  'cluster_size',
  'evidence_count',
  'payment_action',
  'onboarding_action',
  'request_id',
  'data_version',
];

/** One CSV field: formula guard first, then quoted when it holds a comma, quote or line break. */
export function csvField(value: string | number | null): string {
  let text = value === null ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function resultsCsv(rows: readonly ScreenedRow[]): string {
  const lines = [HEADER.join(',')];
  for (const { item, requestId, dataVersion } of rows) {
    const band = confidenceBand(item.status, item.confidence);
    lines.push(
      [
        item.upi,
        item.status,
        item.confidence,
        // ASCII, so any spreadsheet reads it.
        BAND_LABELS[band].replace('–', '-'),
        item.risk_category,
        item.cluster_id,
        item.cluster_size,
        item.evidence_count,
        bandAction(band, 'payment'),
        bandAction(band, 'onboarding'),
        requestId,
        dataVersion,
      ]
        .map(csvField)
        .join(','),
    );
  }
  return lines.join('\r\n') + '\r\n';
}
