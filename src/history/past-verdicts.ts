import { batchResponseJson } from '../api/answer-json.js';
import { CONFIDENCE_SCALE } from '../engine/snapshot-data.js';
import { formatClusterId, type BatchItem, type VpaVerdict } from '../engine/verdict.js';
import { RISK_CATEGORIES } from '../vpa/categories.js';
import type { PastAnswer } from './change-log.js';

/**
 * Answers told again from the history (ChangeLog.answerAt), as the objects
 * the present ones are written from (answer-json.ts), so that their JSON is
 * the one served then, byte for byte.
 */

/** The verdict `past` tells, echoing `upi`. */
export function pastVerdict(upi: string, past: PastAnswer): VpaVerdict {
  const { facts, detail } = past;
  if (!facts.flagged || detail === null) {
    return { upi, status: 'CLEARED', confidence: null, risk_category: null, cluster_id: null, cluster_size: 0, first_seen: null, last_seen: null, sources: [], evidence_count: 0 };
  }
  return {
    upi,
    status: 'FLAGGED',
    confidence: facts.confidence / CONFIDENCE_SCALE,
    risk_category: RISK_CATEGORIES[facts.risk]!,
    cluster_id: facts.cluster === 0 ? null : formatClusterId(facts.cluster),
    ...detail,
  };
}

export function pastBatchJson(upis: readonly string[], past: readonly PastAnswer[]): string {
  const results: BatchItem[] = upis.map((upi, i) => {
    const v = pastVerdict(upi, past[i]!);
    return { upi, status: v.status, confidence: v.confidence, risk_category: v.risk_category, cluster_id: v.cluster_id, cluster_size: v.cluster_size, evidence_count: v.evidence_count };
  });
  return batchResponseJson({ results, total: results.length, flagged_count: results.filter((r) => r.status === 'FLAGGED').length, cleared_count: results.filter((r) => r.status === 'CLEARED').length });
}
