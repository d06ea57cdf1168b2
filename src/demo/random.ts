/**
 * A small seeded PRNG (sfc32, seeded through splitmix32) and the sampling
 * helpers the demo data generator needs. Math.random cannot be seeded, and
 * demo data must be byte-identical for the same seed on every machine, so
 * everything here is plain 32-bit integer arithmetic.
 */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    // splitmix32 spreads a small or sequential seed over the whole state.
    let s = seed >>> 0;
    const mix = (): number => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    // The first outputs of sfc32 still correlate with the seed.
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** Uniform integer in [0, 2^32). */
  uint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1). */
  float(): number {
    return this.uint32() / 4294967296;
  }

  /** Uniform integer in [0, n), for n up to 2^32. */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi], both inclusive. */
  range(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)]!;
  }

  /** `digits` random decimal digits, leading zeros kept. */
  digits(count: number): string {
    let out = '';
    while (count >= 9) {
      out += String(this.int(1e9)).padStart(9, '0');
      count -= 9;
    }
    if (count > 0) out += String(this.int(10 ** count)).padStart(count, '0');
    return out;
  }

  /** `count` random characters from `alphabet`. */
  chars(alphabet: string, count: number): string {
    let out = '';
    for (let i = 0; i < count; i++) out += alphabet[Math.floor(this.float() * alphabet.length)]!;
    return out;
  }

  /**
   * A heavy-tailed (discrete Pareto) integer in [min, max]: P(X >= x) is
   * about (min / x)^alpha, so most draws are near `min` and a few are huge.
   */
  pareto(min: number, max: number, alpha: number): number {
    const u = 1 - this.float(); // (0, 1], so the power below is finite
    const x = Math.floor(min * u ** (-1 / alpha));
    return x > max ? max : x;
  }
}

/**
 * A fixed discrete distribution: values with relative weights. Sampling is a
 * short scan of the cumulative weights; the tables here are small and
 * skewed, so the common values are found in the first few steps.
 */
export class Weighted<T> {
  private readonly values: readonly T[];
  private readonly cumulative: Float64Array;
  private readonly total: number;

  constructor(entries: ReadonlyArray<readonly [T, number]>) {
    if (entries.length === 0) throw new RangeError('a weighted table needs at least one entry');
    // Heaviest first so the scan usually stops early; the sort is stable, so the order is deterministic.
    const sorted = [...entries].sort((x, y) => y[1] - x[1]);
    this.values = sorted.map((entry) => entry[0]);
    this.cumulative = new Float64Array(sorted.length);
    let sum = 0;
    sorted.forEach(([, weight], i) => {
      if (!(weight > 0)) throw new RangeError('weights must be positive');
      sum += weight;
      this.cumulative[i] = sum;
    });
    this.total = sum;
  }

  sample(rng: Random): T {
    const target = rng.float() * this.total;
    const cumulative = this.cumulative;
    const last = cumulative.length - 1;
    let i = 0;
    while (i < last && cumulative[i]! <= target) i++;
    return this.values[i]!;
  }

  /** Every value, heaviest first. */
  all(): readonly T[] {
    return this.values;
  }
}
