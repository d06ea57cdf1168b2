/**
 * Reading verdicts leniently, as the spec asks of clients: a CLEARED verdict
 * may omit `risk_category`, `cluster_size`, `first_seen` and `last_seen`
 * (they become null or 0, as do the other optional fields when absent), and
 * fields this client does not know are kept as they came, never an error.
 * Only what cannot be read (no `upi`, an unknown `status`) is refused.
 */
import { ResponseFormatError } from './errors.js';
import type { ResponseMeta } from './transport.js';
import type { BatchItem, RiskCategory, VpaVerdict } from './wire.js';

type Fields = Record<string, unknown>;

export function objectOf(value: unknown, what: string, meta: ResponseMeta): Fields {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ResponseFormatError(`${what} is not a JSON object`, { requestId: meta.requestId });
  }
  return value as Fields;
}

export function toBatchItem(value: unknown, meta: ResponseMeta): BatchItem {
  const fields = objectOf(value, 'a verdict', meta);
  if (typeof fields.upi !== 'string') throw new ResponseFormatError('a verdict without upi', { requestId: meta.requestId });
  if (fields.status !== 'FLAGGED' && fields.status !== 'CLEARED') {
    throw new ResponseFormatError(`a verdict of status ${JSON.stringify(fields.status)}`, { requestId: meta.requestId });
  }
  return {
    ...fields,
    upi: fields.upi,
    status: fields.status,
    confidence: (fields.confidence ?? null) as BatchItem['confidence'],
    risk_category: (fields.risk_category ?? null) as BatchItem['risk_category'],
    cluster_id: (fields.cluster_id ?? null) as BatchItem['cluster_id'],
    cluster_size: (fields.cluster_size ?? 0) as number,
    evidence_count: (fields.evidence_count ?? 0) as number,
  };
}

export function toVpaVerdict(value: unknown, meta: ResponseMeta): VpaVerdict {
  const fields = objectOf(value, 'a verdict', meta);
  return {
    ...toBatchItem(fields, meta),
    first_seen: (fields.first_seen ?? null) as VpaVerdict['first_seen'],
    last_seen: (fields.last_seen ?? null) as VpaVerdict['last_seen'],
    sources: (fields.sources ?? []) as VpaVerdict['sources'],
  };
}

/**
 * The items of a batch answer, checked against the VPAs sent: the reference
 * form (`{"results": [...]}`), or the bare array of full verdicts of the
 * spec's secondary description. One item per VPA sent, in order.
 */
export function batchItemsOf(body: unknown, sent: readonly string[], meta: ResponseMeta): BatchItem[] {
  const list = Array.isArray(body) ? body : objectOf(body, 'the batch answer', meta).results;
  if (!Array.isArray(list) || list.length !== sent.length) {
    const got = Array.isArray(list) ? `${list.length} results` : 'no results array';
    throw new ResponseFormatError(`a batch of ${sent.length} VPAs answered with ${got}`, { requestId: meta.requestId });
  }
  return list.map((value, index) => {
    const item = toBatchItem(value, meta);
    checkAnsweredFor(item.upi, sent[index]!, `batch result ${index}`, meta);
    return item;
  });
}

/**
 * Throws ResponseFormatError unless `answered` is the VPA `asked` about, in
 * any case (the canonical form is lower-case): the service echoes the VPA,
 * and a mismatch (a cache that ignored the query string) would pin a
 * verdict on the wrong payee.
 */
export function checkAnsweredFor(answered: unknown, asked: string, what: string, meta: ResponseMeta): void {
  if (typeof answered !== 'string' || answered.toLowerCase() !== asked.toLowerCase()) {
    throw new ResponseFormatError(`${what} is for ${typeof answered === 'string' ? answered : 'no VPA'}, not ${asked}`, { requestId: meta.requestId });
  }
}

/** A private lookup's verdict: what a range answer says of one VPA. */
export interface PrivateVerdict {
  /** The VPA as given. */
  readonly upi: string;
  readonly status: 'FLAGGED' | 'CLEARED';
  readonly risk_category: RiskCategory | null;
  readonly confidence: number | null;
  readonly cluster_id: string | null;
  /** The range answer's `data_version`: the intelligence that answered. */
  readonly data_version: string | null;
}

/**
 * The verdict on `upi` in the range answer for the first `prefix.length`
 * hex digits of its hash `hash`: FLAGGED when an entry carries the rest of
 * the hash, CLEARED when none does (the other entries are other VPAs and
 * padding). Entries are matched on their suffix alone; their other fields
 * are read only for the match.
 */
export function privateVerdictOf(body: unknown, upi: string, hash: string, prefix: string, meta: ResponseMeta): PrivateVerdict {
  const fields = objectOf(body, 'the range answer', meta);
  if (fields.prefix !== undefined && (typeof fields.prefix !== 'string' || fields.prefix.toLowerCase() !== prefix)) {
    throw new ResponseFormatError(`the range answer is for prefix ${JSON.stringify(fields.prefix)}, not ${prefix}`, { requestId: meta.requestId });
  }
  if (!Array.isArray(fields.entries)) throw new ResponseFormatError('the range answer has no entries array', { requestId: meta.requestId });
  const suffix = hash.slice(prefix.length);
  const data_version = typeof fields.data_version === 'string' ? fields.data_version : null;
  for (const entry of fields.entries as unknown[]) {
    const candidate = objectOf(entry, 'a range entry', meta);
    if (typeof candidate.suffix !== 'string' || candidate.suffix.toLowerCase() !== suffix) continue;
    if (candidate.status !== undefined && candidate.status !== 'FLAGGED' && candidate.status !== 'CLEARED') {
      throw new ResponseFormatError(`a range entry of status ${JSON.stringify(candidate.status)}`, { requestId: meta.requestId });
    }
    return {
      upi,
      status: (candidate.status ?? 'FLAGGED') as PrivateVerdict['status'],
      risk_category: (candidate.risk_category ?? null) as PrivateVerdict['risk_category'],
      confidence: (candidate.confidence ?? null) as PrivateVerdict['confidence'],
      cluster_id: (candidate.cluster_id ?? null) as PrivateVerdict['cluster_id'],
      data_version,
    };
  }
  return { upi, status: 'CLEARED', risk_category: null, confidence: null, cluster_id: null, data_version };
}
