/**
 * Evidence files for the delta section (delta.ts), drawn from the snapshot a
 * server serves: small files of a few VPAs nobody has seen plus items for
 * known VPAs, and one large file of about as many new VPAs as known ones.
 * Evidence ids and urls carry a tag of the run, so they are new to any data
 * set; new VPAs come from distinctVpa (injective) and are checked against
 * the snapshot.
 */
import { writeFile } from 'node:fs/promises';
import { NOT_FOUND } from '../../src/common/brand.js';
import { SOURCE_CATEGORIES } from '../../src/vpa/categories.js';
import type { SnapshotView } from '../../src/engine/snapshot-view.js';
import { VpaIndex } from '../../src/engine/vpa-index.js';
import { mulberry32 } from '../../test/fixtures/random.js';
import { distinctVpa } from '../support/vpas.js';

/** distinctVpa ranges of the two kinds of new VPAs: apart, and below 1e8, where distinctVpa is injective. */
const LARGE_FIRST = 50_000_000;
const SMALL_FIRST = 60_000_000;
const DAY_MS = 86_400_000;

interface Line {
  readonly evidence_id: string;
  readonly upi: string;
  readonly url: string;
  readonly source_category: string;
  readonly captured_at: string;
  readonly screenshot_available?: boolean;
}

export interface SmallFile {
  readonly path: string;
  /** A VPA new in this file: served FLAGGED once the file is. */
  readonly newVpa: string;
  /** Every VPA the file names. */
  readonly vpas: readonly string[];
  readonly lines: number;
}

export interface LargeFile {
  readonly path: string;
  /** A VPA new in this file, from its last line. */
  readonly newVpa: string;
  readonly newVpas: readonly string[];
  /** Snapshot VPAs it brings evidence for. */
  readonly knownVpas: readonly string[];
  readonly lines: number;
}

/** What a small file holds: new VPAs (one item each, on a url of their own), items for known VPAs, items for VPAs earlier files added. */
export const SMALL_FILE = { newVpas: 3, knownItems: 10, againItems: 2 } as const;

export class DeltaEvidence {
  readonly #view: SnapshotView;
  readonly #index: VpaIndex;
  readonly #tag: string;
  readonly #random: () => number;
  #nextNew = SMALL_FIRST;
  #files = 0;
  /** New VPAs of the small files so far, for the items that come back to them. */
  readonly #added: string[] = [];

  constructor(view: SnapshotView, tag: string, seed = 11) {
    this.#view = view;
    this.#index = new VpaIndex(view.data, view.data.maxKeyLength);
    this.#tag = tag;
    this.#random = mulberry32(seed);
  }

  /** A snapshot VPA at random, lower-cased as stored. */
  knownVpa(): string {
    return this.#index.keyOf(Math.floor(this.#random() * this.#index.size));
  }

  /** `count` distinct snapshot VPAs at random. */
  knownVpas(count: number): string[] {
    const ids = new Set<number>();
    const size = this.#index.size;
    while (ids.size < Math.min(count, size)) ids.add(Math.floor(this.#random() * size));
    return [...ids].map((id) => this.#index.keyOf(id));
  }

  /** The next small file: SMALL_FILE's new VPAs, items for known VPAs and for VPAs added before. */
  async writeSmall(path: string): Promise<SmallFile> {
    const file = this.#files++;
    const now = Date.now();
    const lines: Line[] = [];
    const id = () => `bench-delta-${this.#tag}-${file}-${lines.length}`;
    const newVpas: string[] = [];
    const gang = `https://t.me/bench_delta_${this.#tag}_${file}`;
    for (let i = 0; i < SMALL_FILE.newVpas; i++) {
      const upi = this.#newVpa(() => this.#nextNew++);
      newVpas.push(upi);
      lines.push({ evidence_id: id(), upi, url: gang, source_category: 'telegram', captured_at: iso(now) });
    }
    const known: string[] = [];
    for (let i = 0; i < SMALL_FILE.knownItems; i++) {
      const upi = this.knownVpa();
      known.push(upi);
      lines.push(this.#itemFor(upi, id(), now));
    }
    const again: string[] = [];
    for (let i = 0; i < SMALL_FILE.againItems && this.#added.length > 0; i++) {
      const upi = this.#added[Math.floor(this.#random() * this.#added.length)]!;
      again.push(upi);
      lines.push({ evidence_id: id(), upi, url: `https://bench-delta.example/${this.#tag}/again/${file}/${i}`, source_category: this.#category(), captured_at: iso(now) });
    }
    this.#added.push(...newVpas);
    await writeFile(path, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    return { path, newVpa: newVpas[0]!, vpas: [...new Set([...newVpas, ...known, ...again])], lines: lines.length };
  }

  /**
   * One file of `vpas` VPAs, half new and half known, with 1.9 items a VPA
   * on average (as the demo data): new VPAs in gangs of eight on pages of
   * their own, known ones on their own pages and on others of the snapshot.
   */
  async writeLarge(path: string, vpas: number): Promise<LargeFile> {
    const now = Date.now();
    const newCount = Math.ceil(vpas / 2);
    let next = LARGE_FIRST;
    const newVpas = Array.from({ length: newCount }, () => this.#newVpa(() => next++));
    const knownVpas = this.knownVpas(vpas - newCount);
    const parts: string[] = [];
    let lines = 0;
    const push = (line: Line) => {
      parts.push(`${JSON.stringify(line)}\n`);
      lines++;
    };
    const id = () => `bench-delta-${this.#tag}-large-${lines}`;
    const extraItems = () => (this.#random() < 0.6 ? 1 : 0) + (this.#random() < 0.3 ? 1 : 0);
    knownVpas.forEach((upi) => {
      push(this.#itemFor(upi, id(), now));
      for (let k = extraItems(); k > 0; k--) push(this.#itemFor(upi, id(), now));
    });
    newVpas.forEach((upi, i) => {
      const captured = now - Math.floor(this.#random() * 30 * DAY_MS);
      push({ evidence_id: id(), upi, url: `https://bench-delta.example/${this.#tag}/gang/${i >> 3}`, source_category: this.#category(), captured_at: iso(captured) });
      for (let k = extraItems(); k > 0; k--) {
        const url = this.#random() < 0.5 ? this.#snapshotUrl() : `https://bench-delta.example/${this.#tag}/page/${i}/${k}`;
        push({ evidence_id: id(), upi, url, source_category: this.#category(), captured_at: iso(captured + k * 60_000), screenshot_available: this.#random() < 0.3 });
      }
    });
    await writeFile(path, parts.join(''));
    return { path, newVpa: newVpas.at(-1)!, newVpas, knownVpas, lines };
  }

  /** An item for a known VPA: on one of its pages (a later capture) or on another page of the snapshot. */
  #itemFor(upi: string, evidenceId: string, now: number): Line {
    const own = this.#random() < 0.5 ? this.#view.verdict(upi).sources[0]?.url : undefined;
    const url = own ?? this.#snapshotUrl();
    const captured = now - Math.floor(this.#random() * 30 * DAY_MS);
    return { evidence_id: evidenceId, upi, url, source_category: this.#category(), captured_at: iso(captured), screenshot_available: this.#random() < 0.3 };
  }

  #newVpa(nextIndex: () => number): string {
    for (;;) {
      const upi = distinctVpa(nextIndex());
      if (this.#index.lookup(upi) === NOT_FOUND) return upi;
    }
  }

  #snapshotUrl(): string {
    const data = this.#view.data;
    const u = Math.floor(this.#random() * data.meta.urlCount);
    return Buffer.from(data.urlBytes.buffer, data.urlBytes.byteOffset + data.urlOffsets[u]!, data.urlOffsets[u + 1]! - data.urlOffsets[u]!).toString('utf8');
  }

  #category(): string {
    return SOURCE_CATEGORIES[Math.floor(this.#random() * SOURCE_CATEGORIES.length)]!;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
