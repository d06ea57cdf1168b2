/**
 * A fake of the service's mirror and private lookup routes on a real HTTP
 * server (so the platform's fetch does the HTTP, decompression included):
 * versions of a flagged set of real VPAs, hashed with vpaHashWords,
 * published as full and diff files made with encodeMirrorFile, under
 * manifests signed with an Ed25519 key of its own. Hooks let a test play
 * the man in the middle: rewrite any answer, serve another manifest,
 * answer with an error.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import {
  MIRROR_BANDS,
  MIRROR_KIND_DIFF,
  MIRROR_KIND_FULL,
  MIRROR_RISK_CATEGORIES,
  comparePrefixes,
  emptyEntries,
  encodeMirrorFile,
  manifestSigningText,
  packMeta,
  setDigestBytes,
  type MirrorEntries,
  type MirrorManifest,
} from '../src/mirror-format.js';
import { vpaHashHex, vpaHashWords } from '../src/vpa-hash.js';
import { START_MS, cleared, flagged } from './fakes.js';

/** A deterministic source of [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` distinct VPAs of varied shapes and case, from `seed`. */
export function someVpas(count: number, seed: number): string[] {
  const random = seededRandom(seed);
  const providers = ['okaxis', 'ybl', 'paytm', 'OKSBI', 'ibl'];
  return Array.from({ length: count }, (_, i) => {
    const handle = ['payee', 'Merchant.Shop', 'user_', 'ring-'][i % 4]!;
    return `${handle}${i}.${Math.floor(random() * 1e6)}@${providers[i % providers.length]!}`;
  });
}

/** A flagged set: each VPA (lower-cased) with its entry byte. */
export type FlaggedSet = Map<string, number>;

/** Flag `share` of `vpas`, each with a category and band drawn from `seed`. */
export function flagSome(vpas: readonly string[], share: number, seed: number): FlaggedSet {
  const random = seededRandom(seed);
  const set: FlaggedSet = new Map();
  for (const upi of vpas) {
    if (random() < share) set.set(upi.toLowerCase(), randomMeta(random));
  }
  return set;
}

export function randomMeta(random: () => number): number {
  return packMeta(Math.floor(random() * MIRROR_RISK_CATEGORIES.length), Math.floor(random() * MIRROR_BANDS.length));
}

/** The entry set of a flagged set: 8-byte hash prefixes, sorted. */
export function entriesOf(set: FlaggedSet): MirrorEntries {
  const words = new Uint32Array(8);
  const rows = [...set].map(([upi, meta]) => {
    vpaHashWords(upi, words);
    return { hi: words[0]!, lo: words[1]!, meta };
  });
  rows.sort((a, b) => comparePrefixes(a.hi, a.lo, b.hi, b.lo));
  const entries = emptyEntries(rows.length);
  rows.forEach((row, i) => {
    entries.hi[i] = row.hi;
    entries.lo[i] = row.lo;
    entries.meta[i] = row.meta;
  });
  entries.count = rows.length;
  return entries;
}

/** The diff from `from` to `to`: entries added or changed, prefixes removed. */
export function diffFile(from: MirrorEntries, to: MirrorEntries): Uint8Array {
  const added = emptyEntries(to.count);
  const removed = { count: 0, hi: new Uint32Array(from.count), lo: new Uint32Array(from.count) };
  let f = 0;
  let t = 0;
  while (f < from.count || t < to.count) {
    const order = f >= from.count ? 1 : t >= to.count ? -1 : comparePrefixes(from.hi[f]!, from.lo[f]!, to.hi[t]!, to.lo[t]!);
    if (order < 0) {
      removed.hi[removed.count] = from.hi[f]!;
      removed.lo[removed.count++] = from.lo[f++]!;
    } else {
      if (order > 0 || from.meta[f] !== to.meta[t]) {
        added.hi[added.count] = to.hi[t]!;
        added.lo[added.count] = to.lo[t]!;
        added.meta[added.count++] = to.meta[t]!;
      }
      if (order === 0) f++;
      t++;
    }
  }
  return encodeMirrorFile(MIRROR_KIND_DIFF, added, removed);
}

export function sha256Of(entries: MirrorEntries): string {
  const hash = createHash('sha256');
  for (const chunk of setDigestBytes(entries, 1000)) hash.update(chunk);
  return hash.digest('hex');
}

/** The mirror's answer for a VPA of `set`, as check() gives it. */
export function expectedCheck(set: FlaggedSet, upi: string): unknown {
  const meta = set.get(upi.toLowerCase());
  if (meta === undefined) return { match: false };
  return { match: true, risk_category: MIRROR_RISK_CATEGORIES[meta >> 4], confidence_band: MIRROR_BANDS[meta & 15] };
}

export interface PublishedVersion {
  readonly version: number;
  readonly createdAt: string;
  readonly set: FlaggedSet;
  readonly entries: MirrorEntries;
}

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
}

/** An answer a test scripts in place of the service's. */
export interface ScriptedAnswer {
  readonly status: number;
  readonly body: unknown;
}

export function ed25519Keys(): { publicKey: string; privateKey: KeyObject } {
  const keys = generateKeyPairSync('ed25519');
  const x = keys.publicKey.export({ format: 'jwk' }).x!;
  return { publicKey: Buffer.from(x, 'base64url').toString('base64'), privateKey: keys.privateKey };
}

export const API_KEY = 'upirisk_mirror_test';
/** Padding entries of each range answer. */
export const RANGE_PADDING = 6;

export class FakeMirrorService {
  readonly keys = ed25519Keys();
  readonly versions: PublishedVersion[] = [];
  readonly requests: ReceivedRequest[] = [];
  /** Diffs listed in a manifest: from each of the last `diffsKept` versions. */
  diffsKept = 3;
  /** Compress files when the request accepts it. */
  compression: 'gzip' | 'br' | null = null;
  /** Answers sent compressed. */
  compressedAnswers = 0;
  /** Rewrites an answer's bytes on the way, by request path, like a man in the middle. */
  tamper: ((path: string, body: Buffer) => Buffer) | null = null;
  /** The manifest the route serves, in place of the latest version's. */
  manifestOverride: (() => MirrorManifest) | null = null;
  /** Answers for the next requests whose path starts with the key, in order. */
  readonly scripted = new Map<string, ScriptedAnswer[]>();
  #server: Server | null = null;
  readonly #sockets = new Set<Socket>();
  #paddingRandom = seededRandom(99);

  get latest(): PublishedVersion {
    return this.versions.at(-1)!;
  }

  /** A new version holding `set`, its version one above the last. */
  publish(set: FlaggedSet): PublishedVersion {
    const version = (this.versions.at(-1)?.version ?? 0) + 1;
    const published = { version, createdAt: new Date(START_MS + version * 3_600_000).toISOString(), set: new Map(set), entries: entriesOf(set) };
    this.versions.push(published);
    return published;
  }

  /** The manifest of `version` (the latest by default), signed with `signer` (the service's key by default). */
  manifest(version = this.latest.version, signer: KeyObject = this.keys.privateKey): MirrorManifest {
    const at = this.versions.findIndex((v) => v.version === version);
    const current = this.versions[at]!;
    const diffs = this.versions.slice(Math.max(0, at - this.diffsKept), at).map((from) => ({
      from: from.version,
      url: `/v1/mirror/diff/${from.version}/${version}`,
      bytes: diffFile(from.entries, current.entries).length,
    }));
    const unsigned = {
      version,
      created_at: current.createdAt,
      count: current.entries.count,
      sha256: sha256Of(current.entries),
      full: { url: `/v1/mirror/full/${version}`, bytes: encodeMirrorFile(MIRROR_KIND_FULL, current.entries).length },
      diffs,
    };
    return { ...unsigned, signature: signManifest(unsigned, signer) };
  }

  /** Every request to a path starting with `prefix`. */
  requestsTo(prefix: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.url.startsWith(prefix));
  }

  async listen(): Promise<string> {
    this.#server = createServer((request, response) => this.#serve(request, response));
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#server?.close();
    if (this.#server !== null) await once(this.#server, 'close');
  }

  #serve(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://fake');
    this.requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers });
    if (request.headers.authorization !== `Bearer ${API_KEY}`) return json(response, 401, { error: 'unauthorized', message: 'invalid API key' });
    for (const [prefix, answers] of this.scripted) {
      if (url.pathname.startsWith(prefix) && answers.length > 0) {
        const answer = answers.shift()!;
        return json(response, answer.status, answer.body);
      }
    }
    const path = url.pathname;
    let match: RegExpExecArray | null;
    if (path === '/v1/mirror/public-key') return json(response, 200, { public_key: this.keys.publicKey });
    if (path === '/v1/mirror/manifest') return this.#send(request, response, path, 'application/json', Buffer.from(JSON.stringify((this.manifestOverride ?? (() => this.manifest()))())));
    if ((match = /^\/v1\/mirror\/full\/(\d+)$/.exec(path)) !== null) {
      const version = this.versions.find((v) => v.version === Number(match![1]));
      if (version === undefined) return json(response, 404, { error: 'not_found', message: 'no such version' });
      return this.#send(request, response, path, 'application/octet-stream', Buffer.from(encodeMirrorFile(MIRROR_KIND_FULL, version.entries)));
    }
    if ((match = /^\/v1\/mirror\/diff\/(\d+)\/(\d+)$/.exec(path)) !== null) {
      const from = this.versions.find((v) => v.version === Number(match![1]));
      const to = this.versions.find((v) => v.version === Number(match![2]));
      if (from === undefined || to === undefined) return json(response, 404, { error: 'not_found', message: 'no such diff' });
      return this.#send(request, response, path, 'application/octet-stream', Buffer.from(diffFile(from.entries, to.entries)));
    }
    if ((match = /^\/v1\/verify\/upi\/range\/([0-9a-f]{5})$/.exec(path)) !== null) return json(response, 200, this.#range(match[1]!));
    if (path === '/v1/verify/upi') {
      const upi = url.searchParams.get('upi') ?? '';
      return json(response, 200, this.latest.set.has(upi.toLowerCase()) ? flagged(upi) : cleared(upi));
    }
    return json(response, 404, { error: 'not_found', message: 'no such path' });
  }

  /** The range answer of `prefix`: the latest version's flagged VPAs under it, among padding. */
  #range(prefix: string): unknown {
    const entries: unknown[] = [];
    for (const [upi, meta] of this.latest.set) {
      const hash = vpaHashHex(upi);
      if (!hash.startsWith(prefix)) continue;
      entries.push({ suffix: hash.slice(5), status: 'FLAGGED', risk_category: MIRROR_RISK_CATEGORIES[meta >> 4], confidence: 0.9, cluster_id: `MC-${Number.parseInt(hash.slice(0, 4), 16)}` });
    }
    for (let i = 0; i < RANGE_PADDING; i++) {
      const suffix = Array.from({ length: 59 }, () => Math.floor(this.#paddingRandom() * 16).toString(16)).join('');
      entries.push({ suffix, status: 'FLAGGED', risk_category: 'mule', confidence: 0.7, cluster_id: `MC-${900_000 + i}` });
    }
    entries.sort((a, b) => ((a as { suffix: string }).suffix < (b as { suffix: string }).suffix ? -1 : 1));
    return { prefix, data_version: `snap-${this.latest.version}`, entries };
  }

  #send(request: IncomingMessage, response: ServerResponse, path: string, type: string, body: Buffer): void {
    const sent = this.tamper === null ? body : this.tamper(path, body);
    const accepted = String(request.headers['accept-encoding'] ?? '');
    const headers: Record<string, string> = { 'content-type': type, 'x-request-id': `mirror-${this.requests.length}` };
    if (type === 'application/octet-stream' && this.compression !== null && accepted.includes(this.compression)) {
      headers['content-encoding'] = this.compression;
      this.compressedAnswers++;
      response.writeHead(200, headers).end(this.compression === 'gzip' ? gzipSync(sent) : brotliCompressSync(sent));
      return;
    }
    response.writeHead(200, headers).end(sent);
  }
}

export function signManifest(unsigned: Omit<MirrorManifest, 'signature'>, signer: KeyObject): string {
  return sign(null, Buffer.from(manifestSigningText(unsigned)), signer).toString('base64');
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `fake-${status}`, 'x-data-version': 'snap-test' }).end(JSON.stringify(body));
}
