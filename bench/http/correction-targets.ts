/**
 * What the corrections section (corrections.ts) corrects, drawn from the
 * data set: VPAs at random from the snapshot (all of them FLAGGED), and
 * for those to be retracted from, the first evidence id naming each in the
 * data set's evidence files, read line by line. Every VPA is drawn once,
 * so no two corrections touch the same VPA.
 */
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { normalizeVpa } from '../../src/vpa/vpa.js';
import { mulberry32 } from '../../test/fixtures/random.js';

/** One evidence item to retract, and the VPA it names (as stored: lower-cased). */
export interface RetractionTarget {
  readonly upi: string;
  readonly evidenceId: string;
}

/** The corrections of one series of served-latency measurements. */
export interface SeriesTargets {
  readonly retractions: readonly RetractionTarget[];
  /** VPAs to clear. */
  readonly clearances: readonly string[];
}

export interface CorrectionTargets {
  /** One set per series: idle, then under load. */
  readonly series: readonly SeriesTargets[];
  /** The bulk: VPAs to clear, and one evidence item each of other VPAs to retract. */
  readonly bulkClearances: readonly string[];
  readonly bulkRetractions: readonly RetractionTarget[];
}

export interface TargetCounts {
  readonly series: number;
  /** Retractions and clearances in each series (as many of each). */
  readonly perSeries: number;
  readonly bulkClearances: number;
  readonly bulkRetractions: number;
}

/** The `upi` field of an evidence line, read without parsing the rest (VPAs hold no quote or backslash). */
const UPI_FIELD = /"upi"\s*:\s*"([^"]*)"/;

export async function pickTargets(view: SnapshotView, evidenceDir: string, counts: TargetCounts, seed = 23): Promise<CorrectionTargets> {
  const index = new VpaIndex(view.data, view.data.maxKeyLength);
  const retracted = counts.series * counts.perSeries + counts.bulkRetractions;
  const cleared = counts.series * counts.perSeries + counts.bulkClearances;
  if (retracted + cleared > index.size) throw new RangeError(`${retracted + cleared} VPAs to correct, but the snapshot holds ${index.size}`);
  const random = mulberry32(seed);
  const drawn = new Set<number>();
  const draw = (count: number): string[] => {
    const out: string[] = [];
    while (out.length < count) {
      const id = Math.floor(random() * index.size);
      if (drawn.has(id)) continue;
      drawn.add(id);
      out.push(index.keyOf(id));
    }
    return out;
  };
  const toRetract = draw(retracted);
  const toClear = draw(cleared);
  const ids = await firstEvidenceIds(evidenceDir, new Set(toRetract));
  const retraction = (upi: string): RetractionTarget => {
    const evidenceId = ids.get(upi);
    if (evidenceId === undefined) throw new Error(`no evidence line in ${evidenceDir} names ${upi}, a VPA of the snapshot`);
    return { upi, evidenceId };
  };
  const n = counts.perSeries;
  return {
    series: Array.from({ length: counts.series }, (_, s) => ({
      retractions: toRetract.slice(s * n, (s + 1) * n).map(retraction),
      clearances: toClear.slice(s * n, (s + 1) * n),
    })),
    bulkRetractions: toRetract.slice(counts.series * n).map(retraction),
    bulkClearances: toClear.slice(counts.series * n),
  };
}

/** The first evidence id naming each of `vpas` (canonical) in the evidence files of `dir`, in name order. */
async function firstEvidenceIds(dir: string, vpas: ReadonlySet<string>): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const files = (await readdir(dir)).filter((name) => name.endsWith('.ndjson')).sort();
  for (const name of files) {
    const lines = createInterface({ input: createReadStream(join(dir, name)), crlfDelay: Infinity });
    for await (const line of lines) {
      const match = UPI_FIELD.exec(line);
      if (match === null) continue;
      const upi = normalizeVpa(match[1]!);
      if (!vpas.has(upi) || found.has(upi)) continue;
      found.set(upi, (JSON.parse(line) as { evidence_id: string }).evidence_id);
    }
    if (found.size === vpas.size) break;
  }
  return found;
}
