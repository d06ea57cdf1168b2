import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import { subscribe } from '../common/listeners.js';
import { sharedArray } from '../engine/shared-arrays.js';

/**
 * One mirror version as the serving threads serve it (routes/mirror.ts):
 * the signed manifest's text, and every file it names, in the three
 * encodings a caller may ask for once compressed. The bodies are in shared memory, one copy
 * for every serving thread.
 */
export interface MirrorPublication {
  readonly version: number;
  /** GET /v1/mirror/manifest's body. */
  readonly manifest: string;
  /** GET /v1/mirror/public-key's body. */
  readonly publicKey: string;
  /** By path below /v1/mirror/: `full/<version>`, `diff/<from>/<version>`. */
  readonly files: ReadonlyMap<string, MirrorFileBodies>;
}

export interface MirrorFileBodies {
  /** The file's ETag, the same for each encoding but for its suffix. */
  readonly etag: string;
  readonly identity: Uint8Array;
  /** Null until compressed, moments after the version is served: the identity is served meanwhile. */
  readonly gzip: Uint8Array | null;
  readonly br: Uint8Array | null;
}

/**
 * Where a server's mirror versions come from: made here (MirrorKeeper,
 * embedded) or read from the store (fleet/store-mirror.ts, a follower).
 */
export interface MirrorPublications {
  /** The newest version, or null before the first. */
  readonly publication: MirrorPublication | null;
  /** Called with every version published; the function returned stops that. */
  onPublication(listener: (publication: MirrorPublication) => void): () => void;
  close(): void | Promise<void>;
}

/**
 * The version a server serves and who hears of each (MirrorKeeper, and a
 * follower's StoreMirror): a version is served at once, as it is, and
 * again once compressed, unless a newer one was served meanwhile.
 */
export class MirrorPublisher {
  #publication: MirrorPublication | null = null;
  readonly #listeners: ((publication: MirrorPublication) => void)[] = [];

  get publication(): MirrorPublication | null {
    return this.#publication;
  }

  onPublication(listener: (publication: MirrorPublication) => void): () => void {
    return subscribe(this.#listeners, listener);
  }

  /** Serve `publication`, then (unless `compress` is false) its compressed form; `closed` is asked after compressing (zlib's threads do that work). */
  async publish(publication: MirrorPublication, closed: () => boolean, compress = true): Promise<void> {
    this.#serve(publication);
    if (!compress) return;
    const compressed = await compressPublication(publication);
    if (!closed() && this.#publication === publication) this.#serve(compressed);
  }

  /** Nobody hears of versions from now on. */
  close(): void {
    this.#listeners.length = 0;
  }

  #serve(publication: MirrorPublication): void {
    this.#publication = publication;
    for (const listener of this.#listeners) listener(publication);
  }
}

/** The path of a full file below /v1/mirror/. */
export const fullPath = (version: number): string => `full/${version}`;
/** The path of a diff file below /v1/mirror/. */
export const diffPath = (from: number, to: number): string => `diff/${from}/${to}`;

/** A file's bodies before compression: its ETag names its path, so every server of a version gives the same. */
export function fileBodies(path: string, identity: Uint8Array): MirrorFileBodies {
  return { etag: `"${path.replace(/\//g, '-')}"`, identity: sharedBytes(identity), gzip: null, br: null };
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);
/** Brotli's quality for mirror files: most of their bytes are hash bits, so the higher qualities cost time for nothing. */
const BROTLI_QUALITY = 5;

/** The publication with every file in each encoding too, in shared memory (zlib's threads do the work). */
async function compressPublication(publication: MirrorPublication): Promise<MirrorPublication> {
  const files = new Map<string, MirrorFileBodies>();
  for (const [path, file] of publication.files) {
    const [gzipped, brotli] = await Promise.all([
      gzipAsync(file.identity),
      brotliAsync(file.identity, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: file.identity.length } }),
    ]);
    files.set(path, { ...file, gzip: sharedBytes(gzipped), br: sharedBytes(brotli) });
  }
  return { ...publication, files };
}

function sharedBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.buffer instanceof SharedArrayBuffer) return bytes;
  const copy = sharedArray(Uint8Array, bytes.length);
  copy.set(bytes);
  return copy;
}
