/**
 * UpiRiskMirror: a local copy of the service's flagged set, kept current
 * from signed manifests and full or diff files (docs/client.md, "The local
 * mirror"). A payee the copy does not hold is answered CLEARED locally,
 * with no request; one it holds is sent to GET /v1/verify/upi for the full
 * verdict. A sync takes a new state only once the manifest's signature, the
 * file and the SHA-256 of the resulting set have all checked out; until
 * then, and after any failure, the state held goes on answering.
 */
import { raceAbort } from './abort.js';
import {
  UpiRiskClient,
  positive,
  transportConfig,
  type CallOptions,
  type UpiRiskClientOptions,
  type VerifyResult,
} from './client.js';
import { MirrorChecksumError, MirrorFileError, MirrorNotReadyError, MirrorReplayError, MirrorStorageError, NotFoundError, ResponseFormatError } from './errors.js';
import { MirrorDirectory } from './mirror-directory.js';
import {
  MIRROR_BANDS,
  MIRROR_KIND_DIFF,
  MIRROR_KIND_FULL,
  MIRROR_RISK_CATEGORIES,
  MirrorFormatError,
  applyMirrorDiff,
  decodeMirrorFile,
  encodeMirrorFile,
  packMeta,
  type MirrorEntries,
  type MirrorFile,
  type MirrorManifest,
} from './mirror-format.js';
import { MirrorState } from './mirror-state.js';
import { asFileError, checkEntrySet, checkSignature, importPublicKey, publicKeyBytes, readManifest } from './mirror-trust.js';
import { sendWithRetries, type CallScope, type TransportConfig } from './transport.js';
import { checkedVpa } from './vpa-check.js';
import { vpaHashWords } from './vpa-hash.js';

/** One attempt of a file download, ms: a full file of 10M entries is 90 MB. */
export const DEFAULT_DOWNLOAD_TIMEOUT_MS = 120_000;
/** A sync's limit, ms, every request, attempt and wait included. */
export const DEFAULT_SYNC_DEADLINE_MS = 300_000;

export interface UpiRiskMirrorOptions extends Omit<UpiRiskClientOptions, 'batchConcurrency'> {
  /**
   * The Ed25519 key that signs the manifests, base64 of its 32 raw bytes
   * (GET /v1/mirror/public-key), pinned in configuration: a manifest it did
   * not sign is refused.
   */
  readonly publicKey: string;
  /** Where the last verified state is kept across restarts (Node: node:fs). None by default: the state lives in memory only. */
  readonly directory?: string;
  /** One attempt of a file download, ms (120,000); `timeoutMs` bounds the other requests. */
  readonly downloadTimeoutMs?: number;
  /** A sync's limit, ms (300,000); per call with `deadlineMs`. `deadlineMs` is verify's. */
  readonly syncDeadlineMs?: number;
}

export type MirrorRiskCategory = (typeof MIRROR_RISK_CATEGORIES)[number];
export type MirrorBand = (typeof MIRROR_BANDS)[number];

/** What the mirror holds of a VPA: nothing, or its risk category and confidence band. */
export type MirrorCheck =
  | { readonly match: false }
  | { readonly match: true; readonly risk_category: MirrorRiskCategory; readonly confidence_band: MirrorBand };

export interface MirrorSyncResult {
  /** The version held after the sync. */
  readonly version: number;
  /** The version held before it; null when none was. */
  readonly previousVersion: number | null;
  /** What was applied: nothing (the version held is current), a diff from the version held, or a full file. */
  readonly applied: 'none' | 'diff' | 'full';
  /** Entries (flagged VPAs) held. */
  readonly count: number;
}

/** client.verify's result, with where it came from. */
export interface MirrorVerifyResult extends VerifyResult {
  /**
   * `mirror`: a CLEARED verdict made locally (no request: `requestId`,
   * `dataVersion` and `dataAsOf` are null); `service`: GET /v1/verify/upi's.
   */
  readonly answeredBy: 'mirror' | 'service';
  /** The mirror version consulted; null when none was held (the service answered). */
  readonly mirrorVersion: number | null;
}

const MISS: MirrorCheck = Object.freeze({ match: false });
/** The answer of a hit by its entry's byte, one shared object each, so check() allocates nothing. */
const HITS: readonly (MirrorCheck | undefined)[] = (() => {
  const hits = new Array<MirrorCheck | undefined>(256);
  MIRROR_RISK_CATEGORIES.forEach((risk_category, risk) => {
    MIRROR_BANDS.forEach((confidence_band, band) => {
      hits[packMeta(risk, band)] = Object.freeze({ match: true, risk_category, confidence_band });
    });
  });
  return hits;
})();
const MANIFEST_PATH = '/v1/mirror/manifest';
/** What a manifest's file URL may be: a path under the service's base URL, never another host. */
const FILE_PATH = /^\/v1\/[A-Za-z0-9._~/-]+$/;

export class UpiRiskMirror {
  readonly #client: UpiRiskClient;
  readonly #transport: TransportConfig;
  readonly #downloads: TransportConfig;
  readonly #syncDeadlineMs: number;
  readonly #publicKey: Uint8Array<ArrayBuffer>;
  #verifyKey: Promise<CryptoKey> | undefined;
  readonly #directory: MirrorDirectory | null;
  /** h(upi) of the VPA being checked, reused. */
  readonly #words = new Uint32Array(8);
  #state: MirrorState | null = null;
  /**
   * The newest version known to have been held, signed: the stored
   * manifest's, even when its entries could not be taken. No older
   * manifest is accepted after it, across restarts too.
   */
  #floor = 0;
  /** Syncs and loads, one after another. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The first read of the directory, once begun: first in the queue, so behind no sync. */
  #firstRead: Promise<void> | undefined;
  /** The directory could not be read (an I/O error): it is read again before the next sync, never by verify(). */
  #readAgain = false;

  constructor(options: UpiRiskMirrorOptions) {
    this.#transport = transportConfig(options);
    this.#client = new UpiRiskClient(options);
    this.#downloads = { ...this.#transport, timeoutMs: positive('downloadTimeoutMs', options.downloadTimeoutMs, DEFAULT_DOWNLOAD_TIMEOUT_MS) };
    this.#syncDeadlineMs = positive('syncDeadlineMs', options.syncDeadlineMs, DEFAULT_SYNC_DEADLINE_MS);
    this.#publicKey = publicKeyBytes(options.publicKey);
    if (options.directory !== undefined && (typeof options.directory !== 'string' || options.directory === '')) {
      throw new TypeError(`directory must be a non-empty path, got ${JSON.stringify(options.directory)}`);
    }
    this.#directory = options.directory === undefined ? null : new MirrorDirectory(options.directory);
  }

  /** The version held; null before the first sync or load. */
  get version(): number | null {
    return this.#state?.version ?? null;
  }

  /** Seconds since the held version's `created_at` (on the `now` clock); null when none is held. */
  get age(): number | null {
    const state = this.#state;
    return state === null ? null : (this.#transport.now() - state.createdAtMs) / 1000;
  }

  /**
   * What the held version says of `upi`, with no request. Throws
   * MirrorNotReadyError before the first sync or load (an empty mirror
   * would call every payee clear), TypeError or BadRequestError for a bad
   * VPA as verifyPrivately does.
   */
  check(upi: string): MirrorCheck {
    const state = this.#state;
    if (state === null) throw new MirrorNotReadyError('the mirror holds no version yet: sync() or load() first');
    return this.#lookup(state, checkedVpa(upi));
  }

  /**
   * A verdict in client.verify's shape: CLEARED from the mirror when it
   * does not hold `upi`, else GET /v1/verify/upi (whose verdict may be
   * CLEARED, for a VPA cleared since the version held). With no version
   * held (none stored in the directory, or a directory that could not be
   * read), the service answers every call. It never waits for a sync.
   */
  async verify(upi: string, options: CallOptions = {}): Promise<MirrorVerifyResult> {
    const vpa = checkedVpa(upi);
    await raceAbort(this.#readFirst(), options.signal);
    const state = this.#state;
    if (state !== null && !this.#lookup(state, vpa).match) return clearedByMirror(vpa, state.version);
    const result = await this.#client.verify(vpa, options);
    return { ...result, answeredBy: 'service', mirrorVersion: state?.version ?? null };
  }

  /**
   * Bring the mirror to the service's current version: fetch the manifest,
   * check its signature, then apply the diff from the version held when
   * the manifest lists one (a full file otherwise, or when the diff is no
   * longer kept), check the result against the manifest and take it (and
   * store it, with `directory`). Throws MirrorSignatureError,
   * MirrorReplayError (a manifest older than the version held),
   * MirrorFileError, MirrorChecksumError, MirrorStorageError or the
   * transport's errors; after any of them, the state held is unchanged.
   */
  async sync(options: CallOptions = {}): Promise<MirrorSyncResult> {
    const scope: CallScope = {
      deadline: this.#transport.now() + positive('deadlineMs', options.deadlineMs, this.#syncDeadlineMs),
      signal: options.signal,
    };
    await this.#readFirst();
    return this.#exclusive(async () => {
      const directory = this.#directory;
      if (this.#readAgain && directory !== null) await this.#loadStored(directory).catch(() => {});
      return this.#sync(scope);
    });
  }

  /**
   * Take the state stored in `directory`, checked as a sync checks it;
   * resolves to the version held after (a stored version older than the
   * one held is left alone), or null when none is stored or held. Throws
   * what sync() throws of a stored state that does not check out
   * (MirrorStorageError when the entry file it names is missing). sync()
   * and verify() read the directory once by themselves, ignoring such a
   * state (the next sync replaces it); load() is for seeing why, or for
   * check() answering before any sync.
   */
  async load(): Promise<number | null> {
    const directory = this.#directory;
    if (directory === null) throw new TypeError('load() reads the directory option, which this mirror was not given');
    const loading = this.#exclusive(() => this.#loadStored(directory));
    this.#firstRead ??= loading.then(
      () => {},
      () => {},
    );
    return loading;
  }

  #lookup(state: MirrorState, vpa: string): MirrorCheck {
    const words = vpaHashWords(vpa, this.#words);
    const index = state.find(words[0]!, words[1]!);
    return index < 0 ? MISS : HITS[state.entries.meta[index]!]!;
  }

  async #sync(scope: CallScope): Promise<MirrorSyncResult> {
    const held = this.#state;
    const manifestAnswer = await sendWithRetries(this.#transport, { method: 'GET', path: MANIFEST_PATH, idempotent: true, maxBytes: MAX_MANIFEST_BYTES }, scope);
    const manifest = readManifest(manifestAnswer.body);
    await checkSignature(await this.#key(), manifest);
    const floor = Math.max(held?.version ?? 0, this.#floor);
    if (manifest.version < floor) throw new MirrorReplayError(floor, manifest.version);
    if (held !== null && manifest.version === held.version) {
      return { version: held.version, previousVersion: held.version, applied: 'none', count: held.entries.count };
    }
    let built: { entries: MirrorEntries; fullFile: Uint8Array } | null = null;
    const diff = held === null ? undefined : manifest.diffs.find((d) => d.from === held.version);
    if (held !== null && diff !== undefined) {
      try {
        const bytes = await this.#download(diff, scope);
        built = await checkedSet(manifest, asFileError(() => applyMirrorDiff(held.entries, fileOfKind(MIRROR_KIND_DIFF, bytes))));
      } catch (error) {
        // A diff the service no longer keeps (404), or one that does not build the signed set (damaged on the
        // way, or by a cache): the full file is taken instead. Anything else ends the sync.
        if (!(error instanceof NotFoundError || error instanceof MirrorFileError || error instanceof MirrorChecksumError)) throw error;
      }
    }
    const applied = built === null ? 'full' : 'diff';
    if (built === null) {
      const bytes = await this.#download(manifest.full, scope);
      built = await checkedSet(manifest, asFileError(() => fileOfKind(MIRROR_KIND_FULL, bytes).entries));
    }
    const { entries, fullFile } = built;
    const state = new MirrorState(manifest, entries);
    await this.#directory?.write(manifest, fullFile);
    // The directory now holds this state: nothing older in it is worth reading again.
    this.#readAgain = false;
    this.#state = state;
    this.#floor = Math.max(this.#floor, state.version);
    return { version: state.version, previousVersion: held?.version ?? null, applied, count: entries.count };
  }

  /** A file the manifest names, its length checked against the manifest's. */
  async #download(file: MirrorManifest['full'], scope: CallScope): Promise<Uint8Array> {
    if (!FILE_PATH.test(file.url) || file.url.includes('..')) {
      throw new MirrorFileError('format', `the manifest names a file at ${JSON.stringify(file.url)}, not a path of the service`);
    }
    let answer;
    try {
      // No more than the manifest says, decompressed: a small compressed answer may unpack to any size.
      answer = await sendWithRetries(this.#downloads, { method: 'GET', path: file.url, idempotent: true, answer: 'bytes', maxBytes: file.bytes }, scope);
    } catch (error) {
      if (error instanceof ResponseFormatError) throw new MirrorFileError('format', `${file.url}: ${error.message}; the manifest says ${file.bytes} bytes`, { cause: error });
      throw error;
    }
    const bytes = answer.body as Uint8Array;
    if (bytes.length !== file.bytes) {
      const problem = bytes.length < file.bytes ? 'truncated' : 'format';
      throw new MirrorFileError(problem, `${file.url} is ${bytes.length} bytes, the manifest says ${file.bytes}`, { requestId: answer.meta.requestId });
    }
    return bytes;
  }

  /**
   * Take the stored state when it is newer than the one held. Notes in
   * #readAgain whether it was an I/O error that kept it from being read,
   * so that the next sync reads it again; a state that does not check out
   * (a missing entry file included) is not read again.
   */
  async #loadStored(directory: MirrorDirectory): Promise<number | null> {
    let stored;
    try {
      stored = await directory.read();
    } catch (error) {
      this.#readAgain = error instanceof MirrorStorageError;
      throw error;
    }
    this.#readAgain = false;
    const held = this.#state;
    if (stored === null || (held !== null && stored.manifest.version <= held.version)) return held?.version ?? null;
    await checkSignature(await this.#key(), stored.manifest);
    // Signed, so held once: whatever its entries turn out to be, no older version is taken after it.
    this.#floor = Math.max(this.#floor, stored.manifest.version);
    const file = stored.file;
    if (file === null) {
      this.#readAgain = stored.transient;
      throw stored.fileError;
    }
    const { entries } = asFileError(() => fileOfKind(MIRROR_KIND_FULL, file));
    // A full file that decodes is its entries written as encodeMirrorFile writes them.
    await checkEntrySet(stored.manifest, entries, file);
    this.#state = new MirrorState(stored.manifest, entries);
    return stored.manifest.version;
  }

  /**
   * The directory's state, read once, before the first sync or verify; one
   * that does not check out, or cannot be read, is ignored. Begun before
   * any sync is queued, so waiting for it never waits for a sync.
   */
  #readFirst(): Promise<void> {
    const directory = this.#directory;
    if (directory === null) return Promise.resolve();
    this.#firstRead ??= this.#exclusive(() => this.#loadStored(directory)).then(
      () => {},
      () => {},
    );
    return this.#firstRead;
  }

  #key(): Promise<CryptoKey> {
    this.#verifyKey ??= importPublicKey(this.#publicKey);
    return this.#verifyKey;
  }

  /** `work` once every sync or load begun before it is over. */
  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => {});
    return run;
  }
}

/** The most bytes a manifest may have: sixty diffs' entries are a few kilobytes. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

/** The entry set written as a full file, checked against what `manifest` signed (MirrorChecksumError). */
async function checkedSet(manifest: MirrorManifest, entries: MirrorEntries): Promise<{ entries: MirrorEntries; fullFile: Uint8Array }> {
  const fullFile = encodeMirrorFile(MIRROR_KIND_FULL, entries);
  await checkEntrySet(manifest, entries, fullFile);
  return { entries, fullFile };
}

/** decodeMirrorFile, refusing a file of the other kind. */
function fileOfKind(kind: MirrorFile['kind'], bytes: Uint8Array): MirrorFile {
  const file = decodeMirrorFile(bytes);
  if (file.kind !== kind) throw new MirrorFormatError('format', `a ${file.kind === MIRROR_KIND_FULL ? 'full' : 'diff'} file where a ${kind === MIRROR_KIND_FULL ? 'full' : 'diff'} file was named`);
  return file;
}

function clearedByMirror(upi: string, version: number): MirrorVerifyResult {
  return {
    verdict: {
      upi,
      status: 'CLEARED',
      confidence: null,
      risk_category: null,
      cluster_id: null,
      cluster_size: 0,
      first_seen: null,
      last_seen: null,
      sources: [],
      evidence_count: 0,
    },
    requestId: null,
    dataVersion: null,
    dataAsOf: null,
    answeredBy: 'mirror',
    mirrorVersion: version,
  };
}
