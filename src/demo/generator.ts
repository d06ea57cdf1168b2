/**
 * Deterministic synthetic evidence: NDJSON lines that pass parseEvidenceLine,
 * shaped like what crawlers bring back. Flagged VPAs come in three kinds of
 * cluster:
 *
 *   gang        2 to 300 accounts (heavy-tailed, most small) rotating through
 *               the same betting sites, phishing pages or Telegram channels
 *   singleton   one account seen on pages of its own
 *   aggregator  a forum thread, list page or channel naming many unrelated
 *               accounts (mostly ones seen elsewhere) — the case the engine's
 *               per-url cap exists for
 *
 * Output depends only on the options: no wall clock, no Math.random, and
 * every string is built from the seeded PRNG in a fixed order. Lines are
 * concatenated by hand (every value is from a known-safe ASCII character
 * set, so nothing needs JSON escaping), copied straight into ~1 MB buffers
 * and handed out buffer by buffer; short-lived line strings keep the
 * garbage collector's work in the young generation.
 *
 * Uniqueness is by construction where it can be: every page carries a
 * number no other page has, in a position that makes the whole url unique,
 * so unrelated clusters never share a url by accident. VPAs are drawn at
 * random and de-duplicated through a compact hash set, so `vpas` is exact.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { tempFileName } from '../common/atomic-file.js';
import { formatClock } from '../common/time.js';
import type { RiskCategory, SourceCategory } from '../vpa/categories.js';
import { Random, Weighted } from './random.js';
import * as words from './vocabulary.js';

/** Newest capture instant unless told otherwise: 2026-11-01T00:00:00Z. */
export const DEFAULT_END = Date.UTC(2026, 10, 1);
/** Captures fall in the two years (730 days) up to and including `end`. */
export const WINDOW_MS = 730 * 86_400_000;
export const MIN_GANG_SIZE = 2;
export const MAX_GANG_SIZE = 300;
/**
 * Distinct VPAs on an aggregator page. The lower bound sits above the
 * engine's default per-url cap (500), so these pages exercise the cap rather
 * than fuse unrelated clusters; gang pages stay well below it.
 */
export const MIN_AGGREGATOR_SIZE = 600;
export const MAX_AGGREGATOR_SIZE = 6000;
/** The dedup table costs 8 bytes a slot; this bound keeps it near 0.5 GB. */
export const MAX_VPAS = 50_000_000;
/** Earliest and latest accepted `end`, so every timestamp keeps a 4-digit year in any zone. */
export const MIN_END = Date.UTC(1972, 0, 1);
export const MAX_END = Date.UTC(9999, 11, 30);
export const DEFAULT_CHUNK_BYTES = 1 << 20;

/** How the committed data/sample-evidence.ndjson was produced; tests regenerate it from this. */
export const SAMPLE_EVIDENCE = { path: 'data/sample-evidence.ndjson', vpas: 1200, seed: 42 } as const;

export type ClusterKind = 'singleton' | 'gang' | 'aggregator';
export type Theme = 'gambling' | 'mule' | 'phishing' | 'job' | 'investment' | 'loan' | 'nbfc';

/** What one generated cluster looked like; reported through `onCluster`, for tests and tooling. */
export interface ClusterInfo {
  readonly kind: ClusterKind;
  /** What the operation is about; aggregator pages list all sorts and say `mixed`. */
  readonly theme: Theme | 'mixed';
  /** VPAs first seen in this cluster (they count towards `vpas`). */
  readonly newVpas: number;
  /** Distinct VPAs the cluster's items name; for an aggregator this includes VPAs seen earlier. */
  readonly listedVpas: number;
  /** Every url the cluster's items use; no other cluster uses any of them. */
  readonly urls: readonly string[];
}

export interface DemoDataOptions {
  /** Distinct flagged VPAs (compared lower-cased) the output names; 0 to MAX_VPAS. */
  readonly vpas: number;
  /** PRNG seed, an integer in [0, 2^32). */
  readonly seed: number;
  /** Newest capture instant, epoch ms; DEFAULT_END when omitted. */
  readonly end?: number;
  /** Called once per cluster, after its lines. */
  readonly onCluster?: (cluster: ClusterInfo) => void;
}

export interface DemoDataSummary {
  readonly vpas: number;
  readonly lines: number;
  /** Output size; the output is ASCII, so characters and bytes agree. */
  readonly bytes: number;
}

/** Throws RangeError naming the first bad option. */
export function checkDemoDataOptions(options: DemoDataOptions): void {
  const { vpas, seed, end } = options;
  if (!Number.isInteger(vpas) || vpas < 0 || vpas > MAX_VPAS) throw new RangeError(`vpas must be an integer from 0 to ${MAX_VPAS}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError('seed must be an integer from 0 to 4294967295');
  if (end !== undefined && !(Number.isInteger(end) && end >= MIN_END && end <= MAX_END)) {
    throw new RangeError('end must be an integer epoch-ms instant between 1972-01-01 and 9999-12-30');
  }
}

/**
 * The output as ASCII bytes in chunks of at most `chunkBytes` (at least
 * 4 KiB), each a run of whole lines ending in "\n". Every chunk is a fresh
 * buffer the caller may keep. The generator's return value is the summary.
 */
export function* generateEvidenceChunks(
  options: DemoDataOptions,
  chunkBytes: number = DEFAULT_CHUNK_BYTES,
): Generator<Buffer, DemoDataSummary, undefined> {
  checkDemoDataOptions(options);
  return yield* new EvidenceGenerator(options, Math.max(MIN_CHUNK_BYTES, chunkBytes)).chunks();
}

/** The output one line at a time, without the trailing newline. Convenient for tests; slower than chunks. */
export function* generateEvidence(options: DemoDataOptions): Generator<string, DemoDataSummary, undefined> {
  const chunks = generateEvidenceChunks(options, 64 * 1024);
  for (;;) {
    const step = chunks.next();
    if (step.done === true) return step.value;
    const text = step.value.toString('latin1');
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      yield text.slice(start, nl);
      start = nl + 1;
    }
  }
}

/**
 * Write the output to a stream (honouring backpressure; the stream is left
 * open, so standard output works) or to a file path. A file is written under
 * a temporary name beside the target and renamed into place at the end, so
 * a failed run leaves no partial file behind.
 */
export async function writeDemoData(options: DemoDataOptions, out: Writable | string): Promise<DemoDataSummary> {
  checkDemoDataOptions(options);
  if (typeof out !== 'string') return pump(generateEvidenceChunks(options), out);

  const dir = dirname(out);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, tempFileName(basename(out)));
  // Room for several chunks, so the next one is generated while the disk takes the last.
  const stream = createWriteStream(temp, { highWaterMark: 8 * DEFAULT_CHUNK_BYTES });
  try {
    const summary = await pump(generateEvidenceChunks(options), stream);
    stream.end();
    await finished(stream);
    await rename(temp, out);
    return summary;
  } catch (error) {
    stream.destroy();
    await unlink(temp).catch(() => {});
    throw error;
  }
}

async function pump(chunks: Generator<Buffer, DemoDataSummary, undefined>, out: Writable): Promise<DemoDataSummary> {
  // A stream error (EPIPE on a closed pipe, a full disk) must end the run, not crash the process.
  // Asserted, not annotated: set in a callback, it would be narrowed to null below.
  let failure = null as Error | null;
  const onError = (error: Error): void => {
    failure ??= error;
  };
  out.on('error', onError);
  try {
    for (;;) {
      if (failure !== null) throw failure;
      if (out.destroyed) throw new Error('output stream closed before the demo data was written');
      const step = chunks.next();
      if (step.done === true) return step.value;
      if (!out.write(step.value)) await drained(out);
    }
  } finally {
    out.off('error', onError);
  }
}

function drained(out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const cleanup = (): void => {
      out.off('drain', onDrain);
      out.off('error', onError);
      out.off('close', onClose);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error('output stream closed before the demo data was written'));
    };
    out.on('drain', onDrain);
    out.on('error', onError);
    out.on('close', onClose);
  });
}

// ---------------------------------------------------------------------------
// Tables

const DAY = 86_400_000;
/** Room for the longest line the generator can produce (urls and handles are short), with margin. */
const MAX_GENERATED_LINE = 4096;
const MIN_CHUNK_BYTES = MAX_GENERATED_LINE;

const enum Shape {
  Mobile,
  MobileSuffix,
  Name,
  Merchant,
  Separated,
}

function shapes(mobile: number, suffix: number, name: number, merchant: number, separated: number): Weighted<Shape> {
  return new Weighted<Shape>([
    [Shape.Mobile, mobile],
    [Shape.MobileSuffix, suffix],
    [Shape.Name, name],
    [Shape.Merchant, merchant],
    [Shape.Separated, separated],
  ]);
}

/**
 * Which handle shapes each kind of operation tends to use: betting rings
 * lean on merchant QR accounts, mule herders on personal ones.
 */
const SHAPES_BY_THEME: Record<Theme, Weighted<Shape>> = {
  gambling: shapes(28, 7, 18, 32, 15),
  mule: shapes(42, 13, 38, 2, 5),
  phishing: shapes(34, 8, 26, 24, 8),
  job: shapes(36, 9, 30, 18, 7),
  investment: shapes(36, 9, 30, 18, 7),
  loan: shapes(36, 9, 30, 18, 7),
  nbfc: shapes(32, 8, 25, 28, 7),
};

const GANG_THEMES = new Weighted<Theme>([
  ['gambling', 32],
  ['mule', 14],
  ['phishing', 18],
  ['job', 12],
  ['investment', 10],
  ['loan', 7],
  ['nbfc', 7],
]);

const SINGLETON_THEMES = new Weighted<Theme>([
  ['gambling', 25],
  ['mule', 4],
  ['phishing', 30],
  ['job', 12],
  ['investment', 10],
  ['loan', 10],
  ['nbfc', 9],
]);

/** Chance that a singleton's page is a Telegram post rather than a web page. */
const SINGLETON_TELEGRAM: Record<Theme, number> = {
  gambling: 0.15,
  mule: 0.8,
  phishing: 0.1,
  job: 0.35,
  investment: 0.4,
  loan: 0.1,
  nbfc: 0.05,
};

/** Chance that a gang also works a Telegram channel next to its web pages. */
const GANG_TELEGRAM: Record<Theme, number> = {
  gambling: 0.4,
  mule: 1,
  phishing: 0.2,
  job: 0.6,
  investment: 0.6,
  loan: 0.3,
  nbfc: 0.1,
};

/** Evidence items per VPA within its own cluster; mean about 1.8. */
const ITEMS_PER_VPA = new Weighted<number>([
  [1, 58],
  [2, 24],
  [3, 9],
  [4, 4.5],
  [5, 2],
  [6, 1.2],
  [7, 0.7],
  [8, 0.4],
  [9, 0.2],
]);

/** Share of new clusters that are gangs; with their mean size, roughly 45% of VPAs end up in one. */
const GANG_CHANCE = 0.1;

interface Zone {
  readonly label: string;
  readonly offsetMs: number;
}

// Crawlers in India stamp local time; some pipelines normalise to UTC; a few run elsewhere.
const ZONES = new Weighted<Zone>([
  [{ label: '+05:30', offsetMs: 330 * 60_000 }, 76],
  [{ label: 'Z', offsetMs: 0 }, 15],
  [{ label: '+00:00', offsetMs: 0 }, 2.5],
  [{ label: '+0530', offsetMs: 330 * 60_000 }, 1.5],
  [{ label: '+04:00', offsetMs: 240 * 60_000 }, 1.5],
  [{ label: '+08:00', offsetMs: 480 * 60_000 }, 1],
  [{ label: '+05:45', offsetMs: 345 * 60_000 }, 0.8],
  [{ label: '+01:00', offsetMs: 60 * 60_000 }, 0.8],
  [{ label: '-04:00', offsetMs: -240 * 60_000 }, 0.5],
  [{ label: '-07:00', offsetMs: -420 * 60_000 }, 0.4],
]);

const PERSONAL_PROVIDERS = new Weighted<string>(words.PERSONAL_PROVIDERS);
const BHARATPE_PROVIDERS = new Weighted<string>([
  ['fbpe', 5],
  ['yesbankltd', 3],
  ['icici', 2],
]);
const SHOP_PROVIDERS = new Weighted<string>([
  ['okbizaxis', 5],
  ['ybl', 5],
  ['paytm', 3],
  ['hdfcbank', 1],
  ['icici', 1],
  ['axisbank', 1],
]);
const MOBILE_SUFFIXES = ['-2', '-2', '-2', '-3', '-3', '-4', '-5', '-1', '.2', '_2', '_1'];
const LUCKY_NUMBERS = ['786', '007', '143', '420', '999', '111', '123', '1234', '99', '01', '7'];
const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const INVITE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const HOST_EXTRAS = ['', '', '', 'pro', 'india', 'hub', 'club', 'app', 'vip', 'official', 'online'];
const GAMBLING_NUMBERS = ['11', '777', '365', '247', '99', '786', '888'];

function sourceFragment(name: SourceCategory): string {
  return `","source_category":"${name}"`;
}

// The captured_at key always follows, so it rides along with the risk field (or its absence).
function riskFragment(name: RiskCategory): string {
  return `,"risk_category":"${name}","captured_at":"`;
}

const NO_RISK = ',"captured_at":"';

const SOURCE = {
  gambling: sourceFragment('gambling'),
  phishing: sourceFragment('phishing'),
  scam: sourceFragment('scam'),
  telegram: sourceFragment('telegram'),
};

const RISK = {
  mule: riskFragment('mule'),
  gambling: riskFragment('gambling'),
  phishing: riskFragment('phishing'),
  scam: riskFragment('scam'),
  nbfc: riskFragment('nbfc_impersonation'),
};

// Line endings after the timestamp: with the screenshot flag true, false, or left out.
const END_SHOT_TRUE = '","screenshot_available":true}\n';
const END_SHOT_FALSE = '","screenshot_available":false}\n';
const END_NO_SHOT = '"}\n';

/**
 * A url plus how items seen there are labelled: `risk` is written with
 * probability `riskChance` (otherwise the field is left out and the engine
 * defaults it from the source); on a `muleAware` page an account the
 * operation uses for routing deposits is labelled mule instead.
 */
interface Page {
  readonly url: string;
  /** Pre-rendered `","url":"…","source_category":"…"`, the part of a line fixed by the page. */
  readonly fields: string;
  /** Pre-rendered risk field, followed by the captured_at key. */
  readonly risk: string;
  readonly riskChance: number;
  readonly muleAware: boolean;
}

const enum IdStyle {
  Counter,
  Uuid,
  Capture,
}

/** Open-addressing set of 64-bit fingerprints of lower-cased VPAs; a false "seen" only costs a redraw, so counts stay exact. */
class VpaSet {
  private readonly high: Uint32Array;
  private readonly low: Uint32Array;
  private readonly mask: number;

  constructor(expected: number) {
    let capacity = 1024;
    while (capacity < expected * 1.25) capacity *= 2;
    this.high = new Uint32Array(capacity);
    this.low = new Uint32Array(capacity);
    this.mask = capacity - 1;
  }

  /** Adds the VPA; false when it (or a fingerprint twin) was already there. */
  add(vpa: string): boolean {
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c;
    for (let i = 0; i < vpa.length; i++) {
      let c = vpa.charCodeAt(i);
      if (c >= 65 && c <= 90) c |= 32;
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    h1 = fmix(h1) | 1; // never 0, which marks an empty slot
    h2 = fmix(h2);
    const high = this.high;
    const low = this.low;
    let slot = h2 & this.mask;
    for (;;) {
      const existing = high[slot]!;
      if (existing === 0) {
        high[slot] = h1 >>> 0;
        low[slot] = h2 >>> 0;
        return true;
      }
      if (existing === h1 >>> 0 && low[slot] === h2 >>> 0) return false;
      slot = (slot + 1) & this.mask;
    }
  }
}

function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Recently created VPAs, for aggregator pages to list; more than the largest listing. */
const RING_SIZE = 8192;

class EvidenceGenerator {
  private readonly rng: Random;
  private readonly end: number;
  /** First whole second inside the window, so second-precision stamps never fall before it. */
  private readonly windowStart: number;
  private readonly target: number;
  private readonly onCluster: ((cluster: ClusterInfo) => void) | undefined;
  private readonly seen: VpaSet;
  private readonly counterPrefix: string;

  private readonly chunkBytes: number;
  private readonly stamps: StampFormatter;

  private created = 0;
  private lines = 0;
  private bytes = 0;
  private pages = 0;
  private chunk: Buffer;
  private used = 0;
  /** Full chunks waiting to be handed out. */
  private readonly ready: Buffer[] = [];
  private idStyle = IdStyle.Counter;
  private readonly ring: string[] = [];
  private ringNext = 0;
  private nextAggregatorAt: number;
  /** Urls of the cluster being generated, only kept when someone listens. */
  private clusterUrls: Set<string> | null = null;

  constructor(options: DemoDataOptions, chunkBytes: number) {
    this.chunkBytes = chunkBytes;
    this.chunk = Buffer.allocUnsafe(chunkBytes);
    this.rng = new Random(options.seed);
    this.end = options.end ?? DEFAULT_END;
    this.windowStart = Math.ceil((this.end - WINDOW_MS) / 1000) * 1000;
    this.target = options.vpas;
    this.onCluster = options.onCluster;
    this.seen = new VpaSet(options.vpas);
    this.counterPrefix = `ev-${options.seed}-`;
    this.nextAggregatorAt = this.rng.range(MIN_AGGREGATOR_SIZE, MIN_AGGREGATOR_SIZE + 300);
    this.stamps = new StampFormatter(this.windowStart, this.end);
  }

  *chunks(): Generator<Buffer, DemoDataSummary, undefined> {
    const rng = this.rng;
    while (this.created < this.target) {
      if (this.onCluster !== undefined) this.clusterUrls = new Set();
      // Only once enough VPAs exist for a listing of at least MIN_AGGREGATOR_SIZE.
      if (this.created >= this.nextAggregatorAt && this.ring.length >= MIN_AGGREGATOR_SIZE) {
        this.aggregator();
        this.nextAggregatorAt = this.created + rng.range(8000, 25000);
      } else if (this.target - this.created >= MIN_GANG_SIZE && rng.chance(GANG_CHANCE)) {
        this.gang();
      } else {
        this.singleton();
      }
      while (this.ready.length > 0) yield this.ready.shift()!;
    }
    if (this.used > 0) this.seal();
    while (this.ready.length > 0) yield this.ready.shift()!;
    return { vpas: this.created, lines: this.lines, bytes: this.bytes };
  }

  /** Queue the filled part of the current chunk and start a new one. */
  private seal(): void {
    this.ready.push(this.chunk.subarray(0, this.used));
    this.bytes += this.used;
    this.chunk = Buffer.allocUnsafe(this.chunkBytes);
    this.used = 0;
  }

  private report(kind: ClusterKind, theme: Theme | 'mixed', newVpas: number, listedVpas: number): void {
    if (this.onCluster === undefined || this.clusterUrls === null) return;
    this.onCluster({ kind, theme, newVpas, listedVpas, urls: [...this.clusterUrls] });
  }

  // -- clusters -------------------------------------------------------------

  private singleton(): void {
    const rng = this.rng;
    const theme = SINGLETON_THEMES.sample(rng);
    this.pickIdStyle();
    const vpa = this.newVpa(theme);
    const count = ITEMS_PER_VPA.sample(rng);
    const variant = count > 1 && rng.chance(0.08) ? caseVariant(vpa, rng) : vpa;
    const [from, to] = this.activeWindow(60);
    let page = this.singletonPage(theme);
    this.item(vpa, page, false, from, to);
    for (let i = 1; i < count; i++) {
      // Mostly the same page captured again later; sometimes the account turns up on another page of its own.
      if (rng.chance(0.4)) page = this.singletonPage(theme);
      this.item(variant, page, false, from, to);
    }
    this.report('singleton', theme, 1, 1);
  }

  private gang(): void {
    const rng = this.rng;
    const size = Math.min(rng.pareto(MIN_GANG_SIZE, MAX_GANG_SIZE, 1.15), this.target - this.created);
    const theme = GANG_THEMES.sample(rng);
    this.pickIdStyle();
    const pages = this.gangPages(theme, size);
    const k = pages.length;
    const [gangFrom, gangTo] = this.activeWindow(rng.range(7, 400));
    const gangSpan = gangTo - gangFrom;
    for (let m = 0; m < size; m++) {
      const vpa = this.newVpa(theme);
      const mule = theme === 'mule' || (theme === 'gambling' && rng.chance(0.15));
      const count = ITEMS_PER_VPA.sample(rng);
      const variant = count > 1 && rng.chance(0.08) ? caseVariant(vpa, rng) : vpa;
      // Accounts rotate: each is in use for part of the operation's lifetime.
      const from = gangFrom + Math.floor(rng.float() * gangSpan * 0.8);
      const to = Math.min(gangTo, from + Math.floor(gangSpan * (0.1 + 0.5 * rng.float())));
      // The first k members cover every page, so no page goes unused.
      const primary = m < k ? m : rng.int(k);
      this.item(vpa, pages[primary]!, mule, from, to);
      for (let i = 1; i < count; i++) {
        const r = rng.float();
        const page = r < 0.45 ? pages[primary]! : r < 0.88 ? pages[rng.int(k)]! : this.singletonPage(theme);
        this.item(variant, page, mule, from, to);
      }
      // Chain page m to page m-1 through member m, so the gang is one connected group of pages.
      if (m > 0 && m < k) this.item(variant, pages[m - 1]!, mule, from, to);
    }
    this.report('gang', theme, size, size);
  }

  private aggregator(): void {
    const rng = this.rng;
    const size = rng.pareto(MIN_AGGREGATOR_SIZE, MAX_AGGREGATOR_SIZE, 1.4);
    const fresh = Math.min(this.target - this.created, Math.floor(size * (0.1 + 0.15 * rng.float())));
    const old = Math.min(size - fresh, this.ring.length);
    const page = this.aggregatorPage();
    this.pickIdStyle();
    // The page is re-crawled a few times; each listed account is captured on one of those visits.
    const visits: number[] = [];
    const visitCount = rng.range(1, 4);
    const [from, to] = this.activeWindow(120);
    for (let i = 0; i < visitCount; i++) visits.push(from + rng.int(to - from + 1));

    // A contiguous stretch of the ring holds distinct VPAs; selection sampling takes exactly `old` of them.
    // They are picked before any fresh VPA enters the ring and moves it.
    const ring = this.ring;
    const span = Math.min(ring.length, old * 3);
    const first = rng.int(ring.length - span + 1);
    const listed: string[] = [];
    for (let i = 0; listed.length < old; i++) {
      if (rng.float() * (span - i) < old - listed.length) {
        // Position 0 is the oldest entry: ring[0] until the ring fills, ring[ringNext] after.
        listed.push(ring[(this.ringNext - ring.length + first + i + RING_SIZE) % RING_SIZE]!);
      }
    }

    // Fresh VPAs are spread through the listing at random.
    let nextOld = 0;
    let addedFresh = 0;
    while (nextOld < old || addedFresh < fresh) {
      const freshLeft = fresh - addedFresh;
      let vpa: string;
      if (freshLeft > 0 && rng.float() * (freshLeft + old - nextOld) < freshLeft) {
        vpa = this.newVpa(SINGLETON_THEMES.sample(rng));
        addedFresh++;
      } else {
        vpa = listed[nextOld++]!;
        if (rng.chance(0.05)) vpa = caseVariant(vpa, rng);
      }
      const at = visits[rng.int(visitCount)]!;
      this.item(vpa, page, false, at, at);
    }
    this.report('aggregator', 'mixed', fresh, old + fresh);
  }

  // -- pages ----------------------------------------------------------------

  /** A page listing many VPAs: a deposit-id channel or list, or a complaint-forum thread. */
  private aggregatorPage(): Page {
    const rng = this.rng;
    if (rng.chance(0.4)) {
      if (rng.chance(0.5)) {
        const url = `https://t.me/${rng.pick(words.TELEGRAM_AGGREGATOR)}_${this.newPageNumber()}`;
        return this.page(url, SOURCE.telegram, RISK.mule, 0.4, false);
      }
      const url = `https://${rng.pick(words.GAMBLING_LIST_HOSTS)}/${rng.pick(words.AGGREGATOR_SLUGS)}/${this.newPageNumber()}`;
      return this.page(url, SOURCE.gambling, RISK.gambling, 0.3, false);
    }
    const host = rng.pick(words.COMPLAINT_HOSTS);
    const url = rng.chance(0.6)
      ? `https://${host}/threads/${rng.pick(words.AGGREGATOR_SLUGS)}.${this.newPageNumber()}/`
      : `https://www.${host}/${rng.pick(words.AGGREGATOR_SLUGS)}/${this.newPageNumber()}`;
    return this.page(url, SOURCE.scam, RISK.scam, 0.3, false);
  }

  private gangPages(theme: Theme, size: number): Page[] {
    const rng = this.rng;
    const pages: Page[] = [];
    let web = 1 + geometric(rng, theme === 'phishing' ? 0.45 : 0.4) + Math.floor(size / 60);
    let telegram = rng.chance(GANG_TELEGRAM[theme]) ? 1 + Math.floor(size / 120) + geometric(rng, 0.3) : 0;
    if (theme === 'mule') {
      // Mule herders recruit and route through channels; a betting deposit page is the exception.
      web = rng.chance(0.3) ? 1 : 0;
      telegram = Math.max(telegram, 1);
    }
    const total = Math.min(size, web + telegram);
    for (let i = 0; i < total; i++) {
      pages.push(i < web || telegram === 0 ? this.webPage(theme) : this.telegramPage(theme, false));
    }
    // Interleave so a channel is not always last in the chain of pages.
    for (let i = pages.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      const swap = pages[i]!;
      pages[i] = pages[j]!;
      pages[j] = swap;
    }
    return pages;
  }

  private singletonPage(theme: Theme): Page {
    return this.rng.chance(SINGLETON_TELEGRAM[theme]) ? this.telegramPage(theme, true) : this.webPage(theme);
  }

  private newPageNumber(): number {
    return ++this.pages;
  }

  private page(url: string, source: string, risk: string, riskChance: number, muleAware: boolean): Page {
    this.clusterUrls?.add(url);
    return { url, fields: `","url":"${url}${source}`, risk, riskChance, muleAware };
  }

  /**
   * A web page. Either the host carries the page number (`label<n>.<tld>`,
   * label ending in a letter, fixed path without digits or `?`) or the url
   * ends in `=<n>` after a query; both make the url unique.
   */
  private webPage(theme: Theme): Page {
    const rng = this.rng;
    const n = this.newPageNumber();
    const numberedHost = rng.chance(0.7);
    let www = rng.chance(0.25) ? 'www.' : '';
    switch (theme) {
      case 'gambling':
      case 'mule': {
        const label = gamblingLabel(rng, numberedHost);
        const tld = rng.pick(words.GAMBLING_TLDS);
        const url = numberedHost
          ? `https://${www}${label}${n}.${tld}${rng.pick(words.GAMBLING_PATHS)}`
          : `https://${www}${label}.${tld}${rng.pick(words.GAMBLING_QUERY_PATHS)}${n}`;
        return theme === 'mule'
          ? this.page(url, SOURCE.gambling, RISK.mule, 0.8, false)
          : this.page(url, SOURCE.gambling, RISK.gambling, 0.45, true);
      }
      case 'phishing': {
        const label = phishingLabel(rng);
        const tld = rng.pick(words.PHISHING_TLDS);
        // Free hosting gives a subdomain of its own; nobody puts www. in front of it.
        if (tld.includes('.') && tld !== 'co.in') www = '';
        const url = numberedHost
          ? `https://${www}${label}${n}.${tld}${rng.pick(words.PHISHING_PATHS)}`
          : `https://${www}${label}.${tld}${rng.pick(words.PHISHING_QUERY_PATHS)}${n}`;
        return this.page(url, SOURCE.phishing, RISK.phishing, 0.4, false);
      }
      case 'nbfc': {
        const lender = rng.pick(words.NBFC_NAMES);
        const word = rng.pick(words.NBFC_HOST_WORDS);
        const roll = rng.float();
        const label = roll < 0.4 ? `${lender}-${word}` : roll < 0.75 ? `${lender}${word}` : `${word}-${lender}`;
        const tld = rng.pick(words.SCAM_TLDS);
        const url = numberedHost
          ? `https://${www}${label}${n}.${tld}${rng.pick(words.NBFC_PATHS)}`
          : `https://${www}${label}.${tld}${rng.pick(words.SCAM_QUERY_PATHS)}${n}`;
        return this.page(url, SOURCE.scam, RISK.nbfc, 0.85, false);
      }
      case 'job':
      case 'investment':
      case 'loan': {
        const [stems, paths] =
          theme === 'job'
            ? [words.JOB_WORDS, words.JOB_PATHS]
            : theme === 'investment'
              ? [words.INVEST_WORDS, words.INVEST_PATHS]
              : [words.LOAN_WORDS, words.LOAN_PATHS];
        const label = `${rng.pick(stems)}${rng.pick(HOST_EXTRAS)}`;
        const tld = rng.pick(words.SCAM_TLDS);
        const url = numberedHost
          ? `https://${www}${label}${n}.${tld}${rng.pick(paths)}`
          : `https://${www}${label}.${tld}${rng.pick(words.SCAM_QUERY_PATHS)}${n}`;
        return this.page(url, SOURCE.scam, RISK.scam, 0.4, false);
      }
    }
  }

  /**
   * A Telegram channel, post or invite link. Channel names end in the page
   * number after a letter or `_`; invite links end in it at a fixed width.
   */
  private telegramPage(theme: Theme, allowPosts: boolean): Page {
    const rng = this.rng;
    const n = this.newPageNumber();
    let stems: readonly string[];
    let risk: string;
    let riskChance: number;
    let muleAware = false;
    switch (theme) {
      case 'gambling':
        [stems, risk, riskChance, muleAware] = [words.TELEGRAM_GAMBLING, RISK.gambling, 0.65, true];
        break;
      case 'mule':
        [stems, risk, riskChance] = [words.TELEGRAM_MULE, RISK.mule, 0.85];
        break;
      case 'phishing':
        [stems, risk, riskChance] = [words.TELEGRAM_PHISHING, RISK.phishing, 0.75];
        break;
      case 'job':
        [stems, risk, riskChance] = [words.TELEGRAM_JOB, RISK.scam, 0.35];
        break;
      case 'investment':
        [stems, risk, riskChance] = [words.TELEGRAM_INVEST, RISK.scam, 0.35];
        break;
      case 'loan':
        [stems, risk, riskChance] = [words.TELEGRAM_LOAN, RISK.scam, 0.35];
        break;
      case 'nbfc':
        [stems, risk, riskChance] = [words.TELEGRAM_LOAN, RISK.nbfc, 0.8];
        break;
    }
    const roll = rng.float();
    let url: string;
    if (roll < 0.07) {
      url = `https://t.me/+${rng.chars(INVITE_ALPHABET, 10)}${fixedBase62(n)}`;
    } else {
      const name = `${rng.pick(stems)}${rng.chance(0.6) ? '_' : ''}${n}`;
      url = allowPosts && roll < 0.4 ? `https://t.me/${name}/${rng.range(2, 48000)}` : `https://t.me/${name}`;
    }
    return this.page(url, SOURCE.telegram, risk, riskChance, muleAware);
  }

  // -- items ----------------------------------------------------------------

  private pickIdStyle(): void {
    // Evidence arrives from several collectors, each with its own id scheme.
    const roll = this.rng.float();
    this.idStyle = roll < 0.6 ? IdStyle.Counter : roll < 0.85 ? IdStyle.Uuid : IdStyle.Capture;
  }

  /** [from, to] for a cluster active up to `spanDays`, biased towards recent months. */
  private activeWindow(spanDays: number): [number, number] {
    const rng = this.rng;
    const from = this.windowStart + Math.floor((this.end - this.windowStart) * rng.float() ** 0.6);
    return [from, Math.min(this.end, from + rng.int(spanDays * DAY + 1))];
  }

  /** One evidence line for `vpa` on `page`, captured in [from, to]. */
  private item(vpa: string, page: Page, mule: boolean, from: number, to: number): void {
    const rng = this.rng;
    const counter = ++this.lines;
    let id: string;
    if (this.idStyle === IdStyle.Counter) {
      id = this.counterPrefix + counter;
    } else if (this.idStyle === IdStyle.Uuid) {
      // The first group is a bijection of the line counter, so ids cannot collide.
      const a = Math.imul(counter, 0x9e3779b1) >>> 0;
      const b = rng.uint32();
      const c = rng.uint32();
      const d = rng.uint32();
      id =
        hex4(a >>> 16) + hex4(a & 0xffff) + '-' + hex4(b >>> 16) + '-4' + hex3(b & 0xfff) + '-' + UUID_VARIANT[c >>> 30]! +
        hex3((c >>> 16) & 0xfff) + '-' + hex4(c & 0xffff) + hex4(d >>> 16) + hex4(d & 0xffff);
    } else {
      id = `cap-${counter.toString(36).padStart(7, '0')}`;
    }

    let risk = NO_RISK;
    if (mule && page.muleAware) {
      if (rng.chance(0.85)) risk = RISK.mule;
    } else if (rng.chance(page.riskChance)) {
      risk = page.risk;
    }

    let at = from + rng.int(to - from + 1);
    const zone = ZONES.sample(rng);
    const withMillis = rng.chance(0.2);
    if (!withMillis) at -= at % 1000;
    const stamp = this.stamps.format(at + zone.offsetMs, withMillis) + zone.label;

    const shotRoll = rng.float();
    const ending = shotRoll < 0.19 ? END_SHOT_TRUE : shotRoll < 0.6 ? END_SHOT_FALSE : END_NO_SHOT;

    const line = '{"evidence_id":"' + id + '","upi":"' + vpa + page.fields + risk + stamp + ending;
    if (this.used + line.length > this.chunkBytes) this.seal();
    this.used += latin1Write(this.chunk, line, this.used);
  }

  // -- VPAs -----------------------------------------------------------------

  /** A VPA not generated before (compared lower-cased); counts towards the target. */
  private newVpa(theme: Theme): string {
    const rng = this.rng;
    const shape = SHAPES_BY_THEME[theme].sample(rng);
    let vpa = this.candidate(shape);
    for (let attempt = 1; !this.seen.add(vpa); attempt++) {
      vpa = this.candidate(shape);
      if (attempt > 3) {
        // The shape's space is crowded (plain names run out first): add digits until it is new.
        const at = vpa.indexOf('@');
        vpa = `${vpa.slice(0, at)}${rng.int(10 ** Math.min(attempt, 12))}${vpa.slice(at)}`;
      }
    }
    this.created++;
    if (this.ring.length < RING_SIZE) this.ring.push(vpa);
    else this.ring[this.ringNext] = vpa;
    this.ringNext = (this.ringNext + 1) % RING_SIZE;
    return vpa;
  }

  private candidate(shape: Shape): string {
    const rng = this.rng;
    switch (shape) {
      case Shape.Mobile:
        return `${mobile(rng)}@${PERSONAL_PROVIDERS.sample(rng)}`;
      case Shape.MobileSuffix:
        return `${mobile(rng)}${rng.pick(MOBILE_SUFFIXES)}@${PERSONAL_PROVIDERS.sample(rng)}`;
      case Shape.Name:
        return `${nameHandle(rng)}@${PERSONAL_PROVIDERS.sample(rng)}`;
      case Shape.Merchant:
        return merchantVpa(rng);
      case Shape.Separated:
        return `${separatedHandle(rng)}@${PERSONAL_PROVIDERS.sample(rng)}`;
    }
  }
}

// ---------------------------------------------------------------------------
// Helpers

/**
 * Local wall-clock text for epoch-ms values without a Date per call: the
 * date part comes from a table covering the window (plus a day each side
 * for zone offsets), the time part from small digit tables.
 */
class StampFormatter {
  private readonly firstDay: number;
  private readonly days: string[] = [];

  constructor(from: number, to: number) {
    this.firstDay = Math.floor(from / DAY) - 1;
    const lastDay = Math.floor(to / DAY) + 1;
    for (let day = this.firstDay; day <= lastDay; day++) this.days.push(new Date(day * DAY).toISOString().slice(0, 11));
  }

  /** `YYYY-MM-DDTHH:MM:SS` or `…:SS.mmm`; the zone is the caller's. */
  format(localMs: number, withMillis: boolean): string {
    const day = Math.floor(localMs / DAY);
    return this.days[day - this.firstDay]! + formatClock(localMs - day * DAY, withMillis);
  }
}

const HEX1 = Array.from({ length: 16 }, (_, i) => i.toString(16));
const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const UUID_VARIANT = ['8', '9', 'a', 'b'];

function hex4(v: number): string {
  return HEX2[v >>> 8]! + HEX2[v & 0xff]!;
}

function hex3(v: number): string {
  return HEX1[v >>> 8]! + HEX2[v & 0xff]!;
}

type Latin1Writer = (target: Buffer, text: string, offset: number) => number;

/**
 * Buffer#latin1Write skips the encoding dispatch of Buffer#write, which is a
 * sixth of the generator's time; it is undocumented, so fall back when absent.
 */
const latin1Write: Latin1Writer =
  typeof (Buffer.prototype as { latin1Write?: unknown }).latin1Write === 'function'
    ? (target, text, offset) => (target as unknown as { latin1Write(t: string, o: number): number }).latin1Write(text, offset)
    : (target, text, offset) => target.write(text, offset, 'latin1');

/** Failures before the first success, each trial succeeding with probability p. */
function geometric(rng: Random, p: number): number {
  let n = 0;
  while (n < 20 && !rng.chance(p)) n++;
  return n;
}

/** 6 base-62 digits: fixed width keeps the value recoverable from the end of a string. */
function fixedBase62(n: number): string {
  // An odd multiplier not divisible by 31 permutes [0, 62^6), so the digits stop looking sequential.
  n = (n * 7_777_777 + 1_234_567) % 56_800_235_584;
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function mobile(rng: Random): string {
  return `${rng.range(6, 9)}${rng.digits(9)}`;
}

function nameHandle(rng: Random): string {
  const first = rng.pick(words.FIRST_NAMES);
  const last = rng.pick(words.LAST_NAMES);
  const roll = rng.float();
  if (roll < 0.17) return `${first}.${last}`;
  if (roll < 0.28) return `${first}${last}`;
  if (roll < 0.45) return `${first}${last}${rng.range(1, 9999)}`;
  if (roll < 0.55) return `${first}${rng.chance(0.6) ? rng.range(1970, 2006) : rng.digits(2)}`;
  if (roll < 0.63) return `${first}.${last}${rng.range(1, 99)}`;
  if (roll < 0.69) return `${first[0]}.${last}`;
  if (roll < 0.75) return `${first[0]}${rng.pick(words.FIRST_NAMES)[0]}.${last}`;
  if (roll < 0.8) return `${first[0]}${last[0]}${rng.digits(rng.range(3, 6))}`;
  if (roll < 0.86) return `${last}${first}`;
  if (roll < 0.9) return `${last}.${first}`;
  return `${first}${rng.pick(LUCKY_NUMBERS)}`;
}

function separatedHandle(rng: Random): string {
  const first = rng.pick(words.FIRST_NAMES);
  const roll = rng.float();
  if (roll < 0.3) return `${first}_${rng.pick(words.LAST_NAMES)}`;
  if (roll < 0.5) return `${first}-${rng.pick(words.LAST_NAMES)}${rng.range(1, 999)}`;
  if (roll < 0.7) return `${rng.pick(words.GAMBLING_WORDS)}_${rng.pick(words.GAMBLING_WORDS)}${rng.digits(2)}`;
  if (roll < 0.85) return `${first}_${rng.range(1, 99999)}`;
  return `pay-${rng.pick(words.GAMBLING_WORDS)}${rng.range(1, 999)}`;
}

function merchantVpa(rng: Random): string {
  const roll = rng.float();
  if (roll < 0.22) return `paytmqr281005050101${rng.digits(1)}${rng.chars(LOWER_ALNUM, rng.range(4, 6))}@paytm`;
  if (roll < 0.3) return `paytm-${rng.digits(8)}@paytm`;
  if (roll < 0.45) {
    const prefix = rng.chance(0.25) ? 'BHARATPE.' : 'bharatpe.';
    return `${prefix}${rng.range(6, 9)}${rng.digits(9)}@${BHARATPE_PROVIDERS.sample(rng)}`;
  }
  if (roll < 0.57) return `gpay-11${rng.digits(9)}@okbizaxis`;
  if (roll < 0.73) return `${rng.chance(0.3) ? 'Q' : 'q'}${rng.digits(9)}@ybl`;
  if (roll < 0.8) return `mab.0373${rng.digits(11)}@axisbank`;
  const shop = `${rng.pick(words.SHOP_WORDS)}${rng.pick(words.SHOP_WORDS)}${rng.pick(words.SHOP_KINDS)}`;
  return `${shop}${rng.chance(0.5) ? rng.range(1, 99) : ''}@${SHOP_PROVIDERS.sample(rng)}`;
}

function gamblingLabel(rng: Random, endInLetter: boolean): string {
  const a = rng.pick(words.GAMBLING_WORDS);
  const roll = rng.float();
  if (!endInLetter && roll < 0.35) return `${a}${rng.pick(GAMBLING_NUMBERS)}`;
  if (roll < 0.55) return `${a}${rng.pick(words.GAMBLING_WORDS)}${rng.pick(words.GAMBLING_SUFFIXES)}`;
  if (roll < 0.75) return `${a}${rng.pick(words.GAMBLING_SUFFIXES)}`;
  if (roll < 0.88) return `play${a}`;
  return `${a}-${rng.pick(words.GAMBLING_SUFFIXES)}`;
}

function phishingLabel(rng: Random): string {
  const brand = rng.pick(words.PHISHING_BRANDS);
  const word = rng.pick(words.PHISHING_WORDS);
  const roll = rng.float();
  if (roll < 0.35) return `${brand}-${word}`;
  if (roll < 0.6) return `${brand}${word}`;
  if (roll < 0.75) return `${word}-${brand}`;
  if (roll < 0.9) return `${brand}-${word}-${rng.pick(words.PHISHING_WORDS)}`;
  return `${brand}${word}online`;
}

/** The same VPA as a person or crawler might have typed it: upper-cased whole, in the provider, or capitalised. */
function caseVariant(vpa: string, rng: Random): string {
  const at = vpa.indexOf('@');
  const roll = rng.float();
  if (roll < 0.35) return vpa.toUpperCase();
  const c = vpa.charCodeAt(0);
  if (roll < 0.65 && c >= 97 && c <= 122) return vpa[0]!.toUpperCase() + vpa.slice(1);
  // Providers are generated lower-case, so this always changes something.
  return vpa.slice(0, at + 1) + (rng.chance(0.5) ? vpa.slice(at + 1).toUpperCase() : vpa[at + 1]!.toUpperCase() + vpa.slice(at + 2));
}
