/** The spec's lookups, called with the console's session. */
import { call, type Answer } from './client.js';
import type { AnswerHistory, BatchAnswer, DataVersion, Verdict } from './types.js';

export function lookUp(upi: string, signal?: AbortSignal): Promise<Answer<Verdict>> {
  return call<Verdict>('GET', `/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { signal });
}

/** At most 100 VPAs (the spec's batch limit). */
export function lookUpBatch(upis: readonly string[], signal?: AbortSignal): Promise<Answer<BatchAnswer>> {
  return call<BatchAnswer>('POST', '/v1/verify/upi/batch', { json: { upis }, signal });
}

/** When a data version (an answer's X-Data-Version) was served, and what it held. */
export function lookUpDataVersion(version: string, signal?: AbortSignal): Promise<Answer<DataVersion>> {
  return call<DataVersion>('GET', `/v1/data-versions/${encodeURIComponent(version)}`, { signal });
}

/** Every change of a VPA's answer, oldest first. */
export function lookUpHistory(upi: string, signal?: AbortSignal): Promise<Answer<AnswerHistory>> {
  return call<AnswerHistory>('GET', `/v1/verify/upi/history?upi=${encodeURIComponent(upi)}`, { signal });
}
