/**
 * Realistic VPAs for the micro-benchmarks, deterministic in their arguments:
 * payee handles of the shapes real VPAs take, distinct keys for an index,
 * keys drawn from a snapshot, and the letter case users type them in.
 */
import { NOT_FOUND } from '../../src/common/brand.js';
import type { KeyIndex } from '../../src/engine/key-index.js';
import { VpaIndex, type IndexArrays } from '../../src/engine/vpa-index.js';
import { formatClusterId } from '../../src/engine/verdict.js';

const PAYEE_PROVIDERS = ['ybl', 'okaxis', 'paytm', 'ibl', 'axl', 'apl', 'okicici', 'oksbi', 'okhdfcbank', 'upi', 'axisbank', 'kotak'];
const MOBILE_PROVIDERS = ['ybl', 'okaxis', 'paytm', 'ibl', 'axl', 'apl', 'okicici', 'oksbi', 'upi', 'yapl', 'ptyes', 'ptsbi'];
const NAMED_PROVIDERS = ['okhdfcbank', 'okicici', 'oksbi', 'okaxis', 'ybl', 'axisbank', 'icici', 'sbi', 'hdfcbank', 'kotak'];
const FIRST = ['rahul', 'priya', 'amit', 'sneha', 'vikram', 'anita', 'suresh', 'deepa', 'arjun', 'kavya', 'rohan', 'meera',
  'sanjay', 'pooja', 'karthik', 'lakshmi', 'manoj', 'divya', 'imran', 'fatima', 'gurpreet', 'harish', 'nisha', 'vijay'];
const LAST = ['sharma', 'verma', 'patel', 'reddy', 'iyer', 'nair', 'singh', 'khan', 'gupta', 'das', 'rao', 'joshi',
  'mehta', 'kulkarni', 'chopra', 'bose', 'pillai', 'shetty', 'yadav', 'mishra'];

/** A well-mixed uint32 of i (murmur3 finaliser), for per-item choices. */
export function mix(i: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function pick<T>(list: readonly T[], r: number): T {
  return list[r % list.length]!;
}

/**
 * A valid payee VPA: mobile numbers, name handles, merchant QR handles. Not
 * unique in i. The fake snapshot's keys are a word and a short base-36 id,
 * so these almost never collide with them; unknownVpas checks anyway.
 */
export function payeeVpa(i: number): string {
  const r = mix(i);
  const n = mix(i ^ 0x5bd1e995);
  const first = pick(FIRST, r >>> 8);
  const last = pick(LAST, r >>> 16);
  const provider = pick(PAYEE_PROVIDERS, r >>> 4);
  switch (r % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return `${6_000_000_000 + (n % 4_000_000_000)}@${provider}`;
    case 4:
      return `${first}.${last}${n % 10_000}@${provider}`;
    case 5:
      return `${first}${last}${n % 1000}@${provider}`;
    case 6:
      return `${first}_${n % 100_000}@${provider}`;
    case 7:
      return `${first}.${last}@${provider}`;
    case 8:
      return `paytmqr${n}${(r >>> 12).toString(36)}@paytm`;
    default:
      return `q${100_000_000 + (n % 900_000_000)}@ybl`;
  }
}

/**
 * The i-th of a set of distinct VPAs, as index keys: injective in i (mobile
 * handles are all digits and unique per i; named handles end in a number
 * unique per i), so ids beyond a key count give misses of the same shape.
 * Index bench figures depend on these exact strings.
 */
export function distinctVpa(i: number): string {
  const r = mix(i);
  if (r % 100 < 55) {
    // 48271 is coprime to 4e9, so the number is unique for i < 4e9.
    const mobile = 6_000_000_000 + ((i * 48271) % 4_000_000_000);
    return `${mobile}@${pick(MOBILE_PROVIDERS, r >>> 8)}`;
  }
  // 7919 is coprime to 1e8, so the suffix is unique for i < 1e8.
  const suffix = (i * 7919) % 100_000_000;
  const first = pick(FIRST, r >>> 8);
  const last = pick(LAST, r >>> 16);
  const provider = pick(NAMED_PROVIDERS, r >>> 4);
  switch ((r >>> 24) & 3) {
    case 0:
      return `${first}.${last}${suffix}@${provider}`;
    case 1:
      return `${first}${last}${suffix}@${provider}`;
    case 2:
      return `${first}_${suffix}@${provider}`;
    default:
      return `${first}.${last}.${suffix}@${provider}`;
  }
}

/** `vpa` as a user might type it: by r, one in `oneIn` upper-cased, one in `oneIn` capitalised, the rest as is. */
export function typedCase(vpa: string, r: number, oneIn = 10): string {
  const style = r % oneIn;
  return style === 0 ? vpa.toUpperCase() : style === 1 ? vpa[0]!.toUpperCase() + vpa.slice(1) : vpa;
}

/** Copies of `texts` decoded from bytes, as a request parser makes them: flat strings, never ropes. */
export function flatStrings(texts: readonly string[]): string[] {
  let total = 0;
  for (const text of texts) total += text.length;
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (const text of texts) at += buffer.write(text, at, 'latin1');
  const flat = new Array<string>(texts.length);
  at = 0;
  for (let i = 0; i < texts.length; i++) {
    const length = texts[i]!.length;
    flat[i] = buffer.toString('latin1', at, at + length);
    at += length;
  }
  return flat;
}

/** `count` keys of a snapshot at pseudo-random ids, case varied, as flat strings. */
export function knownVpas(data: IndexArrays, count: number, seed: number): string[] {
  const index = new VpaIndex(data);
  const vpas = new Array<string>(count);
  for (let n = 0; n < count; n++) {
    const r = mix(n * 2 + seed);
    vpas[n] = typedCase(index.keyOf(r % index.size), r >>> 8);
  }
  return flatStrings(vpas);
}

/** `count` payee VPAs that `index` does not hold, case varied, as flat strings. */
export function unknownVpas(index: Pick<KeyIndex, 'lookup'>, count: number, seed: number): string[] {
  const vpas: string[] = [];
  for (let i = seed * 1_000_003; vpas.length < count; i++) {
    const vpa = payeeVpa(i);
    if (index.lookup(vpa) === NOT_FOUND) vpas.push(typedCase(vpa, mix(~i)));
  }
  return flatStrings(vpas);
}

/** 0..length-1 in a shuffled order (Fisher-Yates driven by mix), so consecutive uses touch unrelated memory. */
export function shuffledOrder(length: number, seed: number): Uint32Array {
  const order = new Uint32Array(length);
  for (let i = 0; i < length; i++) order[i] = i;
  for (let i = length - 1; i > 0; i--) {
    const j = mix(i + seed) % (i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}

/** Up to `count` cluster ids of a snapshot in a shuffled order, so consecutive calls read unrelated parts of it. */
export function shuffledClusterIds(data: { readonly clusterNumber: Uint32Array }, count: number, seed: number): string[] {
  const numbers = data.clusterNumber;
  const order = shuffledOrder(numbers.length, seed);
  return Array.from(order.subarray(0, Math.min(count, order.length)), (ordinal) => formatClusterId(numbers[ordinal]!));
}
