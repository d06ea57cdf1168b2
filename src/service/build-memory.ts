/**
 * A compaction's memory under a limit (`serve --max-memory`, or the
 * control group's): before each build, whether the usual build fits beside
 * what the process holds, or must run lean (BuildOptions.lean: the carried
 * build state let go, every stored evidence file read again, the records
 * dropped once aggregated, the build threads' working memory given back at
 * the end). The service then gives a replaced snapshot's memory back rather
 * than holding it, and reads the carry again once it is gone
 * (docs/operations.md, "Under a memory limit").
 */

/** Share of the limit a build plans to reach at most: the rest is for serving, and for estimates that fall short. */
export const PLANNED_SHARE = 0.9;
/**
 * A build's peak over the resident memory at its start, in snapshot bytes,
 * until one has been measured here: the new snapshot beside the served one
 * and the build's working arrays (bench/MEASUREMENTS.md, "Memory of an
 * embedded server at 1M": 470 MB over idle for a 179 MB snapshot).
 */
export const FIRST_BUILD_SNAPSHOTS = 3;

export interface BuildMemoryPlan {
  /** Whether to build lean (BuildOptions.lean). */
  readonly lean: boolean;
  /** The resident memory a usual build is expected to reach, bytes. */
  readonly expectedPeak: number;
  /** The limit the plan was made under, bytes. */
  readonly limit: number;
  /** The resident memory at the build's start (BuildMemoryInput.residentBytes). */
  readonly startBytes: number;
}

/** What the plan is made from, read at the build's start. */
export interface BuildMemoryInput {
  readonly residentBytes: number;
  /** The served snapshot's bytes. */
  readonly snapshotBytes: number;
}

/**
 * Plans each build's memory under `limit` bytes and learns from the peaks
 * measured (`measured`): the growth of the last usual build over the
 * resident memory at its start, or FIRST_BUILD_SNAPSHOTS snapshots before
 * one.
 */
export class BuildMemory {
  readonly limit: number;
  #usualGrowth: number | null = null;
  #leanBuilds = 0;
  #tight = false;

  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit <= 0) throw new RangeError(`a memory limit must be a positive number of bytes, got ${limit}`);
    this.limit = limit;
  }

  /** Whether the last plan was lean: memory is tight, and a replaced snapshot's is given back rather than held for the next build. */
  get tight(): boolean {
    return this.#tight;
  }

  /** Lean builds planned so far. */
  get leanBuilds(): number {
    return this.#leanBuilds;
  }

  plan(input: BuildMemoryInput): BuildMemoryPlan {
    const growth = this.#usualGrowth ?? FIRST_BUILD_SNAPSHOTS * input.snapshotBytes;
    const expectedPeak = input.residentBytes + growth;
    // Lean even with nothing carried now: a read of the stored evidence may be under way, and a lean
    // build still drops its records before assembling.
    const lean = expectedPeak > PLANNED_SHARE * this.limit;
    if (lean) this.#leanBuilds++;
    this.#tight = lean;
    return { lean, expectedPeak, limit: this.limit, startBytes: input.residentBytes };
  }

  /** A build planned by `plan` has ended: `peakBytes` resident at most while it ran. */
  measured(plan: BuildMemoryPlan, peakBytes: number): void {
    if (!plan.lean) this.#usualGrowth = Math.max(0, peakBytes - plan.startBytes);
  }
}

/**
 * The most `read()` (resident bytes) gives, sampled every `everyMs` until
 * the function returned is called, which gives it.
 */
export function samplePeak(read: () => number, everyMs = 100): () => number {
  let peak = read();
  const timer = setInterval(() => {
    peak = Math.max(peak, read());
  }, everyMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    return Math.max(peak, read());
  };
}
