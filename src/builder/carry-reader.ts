import { ByteInterner } from './byte-interner.js';
import { CarriedIds } from './carried-ids.js';
import { HOME_PARTITION, HOME_RETRACTED, NO_RECORD, type BuildCarry } from './carry.js';
import { FIXED_BYTES, RecordReader, RecordWriter, chunkAt, partitionOf, partitionOfBytes, recordEndAt, upiLengthAt } from './record-codec.js';
import { BLOCK_RECORDS, blockMayHold, vpaProbe, type BlockIndex } from './record-blocks.js';
import type { SkipRun } from './phases.js';
import { readSegment } from './spilled-segments.js';

/**
 * Reading a builder's carry (carry.ts) by evidence id and by VPA: what
 * corrections need, since a carried record keeps no id. An id's record is
 * found through BuildCarry.homes: the k-th record of records[p][q] belongs
 * to the k-th id of partition p whose home is q. Each call costs a pass
 * over the homes of the partitions involved, and reads only the blocks of
 * records that may hold the VPAs or ordinals asked for (record-blocks.ts).
 */

/** One carried record of a VPA, decoded. */
export interface CarriedItem {
  /** Its evidence id, when asked for (recordsOf `withIds`). */
  readonly id: string | null;
  readonly upi: string;
  readonly url: string;
  readonly capturedAt: number;
  /** record-codec.ts flags: source and risk category, screenshot. */
  readonly flags: number;
  readonly retracted: boolean;
  /** The record as record-codec.ts lays it out, its id dropped (as the delta merge takes records). */
  readonly record: Uint8Array;
}

function utf8(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Where an id's record is, when it has one: its id partition, VPA partition and place among that pair's records. */
interface Place {
  readonly p: number;
  readonly q: number;
  readonly ordinal: number;
}

/** The interned index of each id in its partition, -1 for an id never read. */
function indexesOf(carry: BuildCarry, ids: readonly string[]): { p: number; index: number }[] {
  const opened = new Map<number, CarriedIds>();
  try {
    return ids.map((id) => {
      const p = partitionOf(id, carry.partitions);
      let seen = opened.get(p);
      if (seen === undefined) {
        seen = CarriedIds.fromState(carry.seen[p]!);
        opened.set(p, seen);
      }
      const bytes = Buffer.from(id, 'utf8');
      return { p, index: seen.find(bytes, 0, bytes.length) };
    });
  } finally {
    for (const seen of opened.values()) seen.close();
  }
}

/**
 * Mark `ids` retracted (HOME_RETRACTED): their records stay, and builds
 * and recordsOf skip them. Returns how many were marked now (found, with a
 * record, not marked before).
 */
export function markRetracted(carry: BuildCarry, ids: readonly string[]): number {
  let marked = 0;
  for (const { p, index } of indexesOf(carry, ids)) {
    if (index < 0) continue;
    const homes = carry.homes[p]!;
    const home = homes[index]!;
    if (home === NO_RECORD || (home & HOME_RETRACTED) !== 0) continue;
    homes[index] = home | HOME_RETRACTED;
    marked++;
  }
  return marked;
}

/** Whether any carried item is marked retracted. */
function anyRetracted(carry: BuildCarry): boolean {
  for (const homes of carry.homes) for (let i = 0; i < homes.length; i++) if (homes[i] !== NO_RECORD && (homes[i]! & HOME_RETRACTED) !== 0) return true;
  return false;
}

/**
 * Per VPA partition q, the runs of an aggregation task's inputs (the
 * segments of records[p][q], p ascending) with the ordinals of retracted
 * records: AggregateTask.skip. Undefined when nothing is retracted.
 */
export function retractedOrdinals(carry: BuildCarry): SkipRun[][] | undefined {
  if (!anyRetracted(carry)) return undefined;
  const partitions = carry.partitions;
  const runs: SkipRun[][] = Array.from({ length: partitions }, () => []);
  for (let p = 0; p < partitions; p++) {
    const homes = carry.homes[p]!;
    const counts = new Uint32Array(partitions);
    const found: number[][] = Array.from({ length: partitions }, () => []);
    for (let i = 0; i < homes.length; i++) {
      const home = homes[i]!;
      if (home === NO_RECORD) continue;
      const q = home & HOME_PARTITION;
      if ((home & HOME_RETRACTED) !== 0) found[q]!.push(counts[q]!);
      counts[q]!++;
    }
    for (let q = 0; q < partitions; q++) runs[q]!.push({ inputs: carry.records[p]![q]!.length, ordinals: Uint32Array.from(found[q]!) });
  }
  return runs;
}

/**
 * A copy of the carried records of chunks from `fromChunk` on that count
 * (retracted ones left out), as records of a gathering are handed to a
 * delta merge. A pair's records are in chunk order, so a segment whose last
 * record comes before `fromChunk` is passed over, and of the others only the
 * blocks from about `fromChunk` on are read (from the file, for a spilled one).
 */
export function recordsFrom(carry: BuildCarry, fromChunk: number, index: BlockIndex): SharedArrayBuffer {
  // Copied out as they are read, so that what was read of a file goes with its segment.
  const out = new RecordWriter();
  const retracted = retractedOrdinals(carry);
  const none = new Uint32Array(0);
  for (let p = 0; p < carry.partitions; p++) {
    for (let q = 0; q < carry.partitions; q++) {
      const skip = retracted?.[q]![p]!.ordinals ?? none;
      let next = 0;
      let ordinal = 0;
      for (const segment of carry.records[p]![q]!) {
        if (segment.byteLength === 0) continue;
        const blocks = index.of(segment);
        const first = ordinal;
        ordinal += blocks.records;
        readSegment(segment, (range) => {
          const last = range(blocks.starts[blocks.blocks - 1]!, blocks.starts[blocks.blocks]!);
          let lastAt = 0;
          for (let r = (blocks.records - 1) % BLOCK_RECORDS; r > 0; r--) lastAt = recordEndAt(last, lastAt);
          if (chunkAt(last, lastAt) < fromChunk) return;
          // Blocks' first records are in chunk order: from the block before the first that begins at fromChunk or later.
          let lo = 0;
          let hi = blocks.blocks;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (chunkAt(range(blocks.starts[mid]!, blocks.starts[mid]! + 4), 0) < fromChunk) lo = mid + 1;
            else hi = mid;
          }
          const from = Math.max(0, lo - 1);
          const bytes = range(blocks.starts[from]!, segment.byteLength);
          let o = first + from * BLOCK_RECORDS;
          for (let at = 0; at < bytes.length; o++) {
            const end = recordEndAt(bytes, at);
            while (next < skip.length && skip[next]! < o) next++;
            if (chunkAt(bytes, at) >= fromChunk && !(next < skip.length && skip[next] === o)) out.appendRaw(bytes, at, end);
            at = end;
          }
        });
      }
    }
  }
  return out.finishShared();
}

/** The place of each id's record: null for an id never read or whose record was dropped. */
function placesOf(carry: BuildCarry, ids: readonly string[]): (Place | null)[] {
  const indexes = indexesOf(carry, ids);
  const places: (Place | null)[] = ids.map(() => null);
  for (let p = 0; p < carry.partitions; p++) {
    const wanted = indexes.map((x, i) => ({ ...x, i })).filter((x) => x.p === p && x.index >= 0).sort((a, b) => a.index - b.index);
    if (wanted.length === 0) continue;
    const homes = carry.homes[p]!;
    const counts = new Uint32Array(carry.partitions);
    let w = 0;
    for (let index = 0; index < homes.length && w < wanted.length; index++) {
      const home = homes[index]!;
      const q = home & HOME_PARTITION;
      while (w < wanted.length && wanted[w]!.index === index) {
        places[wanted[w]!.i] = home === NO_RECORD ? null : { p, q, ordinal: counts[q]! };
        w++;
      }
      if (home !== NO_RECORD) counts[q]!++;
    }
  }
  return places;
}

/** The VPA each stored id names (canonical form), by id; ids never read, or read after being retracted, are absent. */
export function locateIds(carry: BuildCarry, ids: readonly string[], index: BlockIndex): Map<string, string> {
  const places = placesOf(carry, ids);
  const found = new Map<string, string>();
  places.forEach((place, i) => {
    if (place === null) return;
    // The segment that holds the ordinal, then its block: only the records before it in that block are read.
    let ordinal = place.ordinal;
    for (const segment of carry.records[place.p]![place.q]!) {
      const blocks = index.of(segment);
      if (ordinal >= blocks.records) {
        ordinal -= blocks.records;
        continue;
      }
      // Only that block is read: a spilled segment is in a file.
      const b = Math.floor(ordinal / BLOCK_RECORDS);
      const bytes = readSegment(segment, (range) => range(blocks.starts[b]!, blocks.starts[b + 1]!));
      let at = 0;
      for (let skip = ordinal % BLOCK_RECORDS; skip > 0; skip--) at = recordEndAt(bytes, at);
      const upiLength = upiLengthAt(bytes, at);
      found.set(ids[i]!, utf8(bytes.subarray(at + FIXED_BYTES, at + FIXED_BYTES + upiLength)).toString('latin1'));
      return;
    }
  });
  return found;
}

/** A record found by recordsOf: where it is (in the bytes of its block) and its ordinal among its pair's records. */
interface Match {
  readonly segment: Uint8Array;
  readonly at: number;
  readonly ordinal: number;
  readonly key: number;
}

/** Past this many VPAs a block's filter passes nearly always, and reading every record is as quick. */
const MAX_FILTERED_VPAS = 64;

/**
 * The records of records[p][q] whose VPA is among `keys`: the blocks whose
 * filter may hold one of `probes` (every block past MAX_FILTERED_VPAS), each
 * in one tight pass over its bytes, a record told apart by the length of
 * its VPA before any hashing (the cost of a correction at scale:
 * bench/MEASUREMENTS.md).
 */
function matchingRecords(carry: BuildCarry, p: number, q: number, keys: ByteInterner, lengths: Uint8Array, probes: Uint32Array, index: BlockIndex): Match[] {
  const matches: Match[] = [];
  const filtered = probes.length <= MAX_FILTERED_VPAS;
  let first = 0;
  for (const segment of carry.records[p]![q]!) {
    const blocks = index.of(segment);
    // A segment's file is opened once for the blocks read of it.
    readSegment(segment, (range) => {
      for (let b = 0; b < blocks.blocks; b++) {
        if (filtered && !blockMayHold(blocks, b, probes)) continue;
        // The block alone: a view of a segment in memory, read from the file of a spilled one.
        const bytes = range(blocks.starts[b]!, blocks.starts[b + 1]!);
        const end = bytes.length;
        let at = 0;
        let ordinal = first + b * BLOCK_RECORDS;
        while (at < end) {
          const upiLength = upiLengthAt(bytes, at);
          const upiStart = at + FIXED_BYTES;
          if (lengths[upiLength] === 1) {
            const key = keys.find(bytes, upiStart, upiStart + upiLength);
            if (key >= 0) matches.push({ segment: bytes, at, ordinal, key });
          }
          at = recordEndAt(bytes, at);
          ordinal++;
        }
      }
    });
    first += blocks.records;
  }
  return matches;
}

/** The interned index in partition p of the records of pair (p, q) at `ordinals` (ascending). */
function indexesOfOrdinals(homes: Uint16Array, q: number, ordinals: readonly number[]): number[] {
  const indexes: number[] = [];
  let ordinal = 0;
  let w = 0;
  for (let index = 0; index < homes.length && w < ordinals.length; index++) {
    const home = homes[index]!;
    if (home === NO_RECORD || (home & HOME_PARTITION) !== q) continue;
    while (w < ordinals.length && ordinals[w] === ordinal) {
      indexes.push(index);
      w++;
    }
    ordinal++;
  }
  return indexes;
}

/**
 * Every carried record of the VPAs `upis` (canonical), retracted ones
 * marked, in ingestion order per VPA partition, of the chunks `inChunk`
 * accepts when given; with `withIds`, each with its evidence id.
 */
export function recordsOf(carry: BuildCarry, upis: ReadonlySet<string>, index: BlockIndex, withIds = false, inChunk?: (chunk: number) => boolean): Map<string, CarriedItem[]> {
  const result = new Map<string, CarriedItem[]>();
  const keys = new ByteInterner(Math.max(1, upis.size));
  const names: string[] = [];
  const partitionsWanted = new Set<number>();
  const lengths = new Uint8Array(65_536);
  const probes = new Uint32Array(upis.size);
  for (const upi of upis) {
    const bytes = Buffer.from(upi, 'latin1');
    const key = keys.intern(bytes, 0, bytes.length);
    names[key] = upi;
    probes[key] = vpaProbe(bytes, 0, bytes.length);
    partitionsWanted.add(partitionOfBytes(bytes, 0, bytes.length, carry.partitions));
    lengths[bytes.length] = 1;
  }
  for (let p = 0; p < carry.partitions; p++) {
    for (const q of partitionsWanted) {
      const matches = matchingRecords(carry, p, q, keys, lengths, probes, index).filter((m) => inChunk === undefined || inChunk(chunkAt(m.segment, m.at)));
      if (matches.length === 0) continue;
      // The id of each match, by one pass over the homes of p: whether it is retracted, and the id itself when asked for.
      const homes = carry.homes[p]!;
      const indexes = indexesOfOrdinals(homes, q, matches.map((m) => m.ordinal));
      const seen = withIds ? CarriedIds.fromState(carry.seen[p]!) : null;
      try {
        collectMatches(result, matches, indexes, homes, names, seen);
      } finally {
        seen?.close();
      }
    }
  }
  return result;
}

/** Each match decoded into `result`, by VPA: with its evidence id when `seen` is given. */
function collectMatches(result: Map<string, CarriedItem[]>, matches: readonly Match[], indexes: readonly number[], homes: Uint16Array, names: readonly string[], seen: CarriedIds | null): void {
  matches.forEach((match, i) => {
    const reader = new RecordReader(match.segment.buffer, match.segment.byteOffset + match.at);
    reader.next();
    const raw = reader.raw;
    const upi = names[match.key]!;
    const item: CarriedItem = {
      id: seen === null ? null : utf8(seen.bytesOf(indexes[i]!)).toString('utf8'),
      upi,
      url: utf8(raw.subarray(reader.urlStart, reader.idStart)).toString('utf8'),
      capturedAt: reader.capturedAt,
      flags: reader.flags,
      retracted: (homes[indexes[i]!]! & HOME_RETRACTED) !== 0,
      record: raw.slice(reader.rawStart, reader.rawEnd),
    };
    result.set(upi, [...(result.get(upi) ?? []), item]);
  });
}
