import type { SnapshotView } from '../engine/snapshot-view.js';
import { parseClusterId } from '../engine/verdict.js';

/** Cluster answers kept per snapshot and thread. */
export const CLUSTER_ANSWERS_KEPT = 1024;
/** Bits of the filter of recent asks (8 KiB), one per value of a 16-bit hash half: 64 per answer kept, so false positives stay near 0.1 %. */
const ASKED_BITS = 1 << 16;
/** Clusters marked in the filter before it starts afresh. */
const ASKED_WINDOW = CLUSTER_ANSWERS_KEPT;

/**
 * The JSON answers to cluster lookups from one snapshot, keeping those of
 * clusters that are asked for again.
 *
 * A cluster answer is a pure function of the snapshot, and a popular gang's
 * cluster is looked up over and over, so answers are worth keeping. But most
 * lookups spread over many clusters, and an answer kept for every lookup
 * lives just long enough to be copied into the old generation and dropped
 * there: serving threads paid for that in longer collections (see
 * bench/MEASUREMENTS.md, 'The request path: allocation and native calls'). So an answer is kept
 * only when its cluster was asked for shortly before, TinyLFU's doorkeeper:
 * a Bloom filter (two bits per cluster) marks clusters as they are asked
 * for, and is cleared after every ASKED_WINDOW marks, so "shortly" means
 * within about as many first asks as answers are kept. A cluster asked for
 * once is assembled, answered and collected young, which costs next to
 * nothing. What is kept is the JSON text, one flat string that the
 * collector copies in one go, not the object graph it was made from.
 */
export class ClusterAnswerCache {
  readonly #view: SnapshotView;
  /** Cluster number → JSON text; evicted first in, first out. */
  readonly #kept = new Map<number, string>();
  readonly #asked = new Uint32Array(ASKED_BITS / 32);
  #marked = 0;

  constructor(view: SnapshotView) {
    this.#view = view;
  }

  /** How many answers are kept. */
  get size(): number {
    return this.#kept.size;
  }

  /** Whether the answer for this cluster id is kept. */
  isKept(clusterId: string): boolean {
    return this.#kept.has(parseClusterId(clusterId));
  }

  /** JSON text of the cluster with this id, or null when there is no such cluster. */
  json(clusterId: string): string | null {
    const number = parseClusterId(clusterId);
    if (number < 0) return null;
    const kept = this.#kept.get(number);
    if (kept !== undefined) return kept;
    const cluster = this.#view.cluster(clusterId);
    if (cluster === null) return null;
    // JSON.stringify handles a cluster, mostly member objects, as fast as a hand-written encoder.
    const text = JSON.stringify(cluster);
    if (this.#askedBefore(number)) {
      if (this.#kept.size >= CLUSTER_ANSWERS_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
      this.#kept.set(number, text);
    }
    return text;
  }

  /** Whether `number` was marked since the filter was last cleared; marks it if not. */
  #askedBefore(number: number): boolean {
    // MurmurHash3's finaliser; its two 16-bit halves pick the two bits.
    let hash = Math.imul(number ^ (number >>> 16), 0x85ebca6b);
    hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
    hash ^= hash >>> 16;
    const a = hash & 0xffff;
    const b = hash >>> 16;
    const asked = this.#asked;
    const bitA = 1 << (a & 31);
    const bitB = 1 << (b & 31);
    if ((asked[a >>> 5]! & bitA) !== 0 && (asked[b >>> 5]! & bitB) !== 0) return true;
    if (this.#marked === ASKED_WINDOW) {
      asked.fill(0);
      this.#marked = 0;
    }
    asked[a >>> 5]! |= bitA;
    asked[b >>> 5]! |= bitB;
    this.#marked++;
    return false;
  }
}

const answersBySnapshot = new WeakMap<SnapshotView, ClusterAnswerCache>();

/**
 * JSON text of a cluster answer from `view`, or null when it has no such
 * cluster. Answers are kept with their snapshot and go when it goes.
 */
export function clusterAnswerJson(view: SnapshotView, clusterId: string): string | null {
  let answers = answersBySnapshot.get(view);
  if (answers === undefined) {
    answers = new ClusterAnswerCache(view);
    answersBySnapshot.set(view, answers);
  }
  return answers.json(clusterId);
}
